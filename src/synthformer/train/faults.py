"""Faults a long run meets and the one-line errors they end in: a step whose loss or gradients are not finite, an
out-of-memory step, and a process that died or hangs under ``torchrun`` (docs/reliability.md, "Long runs").

Each ends the run with :class:`TrainingFailed` (a user error to the command line: one line, exit status 2) naming
the step, what is safe on disk and what to try. The trainer decides *when*; this module says *what*: the checks, the
agreement between processes, and the messages.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator

from .config import TrainConfig
from .distributed import as_float
from .run_errors import RunError

__all__ = ["OutOfMemory", "TrainingFailed", "agree", "agree_max", "describe_batch", "finite", "gradient_norm",
           "is_collective_failure", "is_out_of_memory", "lost_process_message", "nonfinite_message",
           "out_of_memory_detail", "weights_finite"]


class TrainingFailed(RunError):
    """Training stopped on a fault it cannot go past; the message names the step, the checkpoint that is safe and
    what to try."""


class OutOfMemory(TrainingFailed):
    """A step ran out of memory (``detail``: the batch and the options that reduce memory); the trainer saves the
    last completed step and raises a :class:`TrainingFailed` that says so."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def agree_max(accelerator: Accelerator, values: list[float]) -> list[float]:
    """The largest of each value over all processes: one all-reduce of a few numbers in float64, which holds flags
    and signal codes exactly beside a loss (a collective; with one process, ``values`` itself)."""
    if accelerator.num_processes == 1:
        return [float(v) for v in values]
    flags = torch.tensor(values, dtype=torch.float64, device=accelerator.device)
    torch.distributed.all_reduce(flags, op=torch.distributed.ReduceOp.MAX)
    return [float(v) for v in flags.tolist()]


def agree(accelerator: Accelerator, values: list[int]) -> list[int]:
    """:func:`agree_max` of integers (flags, codes)."""
    return [int(v) for v in agree_max(accelerator, [float(v) for v in values])]


def gradient_norm(parameters: Iterable[torch.nn.Parameter]) -> float:
    """The global L2 norm of the gradients (what clipping computes), for a run without clipping: under FSDP the
    shards' norms are combined into the whole model's (a collective)."""
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    return as_float(torch.nn.utils.get_total_norm(grads, 2.0))


def nonfinite_message(step: int, loss: float, grad_norm: float, kept: str, config: TrainConfig,
                      in_a_row: int) -> str:
    """The error of a run stopped by a non-finite step (``in_a_row``: how many came one after the other; ``kept``:
    which checkpoint is good, :func:`~synthformer.train.divergence.go_back_to`)."""
    what = f"the loss is {loss:g} and the gradient norm {grad_norm:g}"
    row = (f" ({in_a_row} non-finite steps in a row, train.nonfinite_limit {config.nonfinite_limit})"
           if config.nonfinite == "skip" else "")
    # resuming continues from the latest checkpoint: advised only when that one is the good one
    resume = ", or resume with train.nonfinite=skip to drop such steps" if kept.startswith("the last good") else ""
    return (f"step {step}: {what}{row}; nothing was saved from it, {kept}; try a lower train.lr or more "
            f"train.warmup_steps, train.grad_clip (e.g. 1.0), train.bf16=false{resume}")


def is_out_of_memory(err: BaseException) -> bool:
    """A GPU's ``torch.OutOfMemoryError`` or the CPU allocator's "can't allocate memory"."""
    if isinstance(err, getattr(torch, "OutOfMemoryError", ())):
        return True
    text = str(err)
    return isinstance(err, RuntimeError) and ("DefaultCPUAllocator: can't allocate" in text
                                              or "CUDA out of memory" in text)


def describe_batch(batch: Any) -> str:
    """``"8 examples, lengths input_ids 128, labels 128"``: the size and sequence lengths of a micro-batch."""
    if not isinstance(batch, Mapping):
        return type(batch).__name__
    tensors = {k: v for k, v in batch.items() if isinstance(v, torch.Tensor) and v.ndim > 0}
    size = next((v.shape[0] for v in tensors.values()), "?")
    lengths = ", ".join(f"{k} {v.shape[1]}" for k, v in tensors.items() if v.ndim >= 2)
    return f"{size} examples" + (f", lengths {lengths}" if lengths else "")


def out_of_memory_detail(step: int, batch: Any, config: TrainConfig) -> str:
    """What an out-of-memory step was doing and the options that reduce memory."""
    return (f"step {step} ran out of memory on a micro-batch of {describe_batch(batch)} (train.batch_size "
            f"{config.batch_size} per process, train.grad_accum {config.grad_accum}); reduce train.batch_size and "
            "raise train.grad_accum to keep the batch, lower task.max_len, set train.bf16=true, or use the fused "
            "attention path (synthformer.attention.fast.fast_path_settings(fused='always'))")


def is_collective_failure(err: BaseException) -> bool:
    """An error of a collective operation: another process died (its connection closed) or did not answer within
    the process group's timeout."""
    if isinstance(err, getattr(torch.distributed, "DistError", ())):
        return True
    text = str(err).lower()
    return isinstance(err, RuntimeError) and any(s in text for s in (
        "gloo", "nccl", "connection closed", "connection reset", "timed out", "timeout", "broken pipe"))


def lost_process_message(err: BaseException, rank: int, world_size: int, step: int, last: Path | None,
                         config: TrainConfig) -> str:
    """The error of a process whose collective failed after ``step`` (the last completed step: the failure came in
    the next one or in this one's evaluation or save), with the backend's message cut short."""
    cause = " ".join(str(err).split())
    cause = cause if len(cause) <= 120 else cause[:120] + "..."
    kept = f"the newest complete checkpoint is {last}" if last is not None else "there is no checkpoint yet"
    timeout = config.collective_timeout_s
    shown = f"{timeout:g}"
    return (f"process {rank} of {world_size} lost the other processes after step {step} (one died, or did not answer "
            f"within train.collective_timeout_s={shown} s: {cause}); {kept}; continue with --resume (on any number "
            "of processes)")


def finite(*values: float) -> bool:
    """Every value is finite."""
    return all(math.isfinite(v) for v in values)


def weights_finite(model: torch.nn.Module) -> bool:
    """Every parameter of ``model`` (this process's shards of a sharded one) is finite."""
    for p in model.parameters():
        local = p.to_local() if hasattr(p, "to_local") else p  # an FSDP2 DTensor: this process's shard
        if not bool(torch.isfinite(local).all()):
            return False
    return True
