"""What the training loop needs around it: seeding, counting targets, the default accelerator, RNG-neutral
evaluation, optional TensorBoard, and agreement between processes (the signal guard: :mod:`.signals`)."""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Any

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs

from .checkpoint import capture_rng_state, restore_rng_state

__all__ = [
    "any_process",
    "count_tokens",
    "default_accelerator",
    "preserved_rng",
    "require_tensorboard",
    "seed_everything",
]

logger = logging.getLogger(__name__)


def seed_everything(seed: int) -> None:
    """Seed python ``random``, numpy's global RNG and torch (CPU and all GPUs)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def count_tokens(batch: Mapping[str, Any]) -> int | torch.Tensor:
    """Number of training targets in a batch, for tokens/s.

    Sequence labels (2-D or more): the positions whose label is not -100. Per-example labels (1-D, e.g.
    classification): the batch size. Without labels: the number of ``input_ids`` (or the batch size).
    """
    labels = batch.get("labels")
    if isinstance(labels, torch.Tensor):
        return (labels != -100).sum() if labels.ndim >= 2 else labels.shape[0]
    ids = batch.get("input_ids")
    if isinstance(ids, torch.Tensor):
        return ids.numel()
    for value in batch.values():
        if isinstance(value, torch.Tensor) and value.ndim > 0:
            return value.shape[0]
    return 0


def default_accelerator(collective_timeout_s: float | None = None) -> Accelerator:
    """An ``Accelerator`` for this machine: the GPU if there is one, else CPU (gloo when several processes run).

    ``collective_timeout_s`` (``train.collective_timeout_s``) is how long a collective waits for the other processes
    (the process group's timeout); it takes effect when this creates the process group, the first time in a process.
    """
    # accelerate sets up multi-process CPU (gloo) training only when told cpu=True; without a GPU we do so.
    has_gpu = torch.accelerator.is_available() if hasattr(torch, "accelerator") else torch.cuda.is_available()
    handlers = [] if collective_timeout_s is None else [
        InitProcessGroupKwargs(timeout=timedelta(seconds=collective_timeout_s))]
    return Accelerator(cpu=not has_gpu, kwargs_handlers=handlers)


def any_process(accelerator: Accelerator, flag: bool) -> bool:
    """True on every process if ``flag`` is True on any (a collective: call it on every process)."""
    if accelerator.num_processes == 1:
        return flag
    value = torch.tensor([1.0 if flag else 0.0], device=accelerator.device)
    return bool(accelerator.reduce(value, "sum").item() > 0)


def require_tensorboard() -> Any:
    """``torch.utils.tensorboard.SummaryWriter``, imported only when TensorBoard logging is on."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as err:
        raise ImportError(
            "train.tensorboard=true needs the 'tensorboard' package: pip install tensorboard "
            "(or set train.tensorboard=false; metrics.jsonl is always written)"
        ) from err
    return SummaryWriter


@contextlib.contextmanager
def preserved_rng() -> Iterator[None]:
    """Run a block without disturbing the global RNG streams (evaluation must not change training)."""
    state = capture_rng_state()
    try:
        yield
    finally:
        restore_rng_state(state)
