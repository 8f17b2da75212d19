"""Training a tiny run for the analysis tests, with the weights it started from (taken from the trainer before its
first step)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from synthformer.common.config import from_dict
from synthformer.tasks import RunConfig, train_run


@dataclass
class TinyRun:
    """A trained run directory and the model weights it started from."""

    path: Path
    initial: dict[str, torch.Tensor]


def train_tiny(path: Path, config: dict) -> TinyRun:
    """Train ``config`` (a dict of tests/tasks/helpers.py) into ``path``."""
    initial: dict[str, torch.Tensor] = {}

    def grab(trainer) -> None:
        model = trainer.accelerator.unwrap_model(trainer.model)
        initial.update({k: v.detach().clone() for k, v in model.state_dict().items()})

    train_run(from_dict(RunConfig, config), path, on_trainer=grab)
    return TinyRun(path, initial)
