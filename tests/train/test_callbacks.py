"""The Trainer's callbacks: each hook fires at its point of the loop, in order, with the trainer and its arguments."""

from __future__ import annotations

from pathlib import Path

import pytest
from toymodels import CountingDataset, ToyLM, open_run

from synthformer.train import TrainConfig, Trainer, TrainerCallback, seed_everything


class Recorder(TrainerCallback):
    """Writes down every hook call: (name, hook, step, argument)."""

    def __init__(self, name: str, log: list) -> None:
        self.name, self.log = name, log

    def on_step(self, trainer):
        self.log.append((self.name, "step", trainer.step, None))

    def on_evaluate_start(self, trainer):
        self.log.append((self.name, "evaluate_start", trainer.step, None))

    def on_evaluate(self, trainer, metrics):
        self.log.append((self.name, "evaluate", trainer.step, dict(metrics)))

    def on_save_start(self, trainer):
        self.log.append((self.name, "save_start", trainer.step, None))

    def on_save(self, trainer, path):
        self.log.append((self.name, "save", trainer.step, path))


def trainer(run_dir: Path, **kwargs) -> Trainer:
    seed_everything(0)
    cfg = TrainConfig(steps=4, batch_size=4, lr=1e-2, save_every=2, log_every=1, eval_every=2, seed=3)
    return Trainer(ToyLM(), CountingDataset(16), cfg, open_run(run_dir), eval_data=CountingDataset(8, seed=1),
                   progress=False, **kwargs)


def test_hooks_fire_in_order_with_the_trainer_and_their_arguments(tmp_path) -> None:
    log: list = []
    t = trainer(tmp_path, callbacks=[Recorder("a", log)])
    t.add_callback(Recorder("b", log))
    t.train()
    calls = [(name, hook, step) for name, hook, step, _ in log]
    # every hook of a callback comes before the next callback's; evaluation before the checkpoint of a step
    per_step = {1: ["step"], 2: ["step", "evaluate_start", "evaluate", "save_start", "save"], 3: ["step"],
                4: ["step", "evaluate_start", "evaluate", "save_start", "save"]}
    assert calls == [(name, hook, step) for step, hooks in per_step.items() for hook in hooks for name in "ab"]
    evaluated = [arg for name, hook, _, arg in log if hook == "evaluate" and name == "a"]
    assert [sorted(m) for m in evaluated] == [["eval_loss"], ["eval_loss"]]
    assert evaluated[1]["eval_loss"] < evaluated[0]["eval_loss"]  # it learns: the metrics are each step's own
    saved = [arg for name, hook, _, arg in log if hook == "save" and name == "a"]
    assert saved == [tmp_path / "checkpoints" / "step_000002", tmp_path / "checkpoints" / "step_000004"]
    assert all(p.is_dir() for p in saved)


def test_a_call_of_evaluate_or_save_fires_its_hooks_too(tmp_path) -> None:
    log: list = []
    t = trainer(tmp_path, callbacks=[Recorder("a", log)])
    metrics = t.evaluate()
    path = t.save()
    assert log == [("a", "evaluate_start", 0, None), ("a", "evaluate", 0, metrics),
                   ("a", "save_start", 0, None), ("a", "save", 0, path)]


def test_a_failed_evaluation_fires_only_its_start_and_a_failing_hook_stops_the_trainer(tmp_path) -> None:
    log: list = []

    def broken(model):
        raise RuntimeError("metric failed")

    t = trainer(tmp_path, callbacks=[Recorder("a", log)], eval_fn=broken)
    with pytest.raises(RuntimeError, match="metric failed"):
        t.evaluate()
    assert [hook for _, hook, _, _ in log] == ["evaluate_start"]

    class Stop(TrainerCallback):
        def on_step(self, trainer):
            if trainer.step == 3:
                raise KeyboardInterrupt  # as a Ctrl-C: the trainer saves the step it completed

    t = trainer(tmp_path / "second", callbacks=[Stop()])
    with pytest.raises(KeyboardInterrupt):
        t.train()
    assert t.step == 3


def test_a_callback_must_be_a_trainer_callback(tmp_path) -> None:
    with pytest.raises(TypeError, match="expected a TrainerCallback .* got function"):
        trainer(tmp_path, callbacks=[lambda trainer: None])
    t = trainer(tmp_path / "second")
    with pytest.raises(TypeError, match="expected a TrainerCallback .* got dict"):
        t.add_callback({})
    assert t.callbacks == []
