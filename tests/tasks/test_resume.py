"""What may change on --resume: the global-batch rule for a run moved to another number of processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from synthformer.tasks import load_run_config, train_run
from synthformer.train import RunDir, RunError
from synthformer.train.resume import check_resumable_changes, same_global_batch
from tests.tasks.helpers import lm_config, write_yaml


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[RunDir, Path]:
    tmp = tmp_path_factory.mktemp("resume")
    cfg = write_yaml(tmp / "lm.yaml", lm_config(tmp, steps=3, eval_every=0))  # batch_size 8, one process
    train_run(load_run_config(cfg), tmp / "run")
    return RunDir(tmp / "run"), cfg


@pytest.mark.parametrize(("batch", "world", "same"), [(8, "1", True), (4, "2", True), (2, "4", True),
                                                      (4, "1", False), (8, "2", False)])
def test_a_batch_size_change_is_allowed_when_the_global_batch_stays(run, monkeypatch, batch, world, same) -> None:
    rd, cfg = run
    monkeypatch.setenv("WORLD_SIZE", world)
    saved = load_run_config(rd.config_path)
    current = load_run_config(cfg, [f"train.batch_size={batch}"])
    assert same_global_batch(rd, saved.train.batch_size, current.train.batch_size) is same


def test_a_batch_size_change_is_refused_otherwise_and_named(run) -> None:
    rd, _ = run
    with pytest.raises(RunError, match=r"with a changed config: train\.batch_size: 8 -> 4; .*batch_size x processes"):
        check_resumable_changes(rd, ["train.batch_size: 8 -> 4"], batch_ok=False)
    check_resumable_changes(rd, ["train.batch_size: 8 -> 4", "train.distributed: 'ddp' -> 'fsdp'"], batch_ok=True)
