"""The model-agnostic training loop.

Any ``nn.Module`` whose ``forward(**batch)`` returns a mapping with a scalar ``"loss"`` (docs/CONTRACTS.md)
can be trained. The loop is built on ``accelerate.Accelerator``, so the same script runs on one CPU, one GPU, or
under ``torchrun --nproc_per_node=N`` / ``accelerate launch`` with DDP (gloo on CPU).

Resume is exact: model, optimizer, scheduler, every process's RNG state and the data position are
checkpointed, so ``kill`` + ``resume=True`` gives bit-identical weights to an uninterrupted run on the same
hardware (CPU, same seed, same world size).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import random
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import send_to_device
from torch import nn
from tqdm.auto import tqdm

from .checkpoint import (
    CHECKPOINTS_DIR,
    atomic_write_text,
    capture_rng_state,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    restore_rng_state,
    save_checkpoint,
)
from .config import TrainConfig, dump_config, to_dict
from .loader import BatchStream, eval_batches
from .optim import build_optimizer, build_scheduler

__all__ = ["Trainer", "count_tokens", "seed_everything"]

logger = logging.getLogger(__name__)

METRICS_FILE = "metrics.jsonl"
CONFIG_FILE = "config.yaml"
TENSORBOARD_DIR = "tensorboard"
_STATE_VERSION = 1


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


def _default_accelerator() -> Accelerator:
    # accelerate sets up multi-process CPU (gloo) training only when told cpu=True; without a GPU we do so.
    has_gpu = torch.accelerator.is_available() if hasattr(torch, "accelerator") else torch.cuda.is_available()
    return Accelerator(cpu=not has_gpu)


def _existing_run_files(run_dir: Path) -> list[str]:
    """What in ``run_dir`` belongs to an earlier run (empty if nothing: safe to start fresh)."""
    found = []
    ckpt_root = run_dir / CHECKPOINTS_DIR
    if ckpt_root.is_dir() and any(not p.name.startswith(".") for p in ckpt_root.iterdir()):
        n = len(list_checkpoints(run_dir))
        found.append(f"{CHECKPOINTS_DIR}/ ({n} checkpoint{'s' if n != 1 else ''})")
    metrics = run_dir / METRICS_FILE
    if metrics.is_file() and metrics.stat().st_size > 0:
        found.append(METRICS_FILE)
    return found


def _truncate_metrics(path: Path, step: int) -> None:
    """Drop metric lines logged after ``step`` (by a run that was killed after its last checkpoint)."""
    if not path.is_file():
        return
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            if json.loads(line).get("step", 0) > step:
                continue
        except (json.JSONDecodeError, AttributeError):
            continue  # a line cut short by the crash
        kept.append(line)
    atomic_write_text(path, "".join(f"{line}\n" for line in kept))


def _require_tensorboard() -> Any:
    """``torch.utils.tensorboard.SummaryWriter``, imported only when TensorBoard logging is on."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as err:
        raise ImportError(
            "train.tensorboard=true needs the 'tensorboard' package: pip install tensorboard "
            "(or set train.tensorboard=false; metrics.jsonl is always written)"
        ) from err
    return SummaryWriter


class _InterruptGuard:
    """Turn the first SIGINT into a request to stop at the next step boundary (then save and raise).

    Stopping between steps means the checkpoint never holds half-applied optimizer updates. A second Ctrl-C
    raises ``KeyboardInterrupt`` at once. Signal handlers can only be installed from the main thread; elsewhere
    this is a no-op and an interrupt arrives as a plain ``KeyboardInterrupt``.
    """

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None
        self._installed = False

    def _handler(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        logger.warning("interrupt: finishing this step and saving a checkpoint (Ctrl-C again to stop at once)")

    def __enter__(self) -> _InterruptGuard:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, self._handler)
            self._installed = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._installed:
            previous = self._previous if self._previous is not None else signal.default_int_handler
            signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _preserved_rng() -> Iterator[None]:
    """Run a block without disturbing the global RNG streams (evaluation must not change training)."""
    state = capture_rng_state()
    try:
        yield
    finally:
        restore_rng_state(state)


