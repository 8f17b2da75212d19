"""Checkpoints: tied weights, atomic writes, pruning, safe loading, RNG state."""

from __future__ import annotations

import os
import random
import stat
from pathlib import Path

import numpy as np
import pytest
import torch
from toymodels import ToyLM, state_equal

from synthformer.train import (
    CheckpointError,
    TrainConfig,
    build_optimizer,
    build_scheduler,
    capture_rng_state,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    load_model_weights,
    restore_rng_state,
    save_checkpoint,
)
from synthformer.train import checkpoint as ckpt_mod


def trained(seed: int = 0):
    torch.manual_seed(seed)
    model = ToyLM()
    cfg = TrainConfig(steps=10, lr=1e-2, warmup_steps=2)
    opt = build_optimizer(model, cfg)
    sched = build_scheduler(opt, cfg)
    for _ in range(2):
        ids = torch.randint(0, 16, (2, 5))
        model(input_ids=ids, labels=ids)["loss"].backward()
        opt.step()
        sched.step()
        opt.zero_grad()
    return model, opt, sched


def save(run, step, model, opt=None, sched=None, **kw):
    return save_checkpoint(run, step, model, optimizer=opt, scheduler=sched, rng_states=[capture_rng_state()],
                           trainer_state={"batches_consumed": step}, **kw)


def test_roundtrip_keeps_tied_weights_and_all_state(tmp_path):
    model, opt, sched = trained()
    path = save(tmp_path, 2, model, opt, sched)
    assert path == tmp_path / "checkpoints" / "step_000002"
    assert {p.name for p in path.iterdir()} == {
        "model.safetensors", "optimizer.pt", "scheduler.pt", "rng.pt", "trainer_state.json"}
    assert (tmp_path / "checkpoints" / "latest").read_text().strip() == "step_000002"

    fresh, opt2, sched2 = trained(seed=1)
    ck = load_checkpoint(tmp_path, fresh, optimizer=opt2, scheduler=sched2)
    assert ck.step == 2 and ck.trainer_state["batches_consumed"] == 2 and len(ck.rng_states) == 1
    assert state_equal(fresh, model)
    assert fresh.out.weight is fresh.emb.weight  # still tied after loading
    assert sched2.last_epoch == sched.last_epoch and sched2.get_last_lr() == sched.get_last_lr()
    s1, s2 = opt.state_dict()["state"], opt2.state_dict()["state"]
    assert all(torch.equal(s1[i]["exp_avg"], s2[i]["exp_avg"]) for i in s1)


def test_crash_half_way_through_a_save_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    model, opt, sched = trained()
    save(tmp_path, 1, model, opt, sched)
    expected = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        model.proj.weight.add_(1.0)  # the next save would hold different weights

    calls = []

    def crashing_save(obj, f, *args, **kwargs):
        calls.append(f)
        raise OSError("disk full (simulated)")  # model.safetensors is already written at this point

    monkeypatch.setattr(torch, "save", crashing_save)
    with pytest.raises(OSError, match="disk full"):
        save(tmp_path, 2, model, opt, sched)
    monkeypatch.undo()
    assert calls, "the save did not reach torch.save"

    assert latest_checkpoint(tmp_path).name == "step_000001"
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["latest", "step_000001"]  # no temp
    restored, opt2, sched2 = trained(seed=5)
    load_checkpoint(tmp_path, restored, optimizer=opt2, scheduler=sched2)
    assert all(torch.equal(restored.state_dict()[k], v) for k, v in expected.items())


def test_leftovers_of_a_hard_crash_are_ignored_and_cleaned(tmp_path):
    model, _, _ = trained()
    save(tmp_path, 1, model)
    root = tmp_path / "checkpoints"
    half = root / ".tmp-step_000002-abc"  # what a SIGKILL during a save leaves behind
    half.mkdir()
    (half / "model.safetensors").write_bytes(b"trunc")
    assert latest_checkpoint(tmp_path).name == "step_000001"
    save(tmp_path, 3, model)
    assert not half.exists()


def test_stale_latest_pointer_falls_back_to_newest_complete(tmp_path):
    model, _, _ = trained()
    save(tmp_path, 1, model)
    save(tmp_path, 2, model)
    (tmp_path / "checkpoints" / "latest").write_text("step_000009\n")
    assert latest_checkpoint(tmp_path).name == "step_000002"


def test_keeps_only_the_newest_checkpoints(tmp_path):
    model, _, _ = trained()
    for step in (1, 2, 3, 4, 5):
        save(tmp_path, step, model, max_checkpoints=2)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_000004", "step_000005"]
    save(tmp_path, 5, model, max_checkpoints=2)  # re-saving a step replaces it
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_000004", "step_000005"]


