"""Faults while a checkpoint is written: a full disk (``OSError(ENOSPC)``, before a call or after half a file) or
a ``SIGKILL`` at every step of :func:`save_checkpoint` (also of one that rotates old checkpoints out while
``checkpoints/best`` names one of them), and a torn last line of ``metrics.jsonl``.

Every fault must leave a loadable latest checkpoint holding exactly the weights of its step, every listed
checkpoint complete, and a run that saves (and resumes) again afterwards.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file
from torch import nn

from synthformer.cli.main import main
from synthformer.train import (
    RunDir,
    capture_rng_state,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
)
from synthformer.train import checkpoint as ckpt_mod
from synthformer.train.best import BestRecord, read_best
from synthformer.train.run import append_metrics
from tests.tasks.helpers import lm_config, write_yaml

from .long_runs import ROTATION_FAULTS

pytestmark = pytest.mark.usefixtures("restore_logging")

# The calls save_checkpoint makes that touch the disk, where a fault is injected. ``writer``: the index of the
# argument naming the file written (a full disk can also stop a write half-way).
POINTS: list[tuple[Any, str, int | None]] = [
    (ckpt_mod, "save_model", 1),
    (torch, "save", 1),
    (Path, "write_text", 0),
    (ckpt_mod, "_fsync_path", None),
    (os, "replace", None),
    (ckpt_mod, "atomic_write_text", None),
    (ckpt_mod, "_prune", None),
]
MODES = ("enospc", "half-written", "kill", "kill-half-written")


class Injector:
    """Wraps every point; records the calls in order and acts at call number ``at`` (None: never)."""

    def __init__(self, at: int | None = None, mode: str = "enospc") -> None:
        self.at, self.mode, self.calls = at, mode, []

    def wrap(self, name: str, real: Callable[..., Any], writer: int | None) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            if len(self.calls) - 1 != self.at:
                return real(*args, **kwargs)
            if "half" in self.mode:
                real(*args, **kwargs)
                path = Path(args[writer])
                os.truncate(path, path.stat().st_size // 2)  # the second half never reached the disk
            if "kill" in self.mode:
                os.kill(os.getpid(), signal.SIGKILL)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        return call


@contextmanager
def injected(injector: Injector) -> Iterator[None]:
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in POINTS]
    for (obj, name, writer), (_, _, real) in zip(POINTS, saved, strict=True):
        setattr(obj, name, injector.wrap(name, real, writer))
    try:
        yield
    finally:
        for obj, name, real in saved:
            setattr(obj, name, real)


def _model(seed: int) -> tuple[nn.Module, torch.optim.Optimizer, Any]:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    return model, opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)


def _save(run: Path, step: int, seed: int, keep: int = 2, best: int | None = None) -> None:
    """Save the model of ``seed`` as ``step``, keeping ``keep`` checkpoints (and the one ``best`` names: the step
    of the best so far, written as the new best when it is ``step``)."""
    model, opt, sched = _saved(seed)
    record = None if best is None else BestRecord(f"step_{best:06d}", "eval_loss", float(best), "min", best)
    save_checkpoint(run, step, model, optimizer=opt, scheduler=sched, rng_states=[capture_rng_state()],
                    trainer_state={"seed": seed}, max_checkpoints=keep, best=record)


@functools.cache  # saving only reads them: built once per seed, not once per save and per tensor checked
def _saved(seed: int) -> tuple[nn.Module, torch.optim.Optimizer, Any]:
    return _model(seed)


def _weights(seed: int) -> dict[str, torch.Tensor]:
    return _saved(seed)[0].state_dict()


def _check_intact(run: Path, allowed: dict[int, tuple[int, ...]]) -> int:
    """Every listed checkpoint loads and holds the weights saved for its step (``allowed``: step -> the seeds of
    the models that may have been saved there); return the latest step."""
    model, opt, sched = _model(99)  # every load replaces all of its state: one for all the checkpoints
    steps = {}
    for path in list_checkpoints(run):
        ckpt = load_checkpoint(path, model, optimizer=opt, scheduler=sched)
        assert ckpt.step in allowed, path
        loaded = model.state_dict()
        assert any(all(torch.equal(v, _weights(seed)[k]) for k, v in loaded.items()) for seed in allowed[ckpt.step])
        steps[path.resolve()] = ckpt.step
    latest = latest_checkpoint(run)
    assert latest is not None
    # loaded in full above when listed (not loaded twice); else loaded here
    return steps[latest.resolve()] if latest.resolve() in steps else load_checkpoint(latest).step


def _sequence(tmp: Path, step: int, base: Path) -> list[str]:
    run = tmp / "record"
    shutil.copytree(base, run)
    recorder = Injector()
    with injected(recorder):
        _save(run, step, seed=2)
    return recorder.calls


def _run_with_fault(run: Path, step: int, at: int, mode: str, save: Callable[[], None] | None = None) -> None:
    """Run ``save`` (default: step ``step`` of the model of seed 2) with the fault ``mode`` at call ``at``."""
    save = save or (lambda: _save(run, step, seed=2))
    injector = Injector(at, mode)
    if "kill" not in mode:
        with injected(injector), pytest.raises(OSError, match="No space left"):
            save()
        return
    pid = os.fork()
    if pid == 0:  # the child saves and dies at the fault
        code = 1
        try:
            with injected(injector):
                save()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


@pytest.mark.parametrize("resave", [False, True], ids=["new-step", "same-step-again"])
def test_a_fault_at_any_step_of_a_save_leaves_a_loadable_run(tmp_path: Path, resave: bool) -> None:
    step = 1 if resave else 2  # saving step 1 again happens when a run is resumed at its last checkpoint
    base = tmp_path / "base"  # step 1 saved: every case starts from a copy of it (one save, not one per case)
    _save(base, 1, seed=1)
    calls = _sequence(tmp_path, step, base)
    assert calls[0] == "save_model" and "replace" in calls and "atomic_write_text" in calls
    writers = _writers(calls)
    tried = 0
    for at in range(len(calls)):
        for mode in MODES:
            if "half" in mode and at not in writers:
                continue
            run = tmp_path / f"run-{at}-{mode}"
            shutil.copytree(base, run)
            _run_with_fault(run, step, at, mode)
            # re-saving step 1: the old or the new copy, whichever was in place when the fault struck
            latest = _check_intact(run, {1: (1, 2)} if resave else {1: (1,), 2: (2,)})
            assert latest in (1, step)
            _save(run, 3, seed=3)  # the run goes on: the next save works and sweeps what the fault left
            assert latest_checkpoint(run).name == "step_000003"
            leftovers = [p.name for p in (run / "checkpoints").iterdir() if p.name.startswith((".tmp-", ".old-"))]
            assert leftovers == [], (at, mode, leftovers)
            tried += 1
    assert tried == 2 * len(calls) + 2 * len(writers)  # half-written modes only where a file is written


def _writers(calls: list[str]) -> set[int]:
    return {i for i, name in enumerate(calls) if next(w for _, n, w in POINTS if n == name) is not None}


def _before_rotation(run: Path) -> None:
    """Checkpoints 1 (the best), 2 and 3, all kept."""
    for step in (1, 2, 3):
        _save(run, step, seed=step, keep=0, best=1)


def _rotate(run: Path, new_best: bool) -> None:
    """Step 4 saved keeping 1: rotation deletes 2 and 3, and 1 unless it stays the best (``new_best``: step 4 is)."""
    _save(run, 4, seed=4, keep=1, best=4 if new_best else 1)


def test_a_fault_at_any_call_of_a_rotating_save_keeps_what_latest_and_best_name(tmp_path: Path) -> None:
    before = tmp_path / "before"  # every case starts from a copy of it (three saves once, not per case)
    _before_rotation(before)
    tried = 0
    for new_best in (False, True):
        shutil.copytree(before, tmp_path / f"record-{new_best}")
        recorder = Injector()
        with injected(recorder):
            _rotate(tmp_path / f"record-{new_best}", new_best)
        calls = recorder.calls
        # the new checkpoint, the pointers (latest, best when new) and the pruning of 2 and 3 (and 1) move into place
        assert calls.count("replace") == 4 + 2 * new_best and calls[-1] == "replace"
        writers = _writers(calls)
        for at in range(len(calls)):
            for mode in MODES:
                if "half" in mode and at not in writers:
                    continue
                run = tmp_path / f"run-{new_best}-{at}-{mode}"
                shutil.copytree(before, run)
                _run_with_fault(run, 4, at, mode, functools.partial(_rotate, run, new_best))
                latest = _check_intact(run, {s: (s,) for s in (1, 2, 3, 4)})
                best = read_best(run / "checkpoints")
                assert best is not None and best.step in ((1, 4) if new_best else (1,)), (at, mode)
                assert best.checkpoint in [p.name for p in list_checkpoints(run)], (at, mode)
                assert latest in (3, 4)
                _save(run, 5, seed=5, keep=1, best=best.step)  # the run goes on and sweeps what the fault left
                assert [p.name for p in list_checkpoints(run)] == sorted({best.checkpoint, "step_000005"})
                assert not [p for p in (run / "checkpoints").iterdir() if p.name.startswith((".tmp-", ".old-"))]
                tried += 1
    assert tried == ROTATION_FAULTS, tried  # the count docs/reliability.md's "Long runs" table shows


# -- a real training: full disk and kill during a checkpoint, then --resume ------------------------------------------

_KILLER = """
import os, signal, sys
from synthformer.train import checkpoint
from synthformer.cli.main import main
real, calls = checkpoint.save_model, []
def save_model(*args, **kwargs):
    calls.append(1)
    result = real(*args, **kwargs)
    if len(calls) == 2:  # the checkpoint of step 4: weights written, the rest not yet
        os.kill(os.getpid(), signal.SIGKILL)
    return result
