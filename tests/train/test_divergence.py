"""Slow divergence (:mod:`synthformer.train.divergence`): the rule on constructed losses, which checkpoints are good
and which rotation keeps, and toy runs whose loss ramps up late (stopped, and with the check off: the best
checkpoint is on disk either way) or turns NaN right after a checkpoint (which is then not called good)."""

from __future__ import annotations

import math

import pytest
import torch
from toymodels import CountingDataset, ToyLM, open_run

from synthformer.common.config import ConfigError
from synthformer.train import (
    TrainConfig,
    Trainer,
    TrainingFailed,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
    seed_everything,
)
from synthformer.train.checkpoint_losses import CheckpointLosses, go_back_to, good_checkpoints, guarded
from synthformer.train.divergence import DivergenceWatch
from synthformer.train.spikes import LossReference
from tests.reliability.long_runs import cases

BASE = dict(steps=24, batch_size=4, lr=1e-2, grad_accum=2, warmup_steps=3, save_every=2, log_every=2, seed=3,
            max_checkpoints=2)


# -- the rule ---------------------------------------------------------------------------------------------------------


class Fed(DivergenceWatch):
    """The rule fed as the trainer feeds it: the spike check's reference accepts each applied loss first."""

    def __init__(self, factor: float, window: int) -> None:
        super().__init__(factor, window, LossReference(factor=10.0, window=100))

    def accept(self, loss: float) -> str | None:
        self.reference.accept(loss)
        return super().accept(loss)


def test_the_window_mean_against_the_first_loss_decides():
    watch = Fed(factor=3.0, window=4)
    assert [watch.accept(x) for x in (2.0, 1.0, 0.5, 0.1)] == [None] * 4  # a converging run
    assert watch.accept(0.05) is None and watch.range == 2.0
    # one hard batch far above the others is no divergence (the spike check's job): the mean stays below 6
    assert watch.accept(20.0) is None
    watch = Fed(factor=3.0, window=4)
    assert [watch.accept(x) for x in (2.0, 3.0, 5.0)] == [None] * 3  # the window is not full yet
    why = watch.accept(16.5)
    assert why == "the mean training loss of the last 4 applied steps, 6.625, is 3.31 times the run's range 2"
    assert Fed(factor=0, window=1).accept(1e30) is None  # 0 turns the check off


def test_a_validation_loss_out_of_range_or_not_finite_diverges_and_the_best_joins_the_range():
    watch = Fed(factor=3.0, window=2)
    watch.accept(1.0)
    assert watch.evaluated(2.5) is None and watch.range == 2.5  # above the first loss: the range is the best eval
    assert watch.evaluated(2.0) is None and watch.range == 2.0
    assert watch.evaluated(6.5) == "the validation loss 6.5 is 3.25 times the run's range 2"
    assert watch.evaluated(float("nan")) == "the validation loss is nan"
    off = Fed(factor=0, window=2)
    assert off.evaluated(float("nan")) is None and off.evaluated(1e9) is None


def test_the_rule_resumes_where_it_stood():
    watch = Fed(factor=3.0, window=3)
    for x in (4.0, 3.0, 2.0, 1.0):
        watch.accept(x)
    watch.evaluated(1.5)
    saved = {**watch.reference.state(), **watch.state()}  # a checkpoint holds both
    reference = LossReference(factor=10.0, window=100)
    again = DivergenceWatch(factor=3.0, window=3, reference=reference)
    reference.resume(saved)
    again.resume(saved)
    assert (again.first, list(again.recent), again.best_eval) == (4.0, [3.0, 2.0, 1.0], 1.5)
    # a checkpoint of an earlier version: the first loss is the spike check's, the window starts afresh
    reference = LossReference(factor=10.0, window=100)
    older = DivergenceWatch(factor=3.0, window=3, reference=reference)
    earlier = {"loss_reference": {"first": 4.0, "recent": [1.0]}}
    reference.resume(earlier)
    older.resume(earlier)
    assert older.first == 4.0 and not older.recent


def _record(*losses: tuple[float | None, float | None], latest: dict | None = None) -> dict:
    """A record of checkpoints at steps 2, 4, ... with these (training, validation) losses and the run's latest
    levels."""
    checkpoints = {f"step_{2 * i + 2:06d}": {k: v for k, v in (("train", t), ("eval", e)) if v is not None}
                   for i, (t, e) in enumerate(losses)}
    return {"checkpoints": checkpoints, "latest": latest or {}}


