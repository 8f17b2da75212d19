"""Evaluating a run: one split of a model (:func:`evaluate_split`, the dispatch to the task type's metrics), the
trainer's ``eval_fn`` (:func:`make_eval_fn`), and ``synthformer eval`` (:func:`evaluate_run`: the latest
checkpoint of a run directory, its report written into the directory).

Each task type computes its own metrics (:meth:`~synthformer.tasks.contract.TaskType.evaluate`), with the shared
pieces of :mod:`synthformer.tasks.metrics.likelihood`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torch import nn

from synthformer.train import EvalShard, RunDir, RunError, accepts_shard, append_metrics, write_evaluation

from .data import prepare_data
from .loading import load_run

if TYPE_CHECKING:
    from ..contract import TaskData
    from .config import RunConfig

__all__ = ["EvalFn", "EvalReport", "default_eval_split", "evaluate_run", "evaluate_split", "make_eval_fn",
           "record_evaluation"]


class EvalFn:
    """``eval_fn(model, shard=None) -> metrics`` for the trainer; remembers how long it ran (not training time).

    The trainer passes each process's :class:`~synthformer.train.sharding.EvalShard`: the processes share the
    evaluation and every one returns the metrics of the whole sample."""

    def __init__(self, fn: Callable[[nn.Module, EvalShard | None], dict[str, Any]]) -> None:
        self.fn = fn
        self.seconds = 0.0

    def __call__(self, model: nn.Module, shard: EvalShard | None = None) -> dict[str, Any]:
        start = time.perf_counter()
        try:
            return self.fn(model, shard)
        finally:
            self.seconds += time.perf_counter() - start


def evaluate_split(run: RunConfig, data: TaskData, model: nn.Module, split: str, *, beam: int | None = None,
                   max_batches: int = 0, max_examples: int | None = None,
                   metrics: list[str] | None = None,
                   shard: EvalShard | None = None) -> tuple[dict[str, Any], list[str]]:
    """The task's metrics of ``model`` on ``split`` (in eval mode; the mode is restored after). Returns
    (metrics, hypotheses), the hypotheses being decoded outputs where the task type decodes (else empty).

    The sample scored is set by the config alone (``eval.batch_size`` or ``train.batch_size``, ``max_batches``,
    ``max_examples``). With a ``shard`` of several processes (every process calls this) each evaluates its part
    and the results are gathered: every process returns the metrics and hypotheses of the whole sample, equal to
    one process's up to the order of float sums. A task type whose ``evaluate`` has no ``shard`` parameter
    evaluates the whole sample on every process."""
    names = metrics if metrics is not None else run.metrics
    batch_size = run.eval.batch_size or run.train.batch_size
    task_type = run.task.task_type
    extra = {"shard": shard} if shard is not None and accepts_shard(task_type.evaluate) else {}
    was_training = model.training
    model.eval()
    try:
        return task_type.evaluate(run, data, model, split, names, batch_size=batch_size,
                                  max_batches=max_batches, beam=beam, max_examples=max_examples, **extra)
    finally:
        model.train(was_training)


def make_eval_fn(run: RunConfig, data: TaskData, split: str = "valid", during_training: bool = True) -> EvalFn:
    """The trainer's ``eval_fn``: the task's metrics on ``split``.

    During training it stays cheap: at most ``train.eval_steps`` batches for the losses (0: all) and what the
    task type's :meth:`~synthformer.tasks.contract.TaskType.training_evaluation` allows (seq2seq: greedy
    decoding of ``eval.train_decode_examples`` examples).
    """
    if during_training:
        names, beam, max_examples = run.task.task_type.training_evaluation(run)
        max_batches = run.train.eval_steps
    else:
        names, beam, max_examples, max_batches = run.metrics, None, run.eval.max_examples, 0

    def fn(model: nn.Module, shard: EvalShard | None) -> dict[str, Any]:
        # Without an explicit eval.batch_size the sample is max_batches *global* batches (the per-process
        # train.batch_size times the processes), so that runs with the same global batch (1 x 8, 2 x 4) score the
        # same examples; an explicit eval.batch_size fixes the sample whatever the number of processes.
        scale = shard.world_size if shard is not None and run.eval.batch_size is None else 1
        metrics, _ = evaluate_split(run, data, model, split, beam=beam, max_batches=max_batches * scale,
                                    max_examples=max_examples, metrics=names, shard=shard)
        return metrics

    return EvalFn(fn)


def record_evaluation(run_dir: Any, split: str, step: int, metrics: Mapping[str, Any]) -> None:
    """Append an evaluation of ``split`` (``synthformer eval``: the whole split, at the end of a run) to the run's
    ``metrics.jsonl``, as ``{"step": step, "<split>_<metric>": value, ...}``: the metrics file then holds the
    periodic validation metrics of training (``eval_*``) and the final ones side by side."""
    append_metrics(RunDir(run_dir), {"step": step, **{f"{split}_{k}": v for k, v in metrics.items()}})


def default_eval_split(run: RunConfig) -> str:
    """The split ``synthformer eval`` scores by default: test when the task has one, else valid."""
    return "test" if run.task.has_test_split else "valid"


@dataclass
class EvalReport:
    """What :func:`evaluate_run` measured and where it wrote it."""

    split: str
    step: int
    metrics: dict[str, Any]
    hypotheses: list[str]
    path: Path


def evaluate_run(run_dir: str | Path, split: str | None = None, *, beam: int | None = None,
                 max_examples: int | None = None, batch_size: int | None = None,
                 decoding: Mapping[str, Any] | None = None, checkpoint: str | None = None) -> EvalReport:
    """Score the latest checkpoint of a run on ``split`` (default: :func:`default_eval_split`), write
    ``RUN/eval_<split>.json`` (and, for seq2seq, the decoded outputs to ``RUN/eval_<split>_hypotheses.txt``) and
    append the metrics to ``RUN/metrics.jsonl`` as ``<split>_<name>`` at the checkpoint's step.

    ``decoding`` replaces ``eval`` settings of the run for this evaluation (``length_penalty``,
    ``max_decode_len``, ``min_length``, ``no_repeat_ngram_size``; None values are ignored). ``checkpoint``: which
    one to score instead of the latest (``best``, ``latest``, a step; see :func:`~synthformer.train.select_checkpoint`).

    Raises:
        RunError: not a usable run directory, or a split the task does not have.
    """
    loaded = load_run(run_dir, checkpoint)
    run = loaded.config
    split = split or default_eval_split(run)
    if batch_size is not None:
        run = dataclasses.replace(run, eval=dataclasses.replace(run.eval, batch_size=batch_size))
    if max_examples is not None:
        run = dataclasses.replace(run, eval=dataclasses.replace(run.eval, max_examples=max_examples))
    changes = {k: v for k, v in (decoding or {}).items() if v is not None}
    if changes:  # EvalConfig checks the names and values again
        run = dataclasses.replace(run, eval=dataclasses.replace(run.eval, **changes))
    data = prepare_data(run, loaded.tokenizer, loaded.label_set, splits=(split,))
    if split not in data.datasets:
        raise RunError(f"the task of {loaded.run_dir} has no {split!r} split (it has: {', '.join(data.raw.splits)})")
    beam = beam if beam is not None else run.eval.beam
    start = time.perf_counter()
    metrics, hypotheses = evaluate_split(run, data, loaded.model, split, beam=beam, max_examples=run.eval.max_examples)
    report = {
        "split": split,
        "step": loaded.step,
        "checkpoint": str(loaded.checkpoint),
        "metrics": metrics,
        "seconds": time.perf_counter() - start,
    }
    report.update(run.task.task_type.report_extras(run, beam))
    path = write_evaluation(RunDir(loaded.run_dir), split, report, hypotheses)
    record_evaluation(loaded.run_dir, split, loaded.step, metrics)
    return EvalReport(split, loaded.step, metrics, hypotheses, path)