checkpoint.save_model = save_model
sys.exit(main(sys.argv[1:]))
"""


def final_weights(run: Path) -> dict[str, torch.Tensor]:
    return load_file(str(latest_checkpoint(run) / "model.safetensors"))


def disk_full_at_second_save(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Make the second ``save_model`` of the test fail as a full disk does (ENOSPC); returns the real function,
    to be put back before resuming."""
    real, calls = ckpt_mod.save_model, []

    def full_at_second_save(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(*args, **kwargs)

    monkeypatch.setattr(ckpt_mod, "save_model", full_at_second_save)
    return real


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> tuple[Path, dict[str, torch.Tensor]]:
    tmp = tmp_path_factory.mktemp("faults")
    cfg = write_yaml(tmp / "lm.yaml", lm_config(tmp, save_every=2, eval_every=0))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the tests that compare with it (the test-wide one-thread setting is per test)
    try:
        assert main(["train", str(cfg), "--run-dir", str(tmp / "whole"), "--no-progress", "-q"]) == 0
    finally:
        torch.set_num_threads(threads)
    return cfg, final_weights(tmp / "whole")


def _resume_and_compare(cfg: Path, run: Path, expected: dict[str, torch.Tensor], capsys) -> None:
    assert latest_checkpoint(run).name == "step_000002"  # the step-4 checkpoint never became visible
    assert main(["train", str(cfg), "--run-dir", str(run), "--resume", "--no-progress", "-q"]) == 0
    capsys.readouterr()
    got = final_weights(run)
    assert latest_checkpoint(run).name == "step_000006"
    assert got.keys() == expected.keys() and all(torch.equal(got[k], expected[k]) for k in got)
    lines = (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    assert all(isinstance(json.loads(line), dict) for line in lines)


def test_full_disk_during_a_training_checkpoint_fails_in_one_line_and_resumes_bit_identical(
        uninterrupted, tmp_path: Path, capsys, monkeypatch) -> None:
    cfg, expected = uninterrupted
    real = disk_full_at_second_save(monkeypatch)
    run = tmp_path / "run"
    assert main(["train", str(cfg), "--run-dir", str(run), "--no-progress", "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"synthformer train: error: [Errno 28] could not save the checkpoint of step 4 in {run}: No "
                   "space left on device; the previous checkpoint (step_000002) is intact; fix the cause and continue "
                   "with --resume"]
    monkeypatch.setattr(ckpt_mod, "save_model", real)
    _resume_and_compare(cfg, run, expected, capsys)


def test_a_kill_during_a_training_checkpoint_resumes_bit_identical(uninterrupted, tmp_path: Path,
                                                                   capsys) -> None:
    cfg, expected = uninterrupted
    run = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", _KILLER, "train", str(cfg), "--run-dir", str(run),
                           "--no-progress", "-q"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr
    _resume_and_compare(cfg, run, expected, capsys)


# -- metrics.jsonl -----------------------------------------------------------------------------------------------


def test_a_torn_last_metrics_line_is_skipped_with_a_warning_and_the_next_record_starts_a_new_line(
        tmp_path: Path, caplog) -> None:
    rd = RunDir(tmp_path)
    append_metrics(rd, {"step": 1, "loss": 2.5})
    append_metrics(rd, {"step": 2, "loss": 2.25})
    with open(rd.metrics_path, "ab") as fh:
        fh.write(b'{"step": 3, "lo')  # killed mid-write
    with caplog.at_level("WARNING"):
        assert rd.read_metrics() == [{"step": 1, "loss": 2.5}, {"step": 2, "loss": 2.25}]
    assert "metrics.jsonl:3: skipping a torn metrics record (last line" in caplog.text
    append_metrics(rd, {"step": 3, "loss": 2.0})  # the run goes on (e.g. an evaluation after a kill)
    caplog.clear()
    assert rd.read_metrics()[-1] == {"step": 3, "loss": 2.0}
    assert "metrics.jsonl:3: skipping" in caplog.text and "last line" not in caplog.text
    assert rd.metrics_path.read_text(encoding="utf-8").endswith('{"step": 3, "lo\n{"step": 3, "loss": 2.0}\n')
    assert RunDir(tmp_path / "none").read_metrics() == []