def test_rotation_guards_the_best_once_the_run_is_worse_than_it():
    three = ((3.0, 2.0), (1.0, 3.0), (2.0, None))
    assert guarded(_record(*three, latest={"train": 1.4, "eval": 2.0})) == set()  # no worse than the best
    assert guarded(_record(*three, latest={"train": 1.6})) == {"step_000004"}  # 1.5 times the best training loss
    assert guarded(_record(*three, latest={"eval": 2.1})) == {"step_000002"}  # above the best validation loss
    assert guarded(_record(*three, latest={"train": 9.0, "eval": 9.0})) == {"step_000002", "step_000004"}
    assert guarded(_record((1.0, None), (1.0, None), latest={"train": 2.0})) == {"step_000004"}  # the newest of ties
    assert guarded(_record((float("nan"), None), (5.0, None), latest={"train": 8.0})) == {"step_000004"}
    assert guarded({"checkpoints": {"step_000002": "junk", "step_000004": {"train": "1"}}, "latest": 3}) == set()
    assert guarded({}) == set() == guarded([])


def test_save_checkpoint_keeps_the_best_recorded_loss_once_the_run_is_worse(tmp_path):
    model = torch.nn.Linear(2, 2)
    record = CheckpointLosses()
    kept = []
    # the losses of the steps after each save: falling, flat, then rising far above the best (step 4's)
    for step, losses in ((2, [3.0, 2.9]), (4, [1.0, 1.1]), (6, [1.2, 1.1]), (8, [1.3, 1.2]), (10, [40.0, 60.0]),
                         (12, [90.0, 95.0]), (14, [])):
        record.before_save(step)
        state = record.for_save(step, [p.name for p in list_checkpoints(tmp_path)])
        save_checkpoint(tmp_path, step, model, trainer_state=state, max_checkpoints=2,
                        keep=guarded(state["checkpoint_losses"]))
        record.saved(step)
        for loss in losses:
            record.applied(loss)
        kept.append([p.name[-2:] for p in list_checkpoints(tmp_path)])
    # while the run is no worse, rotation keeps the newest 2 only (step 4, the best, goes at step 10: the run was
    # not worse yet); once it rises after step 10, step 8 (the newest before the rise) stays whatever comes
    assert kept == [["02"], ["02", "04"], ["04", "06"], ["06", "08"], ["08", "10"], ["08", "10", "12"],
                    ["08", "12", "14"]]
    saved = load_checkpoint(tmp_path).trainer_state["checkpoint_losses"]
    assert saved["latest"] == {"train": 92.5} and saved["checkpoints"]["step_000008"] == {"train": 1.25}
    again = CheckpointLosses()  # resumed at step 14: the steps that follow give step 14's training loss
    again.resume(load_checkpoint(tmp_path).trainer_state)
    again.applied(0.5)
    again.before_save(16)
    assert again.by_name["step_000014"] == {"train": 0.5} and again.by_name["step_000008"] == {"train": 1.25}


def test_good_checkpoints_are_those_before_the_bad_weights_with_their_losses_in_range(tmp_path):
    watch = Fed(factor=3.0, window=2)
    watch.accept(2.0)
    record = _record((1.5, None), (1.0, 0.9), (7.0, None), (1.2, math.nan), (1.0, None))["checkpoints"]
    found = [(s, tmp_path / f"step_{s:06d}") for s in (2, 4, 6, 8, 10)]
    good = good_checkpoints(found, record, since=10, watch=watch)  # 6: out of range; 8: a NaN; 10: bad weights
    assert [c.step for c in good] == [2, 4]
    assert go_back_to(good, tmp_path / "step_000010", tmp_path) == (
        f"the checkpoint to go back to is {tmp_path / 'step_000004'} (validation loss 0.9); the newer ones hold "
        "weights that gave a bad loss, so --resume would continue from those: move them aside first, or start a new "
        f"run from it with init_from={tmp_path}@4")
    assert go_back_to(good[:1], tmp_path / "step_000002", tmp_path) == (
        f"the last good checkpoint is {tmp_path / 'step_000002'} (training loss 1.5)")
    assert go_back_to([], tmp_path / "step_000010", tmp_path).startswith("no checkpoint is good: step_000010 ")
    assert go_back_to([], None, tmp_path) == "there is no checkpoint yet"


def test_bad_settings_are_refused_naming_the_value():
    for bad in (1, -1.0, math.inf, "3", True):
        with pytest.raises(ConfigError, match=r"^divergence_factor: expected a finite number > 1, or 0"):
            TrainConfig(divergence_factor=bad)
    for bad in (0, 2.5, True):
        with pytest.raises(ConfigError, match=r"^divergence_window: expected an integer >= 1, got"):
            TrainConfig(divergence_window=bad)


# -- toy runs ---------------------------------------------------------------------------------------------------------


