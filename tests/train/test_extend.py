"""Extending a finished run (``--resume`` with a larger ``train.steps``): the schedule becomes the one the new total
gives, as if the run had been started with it (:func:`synthformer.train.optim.extend_schedule`), the run says so in
one line, and the extension really trains (a cosine that had decayed to ``min_lr`` 0 used to stay at lr 0)."""

from __future__ import annotations

import json
import logging
import shutil

import pytest
import torch
from toymodels import CountingDataset, ToyLM, open_run, state_equal

from synthformer.train import TrainConfig, Trainer, seed_everything
from synthformer.train.optim import build_optimizer, build_scheduler, extend_schedule, lrs_for

BASE = dict(batch_size=4, lr=1e-2, warmup_steps=2, save_every=2, log_every=1, seed=3)
SCHEDULES = ("cosine", "inverse_sqrt", "rsqrt", "constant")


def make(run_dir, steps: int, schedule: str, *, resume: bool = False) -> Trainer:
    seed_everything(0 if not resume else 99)  # a resumed run's model starts elsewhere: the checkpoint decides
    return Trainer(ToyLM(dropout=0.2), CountingDataset(64), TrainConfig(steps=steps, schedule=schedule, **BASE),
                   open_run(run_dir, resume=resume), progress=False)


def trained(run_dir, steps: int, schedule: str, *, resume: bool = False) -> Trainer:
    trainer = make(run_dir, steps, schedule, resume=resume)
    trainer.train()
    trainer.close()
    return trainer


def eval_loss(model: torch.nn.Module) -> float:
    """The loss on a fixed set, without dropout: what the weights know."""
    data = CountingDataset(32, seed=7)
    batch = {k: torch.stack([data[i][k] for i in range(len(data))]) for k in ("input_ids", "labels")}
    model.eval()
    with torch.no_grad():
        return float(model(**batch)["loss"])


def logged(run_dir) -> dict[int, dict]:
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {d["step"]: d for d in lines if "loss" in d}


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_extending_a_finished_run_trains_and_says_how_in_one_line(tmp_path, caplog, schedule):
    run = tmp_path / "run"
    finished = trained(run, 10, schedule)
    before = {k: v.clone() for k, v in finished.model.state_dict().items()}
    with caplog.at_level(logging.WARNING, logger="synthformer"):
        extended = trained(run, 16, schedule, resume=True)
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("extending")]
    assert len(said) == 1 and "\n" not in said[0], said
    assert said[0].startswith("extending 10 -> 16 steps: ")
    assert ("rebuilt for 16 steps" if schedule == "cosine" else "does not depend on the total") in said[0]
    # the schedule of the extension is the one a 16-step run has from step 11 on (cosine: no longer 0)
    lines = logged(run)
    expected = lrs_for(TrainConfig(steps=16, schedule=schedule, **BASE), range(10, 16))
    assert [lines[s]["lr"] for s in range(11, 17)] == pytest.approx(expected, rel=1e-12)
    assert min(expected) > 0
    # and it trains: other weights, a lower loss than the finished run's
    assert not all(torch.equal(before[k], v) for k, v in extended.model.state_dict().items())
    finished.model.load_state_dict(before)
    assert eval_loss(extended.model) < eval_loss(finished.model)


def test_cosine_at_min_lr_0_is_rebuilt_from_the_rate_of_the_longer_schedule(tmp_path, caplog):
    run = tmp_path / "run"
    trained(run, 10, "cosine")
    assert logged(run)[10]["lr"] < 0.05 * BASE["lr"]  # the end of the decay (0 after the last step)
    with caplog.at_level(logging.WARNING, logger="synthformer"):
        trained(run, 20, "cosine", resume=True)
    peak = BASE["lr"]
    rate = lrs_for(TrainConfig(steps=20, schedule="cosine", **BASE), [10])[0]
    assert f"step 11 runs at lr {rate:.3g} (was 0), decaying to min_lr 0 at step 20" in caplog.text
    assert 0.4 * peak < rate < 0.6 * peak  # half-way down the stretched cosine


@pytest.mark.parametrize("schedule", ("cosine", "inverse_sqrt"))
def test_a_resume_of_the_extended_run_continues_it_bit_for_bit(tmp_path, caplog, schedule):
    trained(tmp_path / "a", 10, schedule)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    uninterrupted = trained(tmp_path / "a", 16, schedule, resume=True)
    killed = make(tmp_path / "b", 16, schedule, resume=True)
    killed.model.crash_at = 3  # step 13: the extension's checkpoint of step 12 holds the new total
    with pytest.raises(RuntimeError, match="simulated crash"):
        killed.train()
    killed.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="synthformer"):
        resumed = trained(tmp_path / "b", 16, schedule, resume=True)
    assert "extending" not in caplog.text  # nothing to extend: the checkpoint's schedule is the 16-step one
    assert state_equal(resumed.model, uninterrupted.model)


def _scheduler(schedule: str, steps: int, done: int):
    config = TrainConfig(steps=steps, schedule=schedule, lr=1e-2, warmup_steps=2, min_lr=1e-4)
    model = torch.nn.Linear(2, 2)
    scheduler = build_scheduler(build_optimizer(model, config), config)
    for _ in range(done):
        scheduler.optimizer.step()
        scheduler.step()
    return scheduler


def test_the_same_total_leaves_the_schedule_untouched():
    scheduler = _scheduler("cosine", 10, 6)
    state, lr = scheduler.state_dict(), scheduler.optimizer.param_groups[0]["lr"]
    assert extend_schedule(scheduler, 10, 6) is None
    assert scheduler.state_dict() == state and scheduler.optimizer.param_groups[0]["lr"] == lr
    assert extend_schedule(scheduler, 5, 6) is None  # already past the new total: nothing to train, nothing said


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_rate_after_a_new_total_is_the_new_schedules_and_the_line_says_it(schedule):
    scheduler = _scheduler(schedule, 10, 6)
    line = extend_schedule(scheduler, 8, 6)  # shortened
    config = TrainConfig(steps=8, schedule=schedule, lr=1e-2, warmup_steps=2, min_lr=1e-4)
    want = lrs_for(config, [6])[0]
    assert scheduler.optimizer.param_groups[0]["lr"] == pytest.approx(want) == scheduler.get_last_lr()[0]
    assert line.startswith("shortening 10 -> 8 steps: ") and f"step 7 runs at lr {want:.3g}" in line
    assert scheduler.state_dict()["lr_lambdas"][0]["total_steps"] == 8  # the next checkpoint holds the new total
    scheduler.optimizer.step()
    scheduler.step()
    assert scheduler.optimizer.param_groups[0]["lr"] == pytest.approx(lrs_for(config, [7])[0])
