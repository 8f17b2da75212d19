"""What ``init_from`` hands the trainer, pinned: the parameters bit for bit (a hash of the whole state dict) after
starting a tiny LM from a pretrained run, and after growing its ``V`` self-attention into ``R+V``; the record in
``init_from.json``, the log lines, and the errors of a bad ``init_from``.

The pretrained weights are overwritten with values computed in float64 from their position alone, so every number
of the state dict (the grown mixture's included: its new part starts at zero, its weights at a power of two) is the
same on every machine: the hashes were taken before the loading code was restructured and must not move.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from synthformer.common.config import ConfigError, from_dict
from synthformer.tasks import RunConfig, load_run, train_run

from .helpers import TINY_MODEL, lm_config

#: the state dict's hash after ``init_from`` (same model) and after growing ``V`` into ``R+V``
HASHES = {"V": "fa3e51e5befcfde02c4525b350ee27f4e7f6e02ed8b24e3340cc0075b64d18a3",
          "R+V": "295df407a98d130a56632cea35901d4e0b813759f0b70ce117ed9073d01d9d13"}


def _state_hash(state: dict[str, torch.Tensor]) -> str:
    """sha256 over every entry of ``state`` in name order: its name, dtype, shape and bytes."""
    h = hashlib.sha256()
    for name in sorted(state):
        t = state[name].detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{list(t.shape)}|".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def _positional(shape: torch.Size, offset: int) -> torch.Tensor:
    """Values in [-0.5, 0.5) from each entry's position (float64 arithmetic, then rounded once to float32)."""
    n = max(1, int(torch.tensor(shape).prod()))
    x = (torch.arange(n, dtype=torch.float64) + offset) * 0.6180339887498949
    return (x - x.floor() - 0.5).to(torch.float32).reshape(shape)


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory) -> Path:
    """A one-step LM run (self-attention V) whose checkpoint then holds the position-derived values."""
    tmp = tmp_path_factory.mktemp("pre")
    cfg = lm_config(tmp, steps=1, save_every=1, eval_every=0)
    cfg["model"] = {**TINY_MODEL, "decoder_kind": "V"}
    train_run(from_dict(RunConfig, cfg), tmp / "pre")
    file = load_run(tmp / "pre").checkpoint / "model.safetensors"
    weights = load_file(str(file))
    save_file({k: _positional(v.shape, 1000 * i) for i, (k, v) in enumerate(sorted(weights.items()))}, str(file))
    return tmp / "pre"


def _finetune(tmp: Path, pretrained: Path, kind: str, **task) -> RunConfig:
    cfg = lm_config(tmp, steps=1, save_every=1, eval_every=0)
    cfg["model"] = {**TINY_MODEL, "decoder_kind": kind}
    cfg["task"].pop("tokenizer")  # the pretrained run's
    cfg["task"].update(task)
    cfg["init_from"] = str(pretrained)
    return from_dict(RunConfig, cfg)


def _started(tmp: Path, run: RunConfig, caplog) -> tuple[str, list[str]]:
    """The hash of the state the trainer receives, and the init_from / grow log lines (paths as ``PRE``)."""
    seen = {}
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="synthformer.tasks.run"):
        train_run(run, tmp / "ft", on_trainer=lambda trainer: seen.update(h=_state_hash(trainer.model.state_dict())))
    pre = str(Path(run.init_from).resolve())
    lines = [f"{r.levelname} {r.getMessage()}".replace(pre, "PRE") for r in caplog.records
             if r.getMessage().startswith("init_from:")]
    return seen["h"], lines


def test_init_from_hands_the_trainer_the_pretrained_state_bit_for_bit(tmp_path, pretrained, caplog) -> None:
    digest, lines = _started(tmp_path, _finetune(tmp_path, pretrained, "V"), caplog)
    assert digest == HASHES["V"]
    assert lines == ["INFO init_from: 17 tensors from PRE/checkpoints/step_000001 (step 1); newly initialised: none"]
    record = json.loads((tmp_path / "ft" / "init_from.json").read_text())
    assert record == {"init_from": str(pretrained.resolve()), "checkpoint": f"{pretrained.resolve()}/checkpoints/"
                      "step_000001", "step": 1, "loaded_tensors": 17, "newly_initialised": []}


