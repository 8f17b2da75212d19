"""Long runs in one process: non-finite steps (stop, skip, N in a row), finite loss spikes (handled as non-finite
steps; normal training never meets the check), an out-of-memory step, and the best checkpoint (``train.keep_best``)
in each direction. The cases of the faults are the rows of docs/reliability.md's "Long runs"
table (tests/reliability/long_runs.py); signals and deaths are in tests/reliability/test_long_runs.py (real
processes)."""

from __future__ import annotations

import json

import pytest
import torch
from toymodels import CountingDataset, ToyLM, open_run, state_equal

from synthformer.common.config import ConfigError
from synthformer.train import (
    TrainConfig,
    Trainer,
    TrainingFailed,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    seed_everything,
    select_checkpoint,
)
from synthformer.train.best import read_best
from tests.reliability.long_runs import cases

# 16 micro-batches per epoch, 2 per step (as in test_trainer.py); a checkpoint every 4 steps.
BASE = dict(steps=12, batch_size=4, lr=1e-2, grad_accum=2, warmup_steps=3, save_every=4, log_every=2, seed=3)


class PoisonedLM(ToyLM):
    """:class:`ToyLM` whose loss is multiplied by ``scale`` (NaN: a NaN loss; 1e6: a finite spike) at the training
    forward calls in ``poison`` (1-based, counted over the run: a resumed trainer sets ``calls`` to where the run
    stands)."""

    def __init__(self, poison: set[int], scale: float = float("nan")) -> None:
        super().__init__(dropout=0.2)
        self.poison, self.scale = poison, scale

    def forward(self, input_ids, labels=None):
        out = super().forward(input_ids, labels)
        if self.training and self.calls in self.poison:
            out["loss"] = out["loss"] * self.scale
        return out


def make(run_dir, poison=(), *, resume=False, eval_fn=None, scale=float("nan"), **overrides) -> Trainer:
    seed_everything(0 if not resume else 99)  # a resumed run's model starts elsewhere: the checkpoint decides
    model = PoisonedLM(set(poison), scale)
    trainer = Trainer(model, CountingDataset(64), TrainConfig(**{**BASE, **overrides}),
                      open_run(run_dir, resume=resume), eval_fn=eval_fn, progress=False)
    model.calls = trainer.step * trainer.config.grad_accum  # the micro-batches the run has done
    return trainer


def finished(run_dir, poison=(), **overrides) -> Trainer:
    trainer = make(run_dir, poison, **overrides)
    trainer.train()
    trainer.close()
    return trainer


def all_finite_on_disk(run_dir) -> bool:
    from safetensors.torch import load_file

    return all(torch.isfinite(t).all() for ckpt in list_checkpoints(run_dir)
               for t in load_file(str(ckpt / "model.safetensors")).values())


STEP7 = {2 * 6 + 1}  # the first micro-batch of step 7


@pytest.mark.parametrize("case", cases("nonfinite-stop"))
def test_a_nan_loss_stops_in_one_line_saves_nothing_of_it_and_resumes_with_skip_exactly(tmp_path, case):
    clip = 1.0 if case == "clip" else 0.0
    run = tmp_path / "run"
    trainer = make(run, STEP7, grad_clip=clip)
    with pytest.raises(TrainingFailed) as caught:
        trainer.train()
    trainer.close()
    message = str(caught.value)
    assert "\n" not in message and message.startswith("step 7: the loss is nan and the gradient norm nan;")
    assert f"the last good checkpoint is {run / 'checkpoints' / 'step_000004'}" in message
    assert "train.lr" in message and "train.nonfinite=skip" in message
    assert [p.name for p in list_checkpoints(run)] == ["step_000004"] and all_finite_on_disk(run)
    # resumed with skip, it is the run that skipped from the start
    resumed = make(run, STEP7, resume=True, grad_clip=clip, nonfinite="skip")
    resumed.train()
    resumed.close()
    reference = finished(tmp_path / "ref", STEP7, grad_clip=clip, nonfinite="skip")
    assert state_equal(resumed.model, reference.model)
    assert load_checkpoint(run).trainer_state["skipped_steps"] == 1


