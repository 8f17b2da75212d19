"""The trainer's forward pass and its periodic evaluation (the mean eval loss and the task's ``eval_fn``).

Functions of their inputs, so that :class:`~synthformer.train.Trainer` calls them with its state and the
:class:`~synthformer.train.recording.Recorder` writes what they return.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Callable, Mapping
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import send_to_device
from torch import nn
from torch.utils.data import Subset

from .config import TrainConfig
from .distributed import unsharded
from .hooks import preserved_rng
from .loader import eval_batches, is_map_style
from .sharding import EvalShard, accepts_shard

__all__ = ["eval_sample", "evaluate_model", "forward_loss"]


def forward_loss(model: nn.Module, batch: Any, *, bf16: bool, device_type: str) -> torch.Tensor:
    """``model(**batch)["loss"]`` (under bf16 autocast when asked), checked to be a scalar tensor."""
    if not isinstance(batch, Mapping):
        raise TypeError(f"a batch must be a mapping of keyword arguments for model(**batch), got {type(batch)}")
    autocast = torch.autocast(device_type=device_type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    with autocast:
        out = model(**batch)
    loss = out.get("loss") if isinstance(out, Mapping) else getattr(out, "loss", None)
    if not isinstance(loss, torch.Tensor) or loss.ndim != 0:
        raise TypeError(
            "model(**batch) must return a mapping with a scalar tensor under 'loss' (docs/CONTRACTS.md); "
            f"got {type(out).__name__} with loss={loss!r}"
        )
    return loss


def evaluate_model(model: nn.Module, accelerator: Accelerator, config: TrainConfig, *, eval_data: Any | None,
                   eval_fn: Callable[..., Mapping[str, Any]] | None, rank: int, world_size: int,
                   collate_fn: Callable[[list[Any]], Any] | None,
                   token_counter: Callable[[Mapping[str, Any]], int | torch.Tensor]) -> dict[str, Any]:
    """Mean eval loss (weighted by target count, over all processes) plus ``eval_fn``'s metrics, ``eval_``-named.

    The eval loss is over a sample that does not depend on the number of processes (see :func:`eval_sample`),
    each process scoring its own part. ``eval_fn`` is called as ``eval_fn(model, shard=EvalShard(rank,
    world_size))`` when it takes a ``shard`` keyword (it then evaluates its part and gathers, see
    :mod:`~synthformer.train.sharding`), else as ``eval_fn(model)`` on every process.

    ``model`` is the unwrapped model (no DDP collectives: processes may see different batch counts). Runs in eval
    mode without gradients, and leaves the global RNG streams as it found them, so a run's training trajectory
    does not depend on how often it is evaluated.
    """
    was_training = model.training
    result: dict[str, Any] = {}
    model.eval()
    try:
        with preserved_rng(), torch.no_grad(), unsharded(model):
            if eval_data is not None:
                result["eval_loss"] = _eval_loss(model, accelerator, config, eval_data, rank, world_size,
                                                 collate_fn, token_counter)
            if eval_fn is not None:
                if accepts_shard(eval_fn):
                    metrics = eval_fn(model, shard=EvalShard(rank, world_size))
                else:
                    metrics = eval_fn(model)
                for key, value in dict(metrics).items():
                    if isinstance(value, torch.Tensor):
                        value = value.item()
                    result[key if key.startswith("eval_") else f"eval_{key}"] = value
    finally:
        model.train(was_training)
    return result


def _eval_loss(model: nn.Module, acc: Accelerator, cfg: TrainConfig, eval_data: Any, rank: int, world_size: int,
               collate_fn: Callable[[list[Any]], Any] | None,
               token_counter: Callable[[Mapping[str, Any]], int | torch.Tensor]) -> float:
    """Mean loss over :func:`eval_sample` (each process its part), weighted by targets."""
    total = torch.zeros(2, dtype=torch.float64, device=acc.device)
    batches = eval_batches(eval_sample(eval_data, cfg.eval_steps * world_size, cfg.batch_size),
                           batch_size=cfg.batch_size,
                           rank=rank, world_size=world_size, collate_fn=collate_fn, num_workers=cfg.num_workers)
    for batch in batches:
        batch = send_to_device(batch, acc.device)
        n = float(token_counter(batch))
        loss = forward_loss(model, batch, bf16=cfg.bf16, device_type=acc.device.type)
        total += torch.tensor([loss.double().item() * n, n], dtype=torch.float64, device=acc.device)
    if world_size > 1:
        total = acc.reduce(total, "sum")
    return (total[0] / total[1]).item() if total[1] > 0 else math.nan


def eval_sample(eval_data: Any, eval_steps: int, batch_size: int) -> Any:
    """The examples the periodic eval loss is computed on.

    Map-style data: the first ``eval_steps * batch_size`` examples (all with ``eval_steps`` 0); iterables of
    batches: their first ``eval_steps`` batches. The trainer passes ``train.eval_steps * processes`` steps of the
    per-process ``train.batch_size``: ``eval_steps`` *global* batches, as a training step is one. So the sample is
    the same for every run with the same global batch (1 x 8 and 2 x 4 score the same examples: the run that
    docs/distributed.md calls the same run), and under N processes
    :func:`~synthformer.train.loader.eval_batches` deals it out (disjoint parts whose union is the sample).
    """
    if not eval_steps:
        return eval_data
    if is_map_style(eval_data):
        limit = eval_steps * batch_size
        return eval_data if len(eval_data) <= limit else Subset(eval_data, range(limit))
    return _Limited(eval_data, eval_steps)


class _Limited:
    """The first ``n`` items of an iterable, each time it is iterated (a re-iterable ``islice``)."""

    def __init__(self, data: Any, n: int) -> None:
        self.data, self.n = data, n

    def __iter__(self) -> Any:
        return itertools.islice(iter(self.data), self.n)
