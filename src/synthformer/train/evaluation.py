"""The trainer's forward pass and its periodic evaluation (the mean eval loss and the task's ``eval_fn``).

Functions of their inputs, so that :class:`~synthformer.train.Trainer` calls them with its state and the
:class:`~synthformer.train.recording.Recorder` writes what they return.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import send_to_device
from torch import nn

from .config import TrainConfig
from .distributed import unsharded
from .hooks import preserved_rng
from .loader import eval_batches

__all__ = ["evaluate_model", "forward_loss"]


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
                   eval_fn: Callable[[nn.Module], Mapping[str, Any]] | None, rank: int, world_size: int,
                   collate_fn: Callable[[list[Any]], Any] | None,
                   token_counter: Callable[[Mapping[str, Any]], int | torch.Tensor]) -> dict[str, Any]:
    """Mean eval loss (weighted by target count, over all processes) plus ``eval_fn``'s metrics, ``eval_``-named.

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
                for key, value in dict(eval_fn(model)).items():
                    if isinstance(value, torch.Tensor):
                        value = value.item()
                    result[key if key.startswith("eval_") else f"eval_{key}"] = value
    finally:
        model.train(was_training)
    return result


def _eval_loss(model: nn.Module, acc: Accelerator, cfg: TrainConfig, eval_data: Any, rank: int, world_size: int,
               collate_fn: Callable[[list[Any]], Any] | None,
               token_counter: Callable[[Mapping[str, Any]], int | torch.Tensor]) -> float:
    """Mean loss over the eval data (its first ``eval_steps`` batches per process), weighted by targets."""
    total = torch.zeros(2, dtype=torch.float64, device=acc.device)
    batches = eval_batches(eval_data, batch_size=cfg.batch_size, rank=rank, world_size=world_size,
                           collate_fn=collate_fn, num_workers=cfg.num_workers)
    for i, batch in enumerate(batches):
        if cfg.eval_steps and i >= cfg.eval_steps:
            break
        batch = send_to_device(batch, acc.device)
        n = float(token_counter(batch))
        loss = forward_loss(model, batch, bf16=cfg.bf16, device_type=acc.device.type)
        total += torch.tensor([loss.double().item() * n, n], dtype=torch.float64, device=acc.device)
    if world_size > 1:
        total = acc.reduce(total, "sum")
    return (total[0] / total[1]).item() if total[1] > 0 else math.nan