class Trainer:
    """Train ``model`` on ``train_data`` and record the run in ``run_dir``.

    Constructing a Trainer seeds the global RNGs with ``config.seed + rank`` (or restores them from the
    checkpoint when resuming), builds the optimizer and schedule from ``config``, and wraps the model with
    ``accelerator.prepare`` (DDP when several processes run). ``config.batch_size`` is per process and
    micro-batch; an optimizer step sees ``batch_size * grad_accum * world_size`` examples.

    Args:
        model: any module with ``forward(**batch) -> {"loss": scalar, "logits": ...}``. Seed your RNGs before
            building it if its initialisation must be reproducible (see :func:`seed_everything`).
        train_data: a map-style dataset of examples (collated with ``collate_fn``) or an iterable of ready
            batches (see :mod:`synthformer.train.loader`). Batches must be mappings of keyword arguments.
        config: :class:`TrainConfig`.
        run_dir: the run directory (created if needed).
        eval_data: optional data of the same kind for the periodic mean eval loss (token-weighted).
        eval_fn: optional ``eval_fn(model) -> dict`` for task metrics (BLEU, accuracy, ...). It is called on
            every process with the unwrapped model in eval mode under ``torch.no_grad()``; the values of the
            main process are logged, prefixed with ``eval_``.
        accelerator: an ``accelerate.Accelerator``; by default one is made (CPU/gloo when there is no GPU).
            Its mixed-precision setting is not used: ``config.bf16`` controls autocast.
        resume: continue from ``run_dir/checkpoints/latest`` (starts fresh if there is none).
        overwrite: start fresh even if ``run_dir`` holds an earlier run (deletes its checkpoints, metrics and
            TensorBoard logs; nothing else).
        collate_fn: batches a list of examples (map-style data); default ``torch.utils.data.default_collate``.
        run_config: what to write to ``run_dir/config.yaml`` (e.g. the whole experiment config); default the
            ``TrainConfig``.
        token_counter: ``batch -> number of targets`` for tokens/s; default :func:`count_tokens`.
        progress: show a tqdm progress bar on the main process.
    """

    def __init__(
        self,
        model: nn.Module,
        train_data: Any,
        config: TrainConfig,
        run_dir: str | Path,
        eval_data: Any | None = None,
        eval_fn: Callable[[nn.Module], Mapping[str, Any]] | None = None,
        accelerator: Accelerator | None = None,
        *,
        resume: bool = False,
        overwrite: bool = False,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        run_config: Any | None = None,
        token_counter: Callable[[Mapping[str, Any]], int | torch.Tensor] | None = None,
        progress: bool = True,
    ) -> None:
        if resume and overwrite:
            raise ValueError("resume=True and overwrite=True contradict each other; choose one")
        self.config = config
        self.run_dir = Path(run_dir)
        self.eval_data = eval_data
        self.eval_fn = eval_fn
        self.collate_fn = collate_fn
        self.token_counter = token_counter or count_tokens
        self.progress = progress
        self.accelerator = acc = accelerator if accelerator is not None else _default_accelerator()
        self.is_main = acc.is_main_process
        self.rank = acc.process_index
        self.world_size = acc.num_processes
        # Checked on every process (not only the one that writes), so that none waits for a failed peer.
        summary_writer = _require_tensorboard() if config.tensorboard else None

        # Never destroy a user's run: every process checks before the main one deletes anything.
        existing = _existing_run_files(self.run_dir)
        if existing and not (resume or overwrite):
            raise FileExistsError(
                f"{self.run_dir} already holds a run ({', '.join(existing)}); pass resume=True to continue it, "
                "overwrite=True to delete its checkpoints and metrics and start over, or choose another run dir"
            )
        resume_from = latest_checkpoint(self.run_dir) if resume else None
        if resume and resume_from is None:
            logger.info("resume requested but %s has no checkpoint: starting fresh", self.run_dir)
        acc.wait_for_everyone()
        if self.is_main:
            if overwrite and existing:
                logger.warning("overwrite=True: deleting the earlier run's files in %s", self.run_dir)
                shutil.rmtree(self.run_dir / CHECKPOINTS_DIR, ignore_errors=True)
                shutil.rmtree(self.run_dir / TENSORBOARD_DIR, ignore_errors=True)
                (self.run_dir / METRICS_FILE).unlink(missing_ok=True)
            self.run_dir.mkdir(parents=True, exist_ok=True)

        # Per-process seeds: model replicas are synchronised by DDP, while dropout masks should differ.
        seed_everything(config.seed + self.rank)
        self._optimizer = build_optimizer(model, config)
        self.scheduler = build_scheduler(self._optimizer, config)
        # The scheduler is deliberately not prepared: accelerate would step it once per process per step.
        self.model, self.optimizer = acc.prepare(model, self._optimizer)

        self.step = 0
        self.batches_consumed = 0
        self.tokens_seen = 0
        ckpt = None
        if resume_from is not None:
            ckpt = load_checkpoint(
                resume_from, acc.unwrap_model(self.model), optimizer=self._optimizer, scheduler=self.scheduler,
                map_location="cpu",  # optimizer.load_state_dict moves the state next to each parameter
            )
            self._check_resumed_state(ckpt.trainer_state)
            self.step = ckpt.step
            self.batches_consumed = int(ckpt.trainer_state["batches_consumed"])
            self.tokens_seen = int(ckpt.trainer_state.get("tokens_seen", 0))
            logger.info("resumed from %s (step %d)", ckpt.path, self.step)

        # The stream is positioned before the RNG restore: fast-forwarding an iterable may consume RNG.
        self._stream = BatchStream(
            train_data, batch_size=config.batch_size, seed=config.seed, rank=self.rank,
            world_size=self.world_size, collate_fn=collate_fn, num_workers=config.num_workers,
            start=self.batches_consumed,
        )
        if ckpt is not None:
            states = ckpt.rng_states or []
            if len(states) == self.world_size:
                restore_rng_state(states[self.rank])
            else:
                logger.warning(
                    "checkpoint has RNG states for %d process(es), this run has %d: reseeding (the run "
                    "continues correctly but is not bit-identical to an uninterrupted one)",
                    len(states), self.world_size,
                )
                seed_everything(config.seed + self.rank + 7919 * self.step)

        self._tb_writer = None
        if self.is_main:
            if resume:
                # Lines logged after the checkpoint (or all of them, if there is none) belong to lost steps.
                _truncate_metrics(self.run_dir / METRICS_FILE, self.step)
            if ckpt is None or not (self.run_dir / CONFIG_FILE).exists():
                atomic_write_text(self.run_dir / CONFIG_FILE, dump_config(run_config or config))
            if summary_writer is not None:
                # purge_step hides the events a killed run logged after the checkpoint we resume from.
                self._tb_writer = summary_writer(
                    log_dir=str(self.run_dir / TENSORBOARD_DIR), purge_step=self.step if resume else None
                )
        acc.wait_for_everyone()

        self._last_saved_step = self.step if ckpt is not None else -1
        self._last_eval_step = -1
        self._in_update = False
        self._reset_window()
        self.last_metrics: dict[str, Any] = {}

    # ---------------------------------------------------------------------------------------------------------
    # setup helpers

    def _check_resumed_state(self, state: Mapping[str, Any]) -> None:
        if state.get("world_size", self.world_size) != self.world_size:
            logger.warning(
                "checkpoint was written by %s process(es), resuming with %d: the data order changes",
                state.get("world_size"), self.world_size,
            )
        saved = state.get("config", {})
        current = to_dict(self.config)
        changed = sorted(k for k in current if k in saved and saved[k] != current[k])
        if changed:
            logger.warning(
                "resuming with changed settings: %s",
                ", ".join(f"{k}: {saved[k]!r} -> {current[k]!r}" for k in changed),
            )

    # ---------------------------------------------------------------------------------------------------------
    # the loop

    def _reset_window(self) -> None:
        self._win_loss: torch.Tensor | float = 0.0  # a tensor sum: no device sync per micro-batch
        self._win_micro = 0
        self._win_tokens = 0
        self._win_start = time.perf_counter()

    def _autocast(self) -> contextlib.AbstractContextManager:
        if not self.config.bf16:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.accelerator.device.type, dtype=torch.bfloat16)

    def _forward(self, model: nn.Module, batch: Any) -> torch.Tensor:
        if not isinstance(batch, Mapping):
            raise TypeError(f"a batch must be a mapping of keyword arguments for model(**batch), got {type(batch)}")
        with self._autocast():
            out = model(**batch)
        loss = out.get("loss") if isinstance(out, Mapping) else getattr(out, "loss", None)
        if not isinstance(loss, torch.Tensor) or loss.ndim != 0:
            raise TypeError(
                "model(**batch) must return a mapping with a scalar tensor under 'loss' (docs/CONTRACTS.md); "
                f"got {type(out).__name__} with loss={loss!r}"
            )
        return loss

    def _train_step(self) -> float | None:
        """One optimizer step over ``grad_accum`` micro-batches; returns the gradient norm if clipping."""
        acc, cfg = self.accelerator, self.config
        for micro in range(cfg.grad_accum):
            batch = send_to_device(next(self._stream), acc.device)
            self.batches_consumed += 1
            n_tokens = int(self.token_counter(batch))
            # Gradients are all-reduced only on the last micro-batch of the step.
            last = micro == cfg.grad_accum - 1
            with contextlib.nullcontext() if last else acc.no_sync(self.model):
                loss = self._forward(self.model, batch)
                # Mean of the micro-batch means: each micro-batch counts equally.
                acc.backward(loss / cfg.grad_accum)
            self._win_loss = self._win_loss + loss.detach().float()
            self._win_micro += 1
            self._win_tokens = self._win_tokens + n_tokens
            self.tokens_seen += n_tokens

        # From here to the step increment the weights change: an interrupt must not be saved half-way.
        self._in_update = True
        grad_norm = None
        if cfg.grad_clip > 0:
            grad_norm = float(acc.clip_grad_norm_(self.model.parameters(), cfg.grad_clip))
        self._step_lr = self._optimizer.param_groups[0]["lr"]
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self._in_update = False
        return grad_norm

    def _stop_requested(self, guard: _InterruptGuard) -> bool:
        if self.world_size == 1:
            return guard.requested
        # All processes must stop at the same step, or the checkpoint's collectives would hang.
        flag = torch.tensor([1.0 if guard.requested else 0.0], device=self.accelerator.device)
        return bool(self.accelerator.reduce(flag, "sum").item() > 0)

    def train(self) -> dict[str, Any]:
        """Train until ``config.steps``; returns the last logged metrics (train and eval).

        On an interrupt (Ctrl-C / SIGINT) a checkpoint of the last completed step is saved first, then
        ``KeyboardInterrupt`` is raised again.
        """
        cfg = self.config
        if self.step >= cfg.steps:
            logger.info("already at step %d of %d: nothing to train", self.step, cfg.steps)
            return self.last_metrics
        self.model.train()
        bar = tqdm(
            total=cfg.steps, initial=self.step, desc="train", dynamic_ncols=True,
            disable=not (self.progress and self.is_main),
        )
        self._reset_window()
        stop = False
        # While a step runs: what a checkpoint of the last completed step needs if an exception cuts it short.
        pending: tuple[dict[str, Any], int, int] | None = None
        with _InterruptGuard() as guard:
            try:
                while self.step < cfg.steps:
                    pending = (capture_rng_state(), self.batches_consumed, self.tokens_seen)
                    grad_norm = self._train_step()
                    pending = None
                    bar.update(1)
                    if self.step % cfg.log_every == 0 or self.step == cfg.steps:
                        self._log_train(grad_norm, bar)
                    paused = time.perf_counter()
                    if self.eval_available and cfg.eval_every > 0 and self.step % cfg.eval_every == 0:
                        self.evaluate()
                    if cfg.save_every > 0 and self.step % cfg.save_every == 0:
                        self.save()
                    # Time spent evaluating and saving is not training throughput.
                    self._win_start += time.perf_counter() - paused
                    if self._stop_requested(guard):
                        stop = True
                        break
            except KeyboardInterrupt:
                self._save_after_exception(pending)
                raise
            finally:
                bar.close()
                if stop or sys.exc_info()[0] is not None:
                    self._stream.close()
        if stop:
            if self._last_saved_step != self.step:
                self.save()
            raise KeyboardInterrupt
        if self.eval_available and self._last_eval_step != self.step:
            self.evaluate()
        if self._last_saved_step != self.step:
            self.save()
        if self._tb_writer is not None:
            self._tb_writer.flush()
        self._stream.close()  # free DataLoader workers; the stream reopens at its position if training goes on
        return self.last_metrics

    def _save_after_exception(self, pending: tuple[dict[str, Any], int, int] | None) -> None:
        """Save the last completed step after an exception (Ctrl-C) interrupted the loop (best effort).

        ``pending`` is the state captured before the step that was cut short, or None if the exception came
        after a step had completed (while logging, evaluating or saving): then the live state is consistent.
        """
        if self._in_update:
            logger.error("interrupted during an optimizer update: not saving (the weights are half-updated)")
            return
        if self._last_saved_step == self.step:
            return
        rng, batches, tokens = pending or (capture_rng_state(), self.batches_consumed, self.tokens_seen)
        # Other processes may be anywhere, so no collectives: the main process saves its own RNG state only.
        if self.is_main:
            self._write_checkpoint([rng], batches, tokens)

    # ---------------------------------------------------------------------------------------------------------
    # logging, evaluation, checkpoints

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
        }
        if grad_norm is not None:
            record["grad_norm"] = grad_norm
        self._write_metrics(record)
        bar.set_postfix(loss=f"{loss:.4f}", lr=f"{self._step_lr:.2e}", tok_s=f"{record['tokens_per_s']:.0f}")
        self.last_metrics.update(record)
        self._reset_window()

    def _write_metrics(self, record: Mapping[str, Any]) -> None:
        if not self.is_main:
            return
        with open(self.run_dir / METRICS_FILE, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
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
        acc, cfg = self.accelerator, self.config
        model = acc.unwrap_model(self.model)  # no DDP collectives: processes may see different batch counts
        was_training = model.training
        result: dict[str, Any] = {}
        model.eval()
        try:
            with _preserved_rng(), torch.no_grad():
                if self.eval_data is not None:
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
                        total += torch.tensor([loss.double().item() * n, n], dtype=torch.float64,
                                              device=acc.device)
                    if self.world_size > 1:
                        total = acc.reduce(total, "sum")
                    result["eval_loss"] = (total[0] / total[1]).item() if total[1] > 0 else math.nan
                if self.eval_fn is not None:
                    for key, value in dict(self.eval_fn(model)).items():
                        if isinstance(value, torch.Tensor):
                            value = value.item()
                        result[key if key.startswith("eval_") else f"eval_{key}"] = value
        finally:
            model.train(was_training)
        self._last_eval_step = self.step
        self._write_metrics({"step": self.step, **result})
        logger.info("step %d eval: %s", self.step, result)
        self.last_metrics.update(result)
        return result

    def _trainer_state(self, batches_consumed: int, tokens_seen: int) -> dict[str, Any]:
        per_epoch = self._stream.batches_per_epoch
        return {
            "version": _STATE_VERSION,
            "batches_consumed": batches_consumed,
            "tokens_seen": tokens_seen,
            "epoch": batches_consumed // per_epoch if per_epoch else None,
            "world_size": self.world_size,
            "config": to_dict(self.config),
        }

    def _write_checkpoint(self, rng_states: list[dict[str, Any]], batches: int, tokens: int) -> Path:
        path = save_checkpoint(
            self.run_dir, self.step, self.accelerator.unwrap_model(self.model),
            optimizer=self._optimizer, scheduler=self.scheduler, rng_states=rng_states,
            trainer_state=self._trainer_state(batches, tokens), max_checkpoints=self.config.max_checkpoints,
        )
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
        path = None
        if self.is_main:
            path = self._write_checkpoint(states, self.batches_consumed, self.tokens_seen)
        self._last_saved_step = self.step
        self.accelerator.wait_for_everyone()
        return path

    def close(self) -> None:
        """Release data loader workers and the TensorBoard writer."""
        self._stream.close()
        if self._tb_writer is not None:
            self._tb_writer.close()
            self._tb_writer = None