@pytest.mark.parametrize("case", cases("nonfinite-skip"))
def test_skipped_steps_are_counted_and_a_killed_run_resumes_exactly(tmp_path, case):
    poison = {2 * 6 + 1, 2 * 9 + 2}  # steps 7 and 10
    reference = finished(tmp_path / "ref", poison, nonfinite="skip")
    assert all(torch.isfinite(p).all() for p in reference.model.parameters())
    lines = [json.loads(x) for x in (tmp_path / "ref" / "metrics.jsonl").read_text().splitlines()]
    assert [(d["step"], d["skipped_steps"]) for d in lines] == [(2, 0), (4, 0), (6, 0), (8, 1), (10, 2), (12, 2)]
    assert all(d["loss"] == d["loss"] for d in lines)  # skipped losses are left out of the window: no NaN logged

    killed = make(tmp_path / "run", poison, nonfinite="skip")
    killed.model.crash_at = 2 * 11 + 1  # step 12: the checkpoint of step 8 holds the first skip
    with pytest.raises(RuntimeError, match="simulated crash"):
        killed.train()
    killed.close()
    assert load_checkpoint(tmp_path / "run").trainer_state["skipped_steps"] == 1
    resumed = make(tmp_path / "run", poison, resume=True, nonfinite="skip")
    resumed.train()
    assert state_equal(resumed.model, reference.model) and resumed.policy.skipped_steps == 2


@pytest.mark.parametrize("case", cases("nonfinite-limit"))
def test_too_many_nonfinite_steps_in_a_row_stop_the_run(tmp_path, case):
    poison = {2 * s + 1 for s in range(5, 8)}  # steps 6, 7 and 8
    trainer = make(tmp_path, poison, nonfinite="skip", nonfinite_limit=3)
    with pytest.raises(TrainingFailed, match=r"^step 8: the loss is nan .* \(3 non-finite steps in a row, "
                                              r"train.nonfinite_limit 3\); nothing was saved from it"):
        trainer.train()
    trainer.close()
    assert trainer.policy.skipped_steps == 2 and latest_checkpoint(tmp_path).name == "step_000004"
    assert all_finite_on_disk(tmp_path)


SPIKE = 1e6  # a finite loss a million times the step's own


@pytest.mark.parametrize("case", cases("spike"))
def test_a_finite_loss_spike_is_handled_as_a_nonfinite_step_and_resumes_exactly(tmp_path, case):
    poison = STEP7 if case == "spike-stop" else {2 * 6 + 1, 2 * 9 + 2}  # step 7 (and 10)
    reference = finished(tmp_path / "ref", poison, scale=SPIKE, nonfinite="skip")
    assert reference.policy.skipped_steps == len(poison)
    run = tmp_path / "run"
    if case == "spike-stop":
        trainer = make(run, poison, scale=SPIKE)
        with pytest.raises(TrainingFailed) as caught:
            trainer.train()
        trainer.close()
        message = str(caught.value)
        assert "\n" not in message and message.startswith("step 7: the loss ") and "a loss spike;" in message
        assert "train.spike_factor 10" in message and "nothing was saved from it" in message
        assert f"the last checkpoint, {run / 'checkpoints' / 'step_000004'}, was saved before the loss rose" in message
        assert [p.name for p in list_checkpoints(run)] == ["step_000004"]
    else:  # killed between the two spikes, after the checkpoint of step 8
        trainer = make(run, poison, scale=SPIKE, nonfinite="skip")
        trainer.model.crash_at = 2 * 11 + 1
        with pytest.raises(RuntimeError, match="simulated crash"):
            trainer.train()
        trainer.close()
        assert load_checkpoint(run).trainer_state["skipped_steps"] == 1
    resumed = make(run, poison, resume=True, scale=SPIKE, nonfinite="skip")
    resumed.train()
    resumed.close()
    assert state_equal(resumed.model, reference.model) and all_finite_on_disk(run)
    assert load_checkpoint(run).trainer_state["skipped_steps"] == len(poison)


def test_normal_training_never_meets_the_spike_check(tmp_path):
    # 40 steps without warm-up: the loss falls from about 15 to under 1, the largest step-to-reference ratio is
    # far below the factor of 10
    trainer = finished(tmp_path, steps=40, warmup_steps=0, save_every=0, log_every=1)
    assert trainer.policy.skipped_steps == 0
    losses = [json.loads(x)["loss"] for x in (tmp_path / "metrics.jsonl").read_text().splitlines() if '"loss"' in x]
    assert len(losses) == 40 and losses[-1] < 0.2 * losses[0]
    ratios = [loss / max(losses[:i]) for i, loss in enumerate(losses) if i]
    assert max(ratios) < 2, ratios


