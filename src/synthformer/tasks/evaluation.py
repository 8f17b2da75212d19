"""Evaluating a model on one split: the shared loop pieces, and the dispatch to the task type's metrics.

Each task type computes its own metrics (:meth:`~synthformer.tasks.registry.TaskType.evaluate`); the helpers
here are what they share: batching a dataset in order (or an evenly spaced sample of it), moving batches to the
model's device, and the summed token cross-entropy. Losses are plain cross-entropy in nats per target computed
from the logits, so a model trained with label smoothing is still scored by its true likelihood.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.data import DataLoader, Subset

from synthformer.models import IGNORE_INDEX
from synthformer.train.metrics import perplexity

if TYPE_CHECKING:
    from .config import RunConfig
    from .pipeline import TaskData

__all__ = ["EvalFn", "batches", "device_of", "evaluate_split", "likelihood_metrics", "make_eval_fn",
           "record_evaluation", "to_device", "token_nll"]


class EvalFn:
    """``eval_fn(model) -> metrics`` for the trainer; remembers how long it ran (not training time)."""

    def __init__(self, fn: Callable[[nn.Module], dict[str, Any]]) -> None:
        self.fn = fn
        self.seconds = 0.0

    def __call__(self, model: nn.Module) -> dict[str, Any]:
        start = time.perf_counter()
        try:
            return self.fn(model)
        finally:
            self.seconds += time.perf_counter() - start


def device_of(model: nn.Module) -> torch.device:
    """The device of the model's parameters."""
    return next(model.parameters()).device


def batches(dataset: Any, batch_size: int, max_batches: int = 0) -> Iterator[dict[str, Tensor]]:
    """Batches of ``dataset`` in order; with ``max_batches``, of an evenly spaced sample of that many batches.

    Evenly spaced rather than the first ones: data files are often sorted (IMDb by label), and the beginning of
    a text is not typical of all of it.
    """
    data = dataset
    n = len(dataset)
    if max_batches and n > max_batches * batch_size:
        keep = max_batches * batch_size
        data = Subset(dataset, [i * n // keep for i in range(keep)])
    return iter(DataLoader(data, batch_size=batch_size, shuffle=False, collate_fn=dataset.collate))


def to_device(batch: Mapping[str, Tensor], device: torch.device) -> dict[str, Tensor]:
    """The batch's tensors on ``device``."""
    return {k: v.to(device) for k, v in batch.items()}


@torch.no_grad()
def token_nll(model: nn.Module, dataset: Any, batch_size: int, max_batches: int) -> tuple[float, int]:
    """Summed cross-entropy (nats) over the target tokens (labels not ``IGNORE_INDEX``), and their number."""
    total, count = 0.0, 0
    device = device_of(model)
    for batch in batches(dataset, batch_size, max_batches):
        batch = to_device(batch, device)
        logits = model(**batch)["logits"].float()  # (B, L, V)
        labels = batch["labels"]
        total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),  # (B*L, V)
                                       ignore_index=IGNORE_INDEX, reduction="sum"))
        count += int((labels != IGNORE_INDEX).sum())
    return total, count


def likelihood_metrics(model: nn.Module, dataset: Any, names: list[str], batch_size: int,
                       max_batches: int) -> dict[str, Any]:
    """Teacher-forced ``loss`` (nats per target token), ``log_perplexity`` (the same number, under the name the
    paper's Table 4 uses) and ``perplexity``, those of them in ``names``, plus the target ``tokens`` counted;
    empty when ``names`` asks for none of them."""
    wanted = [n for n in ("loss", "log_perplexity", "perplexity") if n in names]
    if not wanted:
        return {}
    total, count = token_nll(model, dataset, batch_size, max_batches)
    mean = total / max(count, 1)
    values = {"loss": mean, "log_perplexity": mean, "perplexity": perplexity(mean)}
    return {**{n: values[n] for n in wanted}, "tokens": count}


def evaluate_split(run: RunConfig, data: TaskData, model: nn.Module, split: str, *, beam: int | None = None,
                   max_batches: int = 0, max_examples: int | None = None,
                   metrics: list[str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The task's metrics of ``model`` on ``split`` (in eval mode; the mode is restored after). Returns
    (metrics, hypotheses), the hypotheses being decoded outputs where the task type decodes (else empty)."""
    names = metrics if metrics is not None else run.metrics
    batch_size = run.eval.batch_size or run.train.batch_size
    was_training = model.training
    model.eval()
    try:
        return run.task.task_type.evaluate(run, data, model, split, names, batch_size=batch_size,
                                           max_batches=max_batches, beam=beam, max_examples=max_examples)
    finally:
        model.train(was_training)


def make_eval_fn(run: RunConfig, data: TaskData, split: str = "valid", during_training: bool = True) -> EvalFn:
    """The trainer's ``eval_fn``: the task's metrics on ``split``.

    During training it stays cheap: at most ``train.eval_steps`` batches for the losses (0: all) and what the
    task type's :meth:`~synthformer.tasks.registry.TaskType.training_evaluation` allows (seq2seq: greedy
    decoding of ``eval.train_decode_examples`` examples).
    """
    if during_training:
        names, beam, max_examples = run.task.task_type.training_evaluation(run)
        max_batches = run.train.eval_steps
    else:
        names, beam, max_examples, max_batches = run.metrics, None, run.eval.max_examples, 0

    def fn(model: nn.Module) -> dict[str, Any]:
        metrics, _ = evaluate_split(run, data, model, split, beam=beam, max_batches=max_batches,
                                    max_examples=max_examples, metrics=names)
        return metrics

    return EvalFn(fn)


def record_evaluation(run_dir: Any, split: str, step: int, metrics: Mapping[str, Any]) -> None:
    """Append an evaluation of ``split`` (``synthformer eval``: the whole split, at the end of a run) to the run's
    ``metrics.jsonl``, as ``{"step": step, "<split>_<metric>": value, ...}``: the metrics file then holds the
    periodic validation metrics of training (``eval_*``) and the final ones side by side."""
    from synthformer.train import RunDir

    RunDir(run_dir).append_metrics({"step": step, **{f"{split}_{k}": v for k, v in metrics.items()}})
