"""Tiny trained runs shared by the analysis tests (trained once per session, ~1 s each), with the weights each
run started from, taken from the trainer before its first step."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from synthformer.tasks import train_run
from synthformer.tasks.config import RunConfig
from synthformer.train import from_dict

from ..tasks.helpers import lm_config, seq2seq_config


@dataclass
class TinyRun:
    """A trained run directory and the model weights it started from."""

    path: Path
    initial: dict[str, torch.Tensor]


def _train(path: Path, config: dict) -> TinyRun:
    initial: dict[str, torch.Tensor] = {}

    def grab(trainer) -> None:
        model = trainer.accelerator.unwrap_model(trainer.model)
        initial.update({k: v.detach().clone() for k, v in model.state_dict().items()})

    train_run(from_dict(RunConfig, config), path, on_trainer=grab)
    return TinyRun(path, initial)


@pytest.fixture(scope="session")
def lm_run(tmp_path_factory) -> TinyRun:
    """A character LM with R+V attention (decoder only), seed 3 (not the default, so the seed is really read)."""
    tmp = tmp_path_factory.mktemp("lm")
    return _train(tmp / "run", lm_config(tmp, seed=3, eval_every=0))


@pytest.fixture(scope="session")
def seq2seq_run(tmp_path_factory) -> TinyRun:
    """Digit reversal with a D encoder and an R decoder."""
    tmp = tmp_path_factory.mktemp("seq2seq")
    return _train(tmp / "run", seq2seq_config(eval_every=0))
