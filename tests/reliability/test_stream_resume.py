"""Exact mid-epoch resume of the streamed data paths: a run cut short by a fault while checkpointing (a full disk
at its second checkpoint, the in-process form of the kill in test_faults.py) and resumed gives weights
bit-identical to an uninterrupted run, for an LM, span corruption and the text-to-text mixture read from a prepared
corpus, and for the text-to-text mixture drawn on the fly from examples in memory. Each run resumes in the middle
of an epoch and then crosses into the next one, where the order, the span noise and the mixture's examples
change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from synthformer.common.config import from_dict
from synthformer.tasks import RunConfig, train_run
from synthformer.train import checkpoint as ckpt_mod
from synthformer.train import latest_checkpoint
from tests.reliability.test_faults import disk_full_at_second_save, final_weights
from tests.tasks.helpers import t2t_config
from tests.tasks.test_prepared_training import make_corpus, make_t2t_corpus, prepared_config

#: 4 steps of batch 4 an epoch (16 to 18 examples): the checkpoint of step 5 is in the middle of epoch 1, and the
#: resumed run goes on into epoch 2 (step 9).
TRAIN = {"steps": 9, "batch_size": 4, "save_every": 5, "eval_every": 0, "log_every": 3}


def _config(kind: str, tmp: Path) -> dict[str, Any]:
    if kind.startswith("text_to_text"):  # RTE 20 and SST-2 32 examples, each capped at 8: 16 slots an epoch
        options = {"tasks": ["rte", "sst2"], "mixing_cap": 8}
        cfg = make_t2t_corpus(tmp, **options)[1] if kind.endswith("prepared") else t2t_config(tmp, options=options)
        cfg["train"].update(TRAIN)
        cfg["eval"]["train_decode_examples"] = 0
        return cfg
    # span corruption: 9 documents, 444 tokens, 19 pieces of 24, each with 4 noise tokens in 3 spans placed at
    # random (with 1 span the mask would not depend on the seed); LM: 6 documents, 296 tokens, 18 blocks of 16
    folder = make_corpus(tmp, kind, n_train=9 if kind == "span_corruption" else 6)
    cfg = prepared_config(folder, kind, **TRAIN)
    if kind == "span_corruption":
        cfg["task"]["options"]["mean_noise_span_length"] = 1.5
    return cfg


@pytest.mark.parametrize("kind", ["lm", "span_corruption", "text_to_text", "text_to_text-prepared"])
def test_a_streamed_run_cut_mid_epoch_resumes_bit_identical(kind: str, tmp_path: Path, monkeypatch) -> None:
    run = from_dict(RunConfig, _config(kind, tmp_path))
    train_set_len = []
    train_run(run, tmp_path / "whole", on_trainer=lambda t: train_set_len.append(t._stream.batches_per_epoch))
    assert train_set_len == [4]  # the layout the docstring promises
    expected = final_weights(tmp_path / "whole")

    real = disk_full_at_second_save(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        train_run(run, tmp_path / "cut")
    monkeypatch.setattr(ckpt_mod, "save_model", real)
    assert latest_checkpoint(tmp_path / "cut").name == "step_000005"
    train_run(run, tmp_path / "cut", resume=True)
    got = final_weights(tmp_path / "cut")
    assert got.keys() == expected.keys() and all(torch.equal(got[k], expected[k]) for k in got)