def test_overwriting_a_run_that_has_checkpoints_starts_it_from_the_pretrained_run(tmp_path, pretrained,
                                                                                 caplog) -> None:
    plain = _finetune(tmp_path, pretrained, "V")
    train_run(dataclasses.replace(plain, init_from=None), tmp_path / "ft")  # from random weights
    assert load_run(tmp_path / "ft").checkpoint is not None and not (tmp_path / "ft" / "init_from.json").exists()
    seen = {}
    train_run(plain, tmp_path / "ft", overwrite=True,
              on_trainer=lambda trainer: seen.update(h=_state_hash(trainer.model.state_dict())))
    assert seen["h"] == HASHES["V"]  # the pretrained state, not the old run's nor a fresh one
    assert json.loads((tmp_path / "ft" / "init_from.json").read_text())["loaded_tensors"] == 17


def test_growing_v_into_r_plus_v_hands_the_trainer_the_same_state_as_before(tmp_path, pretrained, caplog) -> None:
    digest, lines = _started(tmp_path, _finetune(tmp_path, pretrained, "R+V"), caplog)
    assert digest == HASHES["R+V"]
    new = "decoder.layers.0.self_attn.synth.alpha_logits, decoder.layers.0.self_attn.synth.parts.0.R"
    assert lines == [
        "INFO init_from: grew 1 self-attention layer(s) into mixtures: decoder.layers.0.self_attn",
        f"WARNING init_from: 2 parameter(s) newly initialised (not in the checkpoint): {new}",
        f"INFO init_from: 17 tensors from PRE/checkpoints/step_000001 (step 1); newly initialised: {new}",
    ]
    record = json.loads((tmp_path / "ft" / "init_from.json").read_text())
    assert record["newly_initialised"] == new.split(", ") and record["loaded_tensors"] == 17
    assert record["grown"] == {"decoder.layers.0.self_attn": {"kind": "R+V", "pretrained_part": "V"}}


def test_a_bad_init_from_is_refused_with_the_same_words(tmp_path, pretrained) -> None:
    missing = tmp_path / "no-such-run"
    with pytest.raises(ConfigError, match=f"^init_from: run directory not found: {re.escape(str(missing))}$"):
        train_run(_finetune(tmp_path, missing, "V"), tmp_path / "a")
    vocab = load_run(pretrained).model_config.vocab_size
    with pytest.raises(ConfigError, match=re.escape(
            f"task.vocab_size: 99, but init_from {pretrained.resolve()} has a vocabulary of {vocab} ids "
            "(leave task.vocab_size unset)")):
        train_run(_finetune(tmp_path, pretrained, "V", vocab_size=99), tmp_path / "b")
    with pytest.raises(ConfigError, match=re.escape(
            f"init_from: the model differs from the pretrained one in {pretrained.resolve()} (model.decoder_kind: "
            "pretrained 'V', this run 'D'); set these model settings as the pretrained run had them")):
        train_run(_finetune(tmp_path, pretrained, "D"), tmp_path / "c")
    # a checkpoint tensor of another shape than the model's (the configs agree): named with both shapes
    other, ckpt = tmp_path / "other", load_run(pretrained).checkpoint
    copy = other / "checkpoints" / ckpt.name
    copy.mkdir(parents=True)
    for item in pretrained.iterdir():
        if item.name != "checkpoints":
            (other / item.name).symlink_to(item)
    for item in ckpt.iterdir():
        if item.name != "model.safetensors":
            (copy / item.name).symlink_to(item)
    weights = load_file(str(ckpt / "model.safetensors"))
    name = next(k for k in sorted(weights) if k.endswith("qk.weight"))
    weights[name] = torch.zeros(weights[name].shape[0] + 1, *weights[name].shape[1:])
    save_file(weights, str(copy / "model.safetensors"))
    shape = list(load_run(pretrained).model.state_dict()[name].shape)
    with pytest.raises(ConfigError, match=re.escape(
            f"init_from: parameter shapes differ from {copy / 'model.safetensors'} "
            f"({name}: checkpoint {[shape[0] + 1, *shape[1:]]}, model {shape})")):
        train_run(_finetune(tmp_path, other, "V"), tmp_path / "d")