class RampedLM(ToyLM):
    """:class:`ToyLM` whose training loss is multiplied by ``rate ** (calls - start)`` from the forward call
    ``start`` on (x4 a step at 2 micro-batches a step: never a spike, a divergence in a few steps); or by NaN at
    the calls in ``nan``."""

    def __init__(self, start: int | None = None, rate: float = 2.0, nan: tuple[int, ...] = ()) -> None:
        super().__init__(dropout=0.0)
        self.start, self.rate, self.nan = start, rate, set(nan)

    def forward(self, input_ids, labels=None):
        out = super().forward(input_ids, labels)
        if self.training and self.start is not None and self.calls >= self.start:
            out["loss"] = out["loss"] * self.rate ** (self.calls - self.start)
        if self.training and self.calls in self.nan:
            out["loss"] = out["loss"] * float("nan")
        return out


def toy_run(run_dir, ramp: dict | None = None, **overrides) -> Trainer:
    """A toy run of a :class:`RampedLM` (``ramp``: its arguments), built after seeding: the same weights whatever
    ran before in the process."""
    seed_everything(0)
    model = RampedLM(**(ramp or {}))
    return Trainer(model, CountingDataset(64), TrainConfig(**{**BASE, **overrides}), open_run(run_dir),
                   eval_data=CountingDataset(16, seed=1), progress=False)


def lowest_recorded(run_dir) -> tuple[str, float]:
    """The checkpoint on disk whose weights gave the lowest training loss at the next step, and that loss."""
    record = load_checkpoint(run_dir).trainer_state["checkpoint_losses"]["checkpoints"]
    losses = {name: v["train"] for name, v in record.items() if "train" in v}
    name = min(losses, key=losses.get)
    return name, losses[name]


@pytest.mark.parametrize("case", cases("late-divergence"))
def test_a_late_divergence_under_rotation_keeps_the_best_checkpoint(tmp_path, case):
    run = tmp_path / "run"
    checked = case == "late-stop"
    trainer = toy_run(run, {"start": 2 * 12 + 1}, divergence_factor=3.0 if checked else 0, eval_every=0,
                      spike_factor=0 if not checked else 10.0)
    if checked:
        with pytest.raises(TrainingFailed) as caught:
            trainer.train()
        message = str(caught.value)
        assert "\n" not in message and "the run diverges" in message
    else:
        trainer.train()  # the check off: the run goes to its end, the loss thousands of times its start
    trainer.close()
    names = [p.name for p in list_checkpoints(run)]
    best, loss = lowest_recorded(run)
    # the weights of step 12 (the last before the ramp) or earlier; rotation kept 2 newer ones, which gave far more
    assert best in names and int(best.split("_")[1]) <= 14, names
    assert len(names) == 3 and names[-1] != best
    record = load_checkpoint(run).trainer_state["checkpoint_losses"]["checkpoints"]
    newer = [v["train"] for name, v in record.items() if name > best and "train" in v]
    assert newer and all(x > 1.5 * loss for x in newer), (loss, newer)
    if checked:
        assert f"the checkpoint to go back to is {run / 'checkpoints' / best}" in message


def test_a_validation_loss_out_of_range_stops_the_run_before_its_checkpoint(tmp_path):
    run = tmp_path / "run"
    trainer = toy_run(run, eval_every=2)
    # the eval loss of step 6 comes out 1000 times what it is (far above the first loss): the run stops before
    # saving step 6
    original = trainer.policy.after_eval
    trainer.policy.after_eval = lambda step, result: original(step, {**result, "eval_loss": (
        result["eval_loss"] * (1 if step < 6 else 1000))})
    with pytest.raises(TrainingFailed, match=r"^step 6: the validation loss [0-9.]+ is [0-9.]+ times the run's range"):
        trainer.train()
    trainer.close()
    assert [p.name for p in list_checkpoints(run)] == ["step_000002", "step_000004"]
    record = load_checkpoint(run).trainer_state["checkpoint_losses"]["checkpoints"]
    assert set(record) == {"step_000002", "step_000004"} and all("eval" in v for v in record.values())


@pytest.mark.parametrize("case", cases("garbage-checkpoint")[1:])
def test_a_nan_right_after_a_checkpoint_does_not_call_it_good(tmp_path, case):
    run = tmp_path / "run"
    trainer = toy_run(run, {"nan": (2 * 4 + 1,)}, steps=8, eval_every=0)  # NaN in step 5, saved at 2 and 4
    with pytest.raises(TrainingFailed) as caught:
        trainer.train()
    trainer.close()
    message = str(caught.value)
    assert message.startswith("step 5: the loss is nan")
    assert "the last good checkpoint is" not in message and "train.nonfinite=skip" not in message
    assert f"the checkpoint to go back to is {run / 'checkpoints' / 'step_000002'}" in message
    assert [p.name for p in list_checkpoints(run)] == ["step_000002", "step_000004"]