class _Payload:
    ran = False

    def __reduce__(self):
        return (_Payload._run, ())

    @staticmethod
    def _run():
        _Payload.ran = True
        return {}


def test_loading_uses_weights_only(tmp_path, monkeypatch):
    model, opt, sched = trained()
    path = save(tmp_path, 1, model, opt, sched)

    seen = []
    real_load = torch.load

    def spy(*args, **kwargs):
        seen.append(kwargs.get("weights_only"))
        return real_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy)
    load_checkpoint(path, trained(1)[0], optimizer=trained(1)[1], scheduler=trained(1)[2])
    assert seen == [True, True, True]  # optimizer, scheduler, rng
    monkeypatch.undo()

    # A tampered file holding a pickled callable is refused, and its code never runs.
    torch.save({"state": _Payload(), "param_groups": []}, path / "optimizer.pt")
    with pytest.raises(CheckpointError, match=r"optimizer\.pt: damaged or not a checkpoint file \(UnpicklingError"):
        load_checkpoint(path, trained(1)[0], optimizer=trained(1)[1])
    assert not _Payload.ran


def test_load_model_weights_from_a_run_dir(tmp_path):
    model, _, _ = trained()
    save(tmp_path, 4, model)
    other = trained(seed=3)[0]
    assert load_model_weights(tmp_path, other).name == "step_000004"
    assert state_equal(other, model)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        load_model_weights(tmp_path / "empty", other)


def test_rng_state_roundtrip_through_a_file(tmp_path):
    torch.manual_seed(1)
    random.seed(1)
    np.random.seed(1)
    np.random.randn()  # leaves a cached gaussian in numpy's state
    state = capture_rng_state()
    torch.save(state, tmp_path / "rng.pt")
    expected = (torch.rand(4), random.random(), np.random.randn(3))
    torch.rand(10), random.random(), np.random.rand(7)
    restore_rng_state(torch.load(tmp_path / "rng.pt", weights_only=True))
    got = (torch.rand(4), random.random(), np.random.randn(3))
    assert torch.equal(got[0], expected[0]) and got[1] == expected[1] and np.array_equal(got[2], expected[2])


def test_temporaries_use_the_same_parent(tmp_path, monkeypatch):
    # os.replace is only atomic within one file system: the temporary directory must sit next to the target.
    made = []
    real = ckpt_mod.tempfile.mkdtemp

    def spy(*args, **kwargs):
        made.append(kwargs["dir"])
        return real(*args, **kwargs)

    monkeypatch.setattr(ckpt_mod.tempfile, "mkdtemp", spy)
    save(tmp_path, 1, trained()[0])
    assert made == [tmp_path / "checkpoints"]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_atomic_writes_give_the_permissions_of_a_plain_open_and_mkdir(tmp_path: Path, umask: int) -> None:
    # mkstemp / mkdtemp create 0600 / 0700 entries; what is written by rename must be as readable as open()'s
    old = os.umask(umask)
    try:
        ckpt_mod.atomic_write_text(tmp_path / "report.md", "# report\n")
        with open(tmp_path / "plain.md", "w") as fh:
            fh.write("x")
        (tmp_path / "plain_dir").mkdir()
        final = save(tmp_path, 1, trained()[0])
    finally:
        os.umask(old)
    assert (tmp_path / "report.md").read_text() == "# report\n"
    mode = stat.S_IMODE((tmp_path / "report.md").stat().st_mode)
    assert mode == stat.S_IMODE((tmp_path / "plain.md").stat().st_mode) == 0o666 & ~umask
    dir_mode = stat.S_IMODE(final.stat().st_mode)
    assert dir_mode == stat.S_IMODE((tmp_path / "plain_dir").stat().st_mode) == 0o777 & ~umask
    # every file of the checkpoint, the weights included (safetensors writes 0600), as open() would give it
    modes = {f.name: stat.S_IMODE(f.stat().st_mode) for f in final.iterdir()}
    assert "model.safetensors" in modes and set(modes.values()) == {0o666 & ~umask}, modes


def test_two_saves_of_equal_weights_are_byte_identical(tmp_path):
    # safetensors keeps its header's metadata (the step, the tied names stored once) in a hash map whose order
    # changes between maps: before the header was put in order, 8 saves of one model gave 2 different files
    model = trained()[0]
    files = [save(tmp_path / f"run{i}", 3, model) / "model.safetensors" for i in range(8)]
    first = files[0].read_bytes()
    assert all(f.read_bytes() == first for f in files)
    loaded = ToyLM()
    load_model_weights(files[0].parent, loaded)
    assert state_equal(loaded, model) and loaded.out.weight is loaded.emb.weight
