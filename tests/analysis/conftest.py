"""Tiny trained runs shared by the analysis tests (trained once per session, ~1 s each), with the weights each
run started from, taken from the trainer before its first step."""

from __future__ import annotations

import pytest

from ..tasks.helpers import lm_config, seq2seq_config
from .runs import TinyRun, train_tiny


@pytest.fixture(scope="session")
def lm_run(tmp_path_factory) -> TinyRun:
    """A character LM with R+V attention (decoder only), seed 3 (not the default, so the seed is really read)."""
    tmp = tmp_path_factory.mktemp("lm")
    return train_tiny(tmp / "run", lm_config(tmp, seed=3, eval_every=0))


@pytest.fixture(scope="session")
def seq2seq_run(tmp_path_factory) -> TinyRun:
    """Digit reversal with a D encoder and an R decoder."""
    tmp = tmp_path_factory.mktemp("seq2seq")
    return train_tiny(tmp / "run", seq2seq_config(eval_every=0))