OOM = {"cuda": lambda: torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB"),
       "cpu": lambda: RuntimeError("[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate "
                                   "memory: you tried to allocate 1099511627776 bytes. Error code 12")}


@pytest.mark.parametrize("case", cases("oom"))
def test_out_of_memory_names_the_batch_and_the_options_and_loses_nothing(tmp_path, case):
    reference = finished(tmp_path / "ref")
    run = tmp_path / "run"
    trainer = make(run)
    trainer.model.crash_at, trainer.model.crash_with = 2 * 9 + 2, OOM[case]()  # step 10, second micro-batch
    with pytest.raises(TrainingFailed) as caught:
        trainer.train()
    trainer.close()
    assert str(caught.value) == (
        "step 10 ran out of memory on a micro-batch of 4 examples, lengths input_ids 8, labels 8 (train.batch_size 4 "
        "per process, train.grad_accum 2); reduce train.batch_size and raise train.grad_accum to keep the batch, "
        "lower task.max_len, set train.bf16=true, or use the fused attention path (synthformer.attention."
        f"fast.fast_path_settings(fused='always')); the last completed step is saved "
        f"({run / 'checkpoints' / 'step_000009'}); continue with --resume")
    resumed = make(run, resume=True)
    resumed.train()
    assert state_equal(resumed.model, reference.model)


def scripted(values: dict[int, float], name: str):
    """An eval function reporting ``name`` = ``values[step]`` at each evaluation (steps 2, 4, 6, ...)."""
    calls = []

    def eval_fn(model):
        calls.append(1)
        return {name: values[2 * len(calls)]}

    return eval_fn


@pytest.mark.parametrize(("metric", "values", "best"), [
    ("loss", {2: 3.0, 4: 1.0, 6: 2.0, 8: 1.5, 10: 1.2}, 4),                 # lower is better
    ("accuracy", {2: 0.3, 4: 0.2, 6: 0.9, 8: 0.5, 10: 0.95}, 6),            # higher is better
])
def test_keep_best_keeps_the_best_checkpoint_besides_the_newest(tmp_path, metric, values, best):
    trainer = make(tmp_path, eval_fn=scripted(values, metric), steps=8, eval_every=2, save_every=3, max_checkpoints=1,
                   keep_best=metric)
    trainer.train()
    trainer.close()
    # a new best is saved at once (steps 2 and 4 or 6 are no save steps); rotation kept it besides the newest
    assert [p.name for p in list_checkpoints(tmp_path)] == [f"step_{best:06d}", "step_000008"]
    record = read_best(tmp_path / "checkpoints")
    assert (record.checkpoint, record.metric, record.value) == (f"step_{best:06d}", f"eval_{metric}", values[best])
    assert select_checkpoint(tmp_path, "best").name == f"step_{best:06d}"
    assert select_checkpoint(tmp_path, None).name == "step_000008"
    # resumed, the run compares with the best it had: step 10 beats it only where it is better
    resumed = make(tmp_path, eval_fn=scripted({2: values[10]}, metric), resume=True,
                   steps=10, eval_every=2, save_every=3, max_checkpoints=1, keep_best=metric)
    resumed.train()
    resumed.close()
    better = values[10] < values[best] if metric == "loss" else values[10] > values[best]
    assert select_checkpoint(tmp_path, "best").name == ("step_000010" if better else f"step_{best:06d}")


def test_keep_best_of_a_metric_the_evaluation_does_not_report_fails_in_one_line(tmp_path):
    trainer = make(tmp_path, eval_fn=scripted({2: 1.0}, "loss"), steps=2, eval_every=2, keep_best="bleu")
    with pytest.raises(ConfigError, match=r"^train.keep_best: the evaluation reports no 'eval_bleu' \(it reports: "
                                          r"eval_loss\)$"):
        trainer.train()
    trainer.close()
    with pytest.raises(ConfigError, match="keep_best: unknown metric 'blue'; known .*bleu"):
        TrainConfig(keep_best="blue")
