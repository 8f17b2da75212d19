"""What the trainer records in its run directory: metric lines, TensorBoard scalars, heartbeats, evaluations and
checkpoints.

:class:`Recorder` is an object the :class:`~synthformer.train.Trainer` holds: it keeps the state of recording
(the window of steps since the last log line, the run's clock, the steps last evaluated and saved) and is handed
everything else as arguments. Only the main process writes files; the trainer runs the collectives (reductions,
gathering the RNG states and a sharded model) before it asks the recorder to write.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from torch import nn

from synthformer.common import to_dict

from .best import BestRecord
from .config import TrainConfig
from .run import Run

__all__ = ["Recorder", "format_metrics", "trainer_state"]

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
    """Records a training run in ``run`` (see the module docstring).

    Args:
        run: the open run, which writes the files (started: the directory exists).
        config: the training settings (``steps`` for the heartbeat's ETA, ``max_checkpoints``).
        is_main: whether this process writes (the main process of a multi-process run).
        heartbeat_s: log a heartbeat line at most this often (None: never; the progress bar shows it instead).
    """

    def __init__(self, run: Run, config: TrainConfig, *, is_main: bool, heartbeat_s: float | None) -> None:
        self.run = run
        self.config = config
        self.is_main = is_main
        self.heartbeat_s = heartbeat_s
        self.tb_writer: Any = None  # a TensorBoard SummaryWriter on the main process, when asked for
        self.trackers: list[Any] = []  # accelerate trackers (train.log_with) on the main process
        self.last_metrics: dict[str, Any] = {}
        self.last_saved_step = -1
        self.last_eval_step = -1
        self.elapsed_offset = 0.0  # seconds of training in earlier sittings (a resumed run's checkpoint)
        self._clock_start: float | None = None
        self._heartbeat_start = (time.perf_counter(), 0)
        self._last_heartbeat = time.perf_counter()
        self.reset_window()

    # -- the clock and the window of steps since the last log line ----------------------------------------------
    def elapsed_s(self) -> float:
        """Wall seconds this run has spent in training so far, over every sitting (a resumed run continues
        from its checkpoint's count; the time lost after that checkpoint is not counted). Evaluations and
        checkpoints inside training are included: it is the time axis a user waits along."""
        running = time.perf_counter() - self._clock_start if self._clock_start is not None else 0.0
        return self.elapsed_offset + running

    def start_clock(self, step: int) -> None:
        """Training (re)starts at ``step``: run the clock, open a window, time heartbeats from here."""
        self.reset_window()
        now = time.perf_counter()
        self._heartbeat_start = (now, step)
        self.elapsed_offset, self._clock_start = self.elapsed_s(), now  # train() may run again
        self._last_heartbeat = now

    def stop_clock(self) -> None:
        """Training stopped: keep the seconds so far."""
        self.elapsed_offset, self._clock_start = self.elapsed_s(), None

    def reset_window(self) -> None:
        self._win_loss: torch.Tensor | float = 0.0  # a tensor sum: no device sync per micro-batch
        self._win_micro = 0
        self._win_tokens = 0
        self._win_start = time.perf_counter()

    def add_micro_batch(self, loss: torch.Tensor, tokens: int) -> None:
        """Count one micro-batch's (detached) loss and target tokens in the window."""
        self._win_loss = self._win_loss + loss
        self._win_micro += 1
        self._win_tokens = self._win_tokens + tokens

    def exclude(self, seconds: float) -> None:
        """Leave ``seconds`` (evaluating, saving) out of the window's tokens/s: they are not training throughput."""
        self._win_start += seconds

    # -- lines ---------------------------------------------------------------------------------------------------
    def log_train(self, step: int, lr: float, grad_norm: float | None, accelerator: Accelerator,
                  world_size: int, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Write the window's training line (loss and tokens/s summed over the processes: a collective) and
        start a new window; returns the record (``extra``: more fields for it, e.g. the skipped steps)."""
        elapsed = max(time.perf_counter() - self._win_start, 1e-9)
        stats = torch.tensor(
            [float(self._win_loss), float(self._win_micro), float(self._win_tokens)],
            dtype=torch.float64, device=accelerator.device,
        )
        if world_size > 1:
            stats = accelerator.reduce(stats, "sum")
        loss = (stats[0] / stats[1]).item()
        record = {
            "step": step,
            "loss": loss,
            "lr": lr,
            "tokens_per_s": stats[2].item() / elapsed,
            "elapsed_s": round(self.elapsed_s(), 3),
        }
        if grad_norm is not None:
            record["grad_norm"] = grad_norm
        record.update(extra or {})
        self.write(record, step)
        self.last_metrics.update(record)
        self.reset_window()
        return record

    def heartbeat(self, step: int) -> None:
        """Log ``step S/N (P%): loss, tokens/s, elapsed, ETA`` when ``heartbeat_s`` has passed since the last one."""
        now = time.perf_counter()
        if self.heartbeat_s is None or not self.is_main or now - self._last_heartbeat < self.heartbeat_s:
            return
        self._last_heartbeat = now
        start, first_step = self._heartbeat_start
        elapsed = now - start
        done = step - first_step
        steps = self.config.steps
        eta = (steps - step) * elapsed / max(done, 1)
        window = max(now - self._win_start, 1e-9)
        loss = f"{float(self._win_loss) / self._win_micro:.4f}" if self._win_micro else "-"
        logger.info("step %d/%d (%.0f%%): loss %s, %s tokens/s, elapsed %s, ETA %s", step, steps,
                    100 * step / steps, loss, f"{self._win_tokens / window:,.0f}", _duration(elapsed),
                    _duration(eta))

    def write(self, record: Mapping[str, Any], step: int) -> None:
        """Append ``record`` to ``metrics.jsonl`` (and its numbers to TensorBoard) on the main process."""
        if not self.is_main:
            return
        self.run.append_metrics(record)
        logger.debug("%s", record)
        if self.tb_writer is not None:
            for key, value in record.items():
                if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
                    self.tb_writer.add_scalar(key.replace("eval_", "eval/", 1), value, step)
        numbers = {k: v for k, v in record.items()
                   if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool)}
        for tracker in self.trackers:
            tracker.log(numbers, step=step)

    def record_eval(self, step: int, result: Mapping[str, Any]) -> None:
        """Write and log an evaluation of ``step``."""
        self.last_eval_step = step
        self.write({"step": step, **result, "elapsed_s": round(self.elapsed_s(), 3)}, step)
        logger.info("step %d eval: %s", step, format_metrics(result))
        self.last_metrics.update(result)

    # -- checkpoints ---------------------------------------------------------------------------------------------
    def write_checkpoint(self, step: int, model: nn.Module, optimizer: Any, scheduler: Any,
                         rng_states: list[dict[str, Any]], state: dict[str, Any],
                         best: BestRecord | None = None, keep: Collection[str] = ()) -> Path:
        """Save a checkpoint of ``step`` through the run (call on the main process only; ``best``: it is the new
        best; ``keep``: older checkpoints rotation must keep)."""
        path = self.run.save_checkpoint(step, model, optimizer=optimizer, scheduler=scheduler, rng_states=rng_states,
                                        trainer_state=state, max_checkpoints=self.config.max_checkpoints, best=best,
                                        keep=keep)
        self.last_saved_step = step
        return path

    def close(self) -> None:
        """Close the TensorBoard writer and finish the trackers."""
        if self.tb_writer is not None:
            self.tb_writer.close()
            self.tb_writer = None
        trackers, self.trackers = self.trackers, []
        for tracker in trackers:
            tracker.finish()


def trainer_state(config: TrainConfig, *, batches_consumed: int, tokens_seen: int, elapsed_s: float,
                  batches_per_epoch: int | None, world_size: int) -> dict[str, Any]:
    """``trainer_state.json`` of a checkpoint: where the data stream stands, and the settings it was trained with."""
    return {
        "version": _STATE_VERSION,
        "batches_consumed": batches_consumed,
        "tokens_seen": tokens_seen,
        "elapsed_s": round(elapsed_s, 3),
        "epoch": batches_consumed // batches_per_epoch if batches_per_epoch else None,
        "world_size": world_size,
        "config": to_dict(config),
    }
