"""What the trainer records in its run directory: metric lines, TensorBoard scalars, evaluations, checkpoints.

:class:`Recorder` is the half of :class:`~synthformer.train.Trainer` that writes; the loop itself is in
:mod:`synthformer.train.trainer`. Only the main process writes files; evaluation and ``save`` are collectives.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import send_to_device
from torch import nn

from .checkpoint import capture_rng_state, latest_checkpoint, save_checkpoint
from .config import TrainConfig, to_dict
from .distributed import full_model_state, full_optimizer_state, unsharded
from .hooks import preserved_rng
from .loader import BatchStream, eval_batches
from .rundir import RunDir

__all__ = ["Recorder", "format_metrics"]

logger = logging.getLogger(__name__)

_STATE_VERSION = 1


def _duration(seconds: float) -> str:
    """``1h02m``, ``4m05s`` or ``12s``."""
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def format_metrics(record: Mapping[str, Any]) -> str:
    """Metrics for a log line: ``name value`` pairs, floats rounded to 4 decimals (large ones to 2), integers
    with thousands separators."""
    parts = []
    for key, value in record.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            parts.append(f"{key} {value}")
        elif isinstance(value, int):
            parts.append(f"{key} {value:,}")
        else:
            parts.append(f"{key} {value:.2f}" if abs(value) >= 1000 else f"{key} {value:.4f}")
    return ", ".join(parts)


class Recorder:
    """Logging, evaluation and checkpoints of a training run (a base of :class:`~synthformer.train.Trainer`).

    It uses the trainer's state: the attributes annotated below, set by ``Trainer.__init__``, and ``_forward``.
    """

    config: TrainConfig
    rundir: RunDir
    accelerator: Accelerator
    model: nn.Module
    is_main: bool
    sharded: bool
    rank: int
    world_size: int
    step: int
    batches_consumed: int
    tokens_seen: int
    eval_data: Any | None
    eval_fn: Callable[[nn.Module], Mapping[str, Any]] | None
    collate_fn: Callable[[list[Any]], Any] | None
    token_counter: Callable[[Mapping[str, Any]], int | torch.Tensor]
    last_metrics: dict[str, Any]
    _optimizer: torch.optim.Optimizer
    scheduler: Any
    _stream: BatchStream
    _tb_writer: Any
    _last_saved_step: int
    _last_eval_step: int
    _step_lr: float
    _win_loss: torch.Tensor | float
    _win_micro: int
    _win_tokens: int
    _win_start: float
    _forward: Callable[[nn.Module, Any], torch.Tensor]
    heartbeat_s: float | None
    _heartbeat_start: tuple[float, int]
    _last_heartbeat: float
    _elapsed_offset: float
    _clock_start: float | None

    def elapsed_s(self) -> float:
        """Wall seconds this run has spent in :meth:`train` so far, over every sitting (a resumed run continues
        from its checkpoint's count; the time lost after that checkpoint is not counted). Evaluations and
        checkpoints inside training are included: it is the time axis a user waits along."""
        running = time.perf_counter() - self._clock_start if self._clock_start is not None else 0.0
        return self._elapsed_offset + running

    def _reset_window(self) -> None:
        self._win_loss = 0.0  # a tensor sum: no device sync per micro-batch
        self._win_micro = 0
        self._win_tokens = 0
        self._win_start = time.perf_counter()

    def _log_train(self, grad_norm: float | None, bar: Any) -> None:
        acc = self.accelerator
        elapsed = max(time.perf_counter() - self._win_start, 1e-9)
        stats = torch.tensor(
            [float(self._win_loss), float(self._win_micro), float(self._win_tokens)],
            dtype=torch.float64, device=acc.device,
        )
        if self.world_size > 1:
            stats = acc.reduce(stats, "sum")
        loss = (stats[0] / stats[1]).item()
        record = {
            "step": self.step,
            "loss": loss,
            "lr": self._step_lr,
            "tokens_per_s": stats[2].item() / elapsed,
            "elapsed_s": round(self.elapsed_s(), 3),
        }
        if grad_norm is not None:
            record["grad_norm"] = grad_norm
        self._write_metrics(record)
        bar.set_postfix(loss=f"{loss:.4f}", lr=f"{self._step_lr:.2e}", tok_s=f"{record['tokens_per_s']:.0f}")
        self.last_metrics.update(record)
        self._reset_window()

    def _heartbeat(self) -> None:
        """Log ``step S/N (P%): loss, tokens/s, elapsed, ETA`` when ``heartbeat_s`` has passed since the last one."""
        now = time.perf_counter()
        if self.heartbeat_s is None or not self.is_main or now - self._last_heartbeat < self.heartbeat_s:
            return
        self._last_heartbeat = now
        start, first_step = self._heartbeat_start
        elapsed = now - start
        done = self.step - first_step
        steps = self.config.steps
        eta = (steps - self.step) * elapsed / max(done, 1)
        window = max(now - self._win_start, 1e-9)
        loss = f"{float(self._win_loss) / self._win_micro:.4f}" if self._win_micro else "-"
        logger.info("step %d/%d (%.0f%%): loss %s, %s tokens/s, elapsed %s, ETA %s", self.step, steps,
                    100 * self.step / steps, loss, f"{self._win_tokens / window:,.0f}", _duration(elapsed),
                    _duration(eta))

    def _write_metrics(self, record: Mapping[str, Any]) -> None:
        if not self.is_main:
            return
        self.rundir.append_metrics(record)
        logger.debug("%s", record)
        if self._tb_writer is not None:
            for key, value in record.items():
                if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
                    self._tb_writer.add_scalar(key.replace("eval_", "eval/", 1), value, self.step)

    @property
    def eval_available(self) -> bool:
        """True if there is eval data or an eval function."""
        return self.eval_data is not None or self.eval_fn is not None

    def evaluate(self) -> dict[str, Any]:
        """Mean eval loss (weighted by target count, over all processes) plus ``eval_fn``'s metrics.

        Runs in eval mode without gradients, and leaves the global RNG streams as it found them, so a run's
        training trajectory does not depend on how often it is evaluated.
        """
        acc = self.accelerator
        model = acc.unwrap_model(self.model)  # no DDP collectives: processes may see different batch counts
        was_training = model.training
        result: dict[str, Any] = {}
        model.eval()
        try:
            with preserved_rng(), torch.no_grad(), unsharded(model):
                if self.eval_data is not None:
                    result["eval_loss"] = self._eval_loss(model)
                if self.eval_fn is not None:
                    for key, value in dict(self.eval_fn(model)).items():
                        if isinstance(value, torch.Tensor):
                            value = value.item()
                        result[key if key.startswith("eval_") else f"eval_{key}"] = value
        finally:
            model.train(was_training)
        self._last_eval_step = self.step
        self._write_metrics({"step": self.step, **result, "elapsed_s": round(self.elapsed_s(), 3)})
        logger.info("step %d eval: %s", self.step, format_metrics(result))
        self.last_metrics.update(result)
        return result

    def _eval_loss(self, model: nn.Module) -> float:
        """Mean loss over the eval data (its first ``eval_steps`` batches per process), weighted by targets."""
        acc, cfg = self.accelerator, self.config
        total = torch.zeros(2, dtype=torch.float64, device=acc.device)
        batches = eval_batches(
            self.eval_data, batch_size=cfg.batch_size, rank=self.rank, world_size=self.world_size,
            collate_fn=self.collate_fn, num_workers=cfg.num_workers,
        )
        for i, batch in enumerate(batches):
            if cfg.eval_steps and i >= cfg.eval_steps:
                break
            batch = send_to_device(batch, acc.device)
            n = float(self.token_counter(batch))
            loss = self._forward(model, batch)
            total += torch.tensor([loss.double().item() * n, n], dtype=torch.float64, device=acc.device)
        if self.world_size > 1:
            total = acc.reduce(total, "sum")
        return (total[0] / total[1]).item() if total[1] > 0 else math.nan

    def _trainer_state(self, batches_consumed: int, tokens_seen: int) -> dict[str, Any]:
        per_epoch = self._stream.batches_per_epoch
        return {
            "version": _STATE_VERSION,
            "batches_consumed": batches_consumed,
            "tokens_seen": tokens_seen,
            "elapsed_s": round(self.elapsed_s(), 3),
            "epoch": batches_consumed // per_epoch if per_epoch else None,
            "world_size": self.world_size,
            "config": to_dict(self.config),
        }

    def _write_checkpoint(self, rng_states: list[dict[str, Any]], batches: int, tokens: int,
                          gathered: tuple[dict[str, Any], dict[str, Any]] | None = None) -> Path:
        """Save on the main process; ``gathered``: the whole model and optimizer states of a sharded model."""
        model, optimizer = gathered or (self.accelerator.unwrap_model(self.model), self._optimizer)
        try:
            path = save_checkpoint(
                self.rundir.path, self.step, model,
                optimizer=optimizer, scheduler=self.scheduler, rng_states=rng_states,
                trainer_state=self._trainer_state(batches, tokens), max_checkpoints=self.config.max_checkpoints,
            )
        except OSError as err:  # a full disk, a quota, a vanished mount: say what is safe and how to go on
            previous = latest_checkpoint(self.rundir.path)
            kept = (f"the previous checkpoint ({previous.name}) is intact" if previous is not None
                    else "there is no earlier checkpoint")
            raise OSError(err.errno, f"could not save the checkpoint of step {self.step} in {self.rundir.path}: "
                                     f"{err.strerror or err}; {kept}; fix the cause and continue with --resume"
                          ) from err
        self._last_saved_step = self.step
        return path

    def save(self) -> Path | None:
        """Checkpoint the current step (collective: call on every process). Returns the path on the main one."""
        state = capture_rng_state()
        if self.world_size > 1:
            states: list[Any] = [None] * self.world_size
            torch.distributed.all_gather_object(states, state)
        else:
            states = [state]
        gathered = None
        if self.sharded:  # collectives: every process sends its shards, the main process gets the whole
            gathered = full_model_state(self.model), full_optimizer_state(self.model, self._optimizer)
        path = None
        if self.is_main:
            path = self._write_checkpoint(states, self.batches_consumed, self.tokens_seen, gathered)
        self._last_saved_step = self.step
        self.accelerator.wait_for_everyone()
        return path
