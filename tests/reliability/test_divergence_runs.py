"""Real runs that diverge slowly, no step a spike (the loss climbs at most a few times a step, every number finite):
``train.lr=5 train.warmup_steps=60`` and ``train.lr=2 train.grad_clip=0 train.warmup_steps=30`` on the tiny
character LM, and a run whose validation loss leaves its range first; and a real run at ``train.lr=1e30`` whose
checkpoint of step 2 holds finite weights that compute NaN. Each stops with one error line (exit status 2) that
names a checkpoint whose weights gave a finite loss in range, still on disk (or says there is none). The cases are
rows of docs/reliability.md's "Long runs" table (long_runs.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from synthformer.cli.main import main
from synthformer.train import list_checkpoints, load_checkpoint
from tests.tasks.helpers import lm_config, write_yaml

from .long_runs import cases
from .test_long_runs import finite_on_disk, intact

pytestmark = pytest.mark.usefixtures("restore_logging")

QUIET = ["--no-progress", "-q", "--threads", "1"]
SETTINGS = {
    "lr-5-warmup-60": ["train.lr=5", "train.warmup_steps=60"],
    "lr-2-no-clip": ["train.lr=2", "train.grad_clip=0", "train.warmup_steps=30"],
    "eval-out-of-range": ["train.lr=5", "train.warmup_steps=60", "train.eval_every=4", "train.eval_steps=0"],
}


def first_loss(run: Path) -> float:
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return next(x["loss"] for x in lines if "loss" in x and x["step"] == 1)


@pytest.mark.parametrize("case", cases("divergence"))
def test_a_slow_blow_up_stops_naming_a_good_checkpoint_still_on_disk(tmp_path, capsys, case):
    cfg = write_yaml(tmp_path / "lm.yaml", lm_config(tmp_path, steps=60, save_every=5, eval_every=0, log_every=1))
    run = tmp_path / "run"
    assert main(["train", str(cfg), *SETTINGS[case], "--run-dir", str(run), *QUIET]) == 2
    err = capsys.readouterr().err
    last = err.rstrip("\n").splitlines()[-1]
    assert "Traceback" not in err and last.startswith("synthformer train: error: step "), err
    what = "the validation loss" if case == "eval-out-of-range" else "the mean training loss of the last 10"
    assert f": {what}" in last and "the run diverges; nothing was saved from it" in last, last
    named = re.search(r"the (?:checkpoint to go back to|last good checkpoint) is (\S+) \(training loss ([0-9.]+)\)",
                      last)
    assert named, last
    path = Path(named.group(1))
    on_disk = list_checkpoints(run)
    assert path in on_disk and path != on_disk[-1], (path, on_disk)  # older than the blown-up ones, kept
    # its weights gave a loss below the untrained model's; every checkpoint newer than it gave more
    record = load_checkpoint(run).trainer_state["checkpoint_losses"]["checkpoints"]
    assert record[path.name]["train"] == pytest.approx(float(named.group(2)), rel=1e-3)
    best = record[path.name]["train"]
    assert best < first_loss(run)
    assert all(v["train"] > best for name, v in record.items() if name > path.name and "train" in v)
    assert finite_on_disk(run)
    intact(run)


@pytest.mark.parametrize("case", cases("garbage-checkpoint")[:1])
def test_a_checkpoint_of_finite_weights_that_compute_nan_is_not_called_good(tmp_path, capsys, case):
    cfg = write_yaml(tmp_path / "lm.yaml", lm_config(tmp_path, steps=10, save_every=2, eval_every=0))
    run = tmp_path / "run"
    assert main(["train", str(cfg), "train.lr=1e30", "train.warmup_steps=10", "--run-dir", str(run), *QUIET]) == 2
    last = capsys.readouterr().err.rstrip("\n").splitlines()[-1]
    assert last.startswith("synthformer train: error: step 3: the loss is nan"), last
    # step 2's weights are finite (so they were saved) but gave the NaN of step 3: no checkpoint is good
    assert [p.name for p in list_checkpoints(run)] == ["step_000002"] and finite_on_disk(run)
    assert "no checkpoint is good: step_000002 and any older one hold weights whose loss was not finite" in last
    assert "the last good checkpoint" not in last and "train.nonfinite=skip" not in last
