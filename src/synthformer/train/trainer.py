"""The model-agnostic training loop.

Any ``nn.Module`` whose ``forward(**batch)`` returns a mapping with a scalar ``"loss"`` (docs/CONTRACTS.md)
can be trained. The loop is built on ``accelerate.Accelerator``, so the same script runs on one CPU, one GPU, or
under ``torchrun --nproc_per_node=N`` / ``accelerate launch`` with DDP (gloo on CPU), or with the model, its
gradients and optimizer state sharded by FSDP2 (``train.distributed: fsdp``, :mod:`~synthformer.train.distributed`).

Resume is exact: model, optimizer, scheduler, every process's RNG state and the data position are
checkpointed, so ``kill`` + ``resume=True`` gives bit-identical weights to an uninterrupted run on the same
hardware (CPU, same seed, same world size).

This module is the loop; the :class:`~synthformer.train.recording.Recorder` it holds writes what it logs, evaluates
and checkpoints, :mod:`~synthformer.train.evaluation` computes the forward pass and the evaluations, and
:class:`~synthformer.train.rundir.RunDir` owns the run directory (its files, earlier runs, its lock).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import send_to_device
from torch import nn
from tqdm.auto import tqdm

from synthformer.common.io import atomic_write_text

from .checkpoint import (
    STATE_FILE,
    CheckpointError,
    capture_rng_state,
    load_checkpoint,
    load_model_weights,
    restore_rng_state,
)
from .config import ConfigError, TrainConfig, dump_config
from .distributed import (
    ShardedOptimizerState,
    as_float,
    full_model_state,
    full_optimizer_state,
    gradient_sync,
    shard_model,
)
from .evaluation import evaluate_model, forward_loss
from .hooks import (
    InterruptGuard,
    any_process,
    count_tokens,
    default_accelerator,
    require_tensorboard,
    seed_everything,
)
from .loader import BatchStream
from .optim import build_optimizer, build_scheduler
from .preparation import lock_for_training, prepare_run_dir, warn_resumed_changes
from .recording import Recorder, trainer_state
from .rundir import RunDir
from .tracking import check_trackers, open_trackers

__all__ = ["Trainer", "count_tokens", "seed_everything"]

logger = logging.getLogger(__name__)


class Trainer:
    """Train ``model`` on ``train_data`` and record the run in ``run_dir``.

    Constructing a Trainer seeds the global RNGs with ``config.seed + rank`` (or restores them from the
    checkpoint when resuming), builds the optimizer and schedule from ``config``, and wraps the model with
    ``accelerator.prepare`` (DDP when several processes run; with ``config.distributed == "fsdp"`` it shards the
    model with FSDP2 instead: ``self.sharded`` is then True and ``self.model`` holds only this process's shards,
    see :mod:`~synthformer.train.distributed` for the whole state dict). ``config.batch_size`` is per process and
    micro-batch; an optimizer step sees ``batch_size * grad_accum * world_size`` examples.

    Args:
        model: any module with ``forward(**batch) -> {"loss": scalar, "logits": ...}``. Seed your RNGs before
            building it if its initialisation must be reproducible (see :func:`seed_everything`).
        train_data: a map-style dataset of examples (collated with ``collate_fn``) or an iterable of ready
            batches (see :mod:`synthformer.train.loader`). Batches must be mappings of keyword arguments.
        config: :class:`TrainConfig`.
        run_dir: the run directory. On its own (``prepared=False``) the trainer prepares it: the main process
            locks it from construction until :meth:`close` (see :meth:`RunDir.lock`), so a second process training
            into it fails at once; an earlier run in it is refused unless resumed or overwritten; it is created
            and ``config.yaml`` written. With ``prepared=True`` its owner (the task pipeline) has done all that
            and holds the lock: the trainer only adds its records (metrics, checkpoints, TensorBoard logs).
        eval_data: optional data of the same kind for the periodic mean eval loss (token-weighted), over a sample
            that does not depend on the number of processes (:func:`~synthformer.train.evaluation.eval_sample`;
            each process scores its part).
        eval_fn: optional ``eval_fn(model) -> dict`` for task metrics (BLEU, accuracy, ...). It is called on
            every process with the unwrapped model in eval mode under ``torch.no_grad()``; the values of the
            main process are logged, prefixed with ``eval_``. An ``eval_fn(model, shard)`` taking a ``shard``
            keyword gets this process's :class:`~synthformer.train.sharding.EvalShard` and shares the work:
            it evaluates its part and gathers (the task pipeline's does).
        accelerator: an ``accelerate.Accelerator``; by default one is made (CPU/gloo when there is no GPU).
            Its mixed-precision setting is not used: ``config.bf16`` controls autocast.
        resume: continue from ``run_dir/checkpoints/latest`` (starts fresh if there is none).
        overwrite: start fresh even if ``run_dir`` holds an earlier run (deletes its checkpoints, metrics and
            TensorBoard logs; nothing else). Not used with ``prepared=True`` (the owner cleared it).
        prepared: ``run_dir`` is locked, checked, cleared and created by its owner (see ``run_dir``).
        collate_fn: batches a list of examples (map-style data); default ``torch.utils.data.default_collate``.
        run_config: what to write to ``run_dir/config.yaml`` (e.g. the whole experiment config); default the
            ``TrainConfig``. Not used with ``prepared=True`` (the owner wrote it).
        token_counter: ``batch -> number of targets`` for tokens/s; default :func:`count_tokens`.
        progress: show a tqdm progress bar on the main process.
        heartbeat_s: without the bar, log a line (step, loss, tokens/s, ETA) at most this often (None: never).

    Raises:
        RunError: ``resume`` and ``overwrite`` together, or another process uses ``run_dir``.
        RunExistsError: ``run_dir`` holds an earlier run and neither ``resume`` nor ``overwrite`` is set (also a
            ``FileExistsError``).
    """

    def __init__(
        self,
        model: nn.Module,
        train_data: Any,
        config: TrainConfig,
        run_dir: str | Path | RunDir,
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
        heartbeat_s: float | None = 60.0,
        prepared: bool = False,
    ) -> None:
        self.config = config
        self.rundir = run_dir if isinstance(run_dir, RunDir) else RunDir(run_dir)
        self.run_dir = self.rundir.path
        self.eval_data = eval_data
        self.eval_fn = eval_fn
        self.collate_fn = collate_fn
        self.token_counter = token_counter or count_tokens
        self.progress = progress
        self.accelerator = acc = accelerator if accelerator is not None else default_accelerator()
        self.is_main = acc.is_main_process
        self.rank = acc.process_index
        self.world_size = acc.num_processes
        # without a progress bar (a log file, a batch job) a line every heartbeat_s seconds shows the run is alive
        self.recorder = Recorder(self.rundir, config, is_main=self.is_main,
                                 heartbeat_s=heartbeat_s if not progress else None)
        # Checked on every process (not only the one that writes), so that none waits for a failed peer.
        summary_writer = require_tensorboard() if config.tensorboard else None
        check_trackers(config.log_with)
        self.prepared = prepared
        # a prepared directory is locked by its owner: this trainer holds nothing (the lock is a no-op)
        self._lock = self.rundir.lock(enabled=False) if prepared else lock_for_training(self.rundir, acc)
        try:
            self._setup(model, train_data, resume, overwrite, run_config, summary_writer)
        except BaseException:
            self._lock.release()
            raise
        # A trainer that is dropped without close() lets the directory go when it is collected.
        self._release_lock = weakref.finalize(self, self._lock.release)

    def _setup(self, model: nn.Module, train_data: Any, resume: bool, overwrite: bool, run_config: Any | None,
               summary_writer: Any) -> None:
        acc, config, rundir = self.accelerator, self.config, self.rundir
        if acc.distributed_type.value in ("FSDP", "DEEPSPEED", "MEGATRON_LM"):
            # their wrappers hold flattened or partitioned weights, which checkpoints here cannot save whole
            raise ConfigError(f"accelerate is configured for {acc.distributed_type.value}: launch without its "
                              "fsdp/deepspeed options and set train.distributed=fsdp to shard the model")
        if not self.prepared:
            prepare_run_dir(self.rundir, acc, resume=resume, overwrite=overwrite)
        resume_from = rundir.latest_checkpoint() if resume else None
        if resume and resume_from is None:
            logger.info("resume requested but %s has no checkpoint: starting fresh", self.run_dir)
        acc.wait_for_everyone()

        # Per-process seeds: model replicas are synchronised by DDP, while dropout masks should differ.
        seed_everything(config.seed + self.rank)
        self.sharded = config.distributed == "fsdp" and self.world_size > 1
        if self.sharded:
            if resume_from is not None:
                # whole weights into the whole model: sharding then cuts each process's part out of them
                load_model_weights(resume_from, model)
            model = shard_model(model, config.fsdp_units, acc.device, config.fsdp_forward_methods)
        # After sharding: FSDP2 replaces the parameters by sharded ones, which the optimizer must hold.
        self._optimizer = build_optimizer(model, config)
        self.scheduler = build_scheduler(self._optimizer, config)
        if self.sharded:  # accelerate would wrap the sharded model in DDP on CPU
            self.model, self.optimizer = model, self._optimizer
        else:
            # The scheduler is deliberately not prepared: accelerate would step it once per process per step.
            self.model, self.optimizer = acc.prepare(model, self._optimizer)

        self.step = 0
        self.batches_consumed = 0
        self.tokens_seen = 0
        ckpt = None
        if resume_from is not None:
            ckpt = load_checkpoint(
                resume_from, None if self.sharded else acc.unwrap_model(self.model),
                optimizer=ShardedOptimizerState(model, self._optimizer) if self.sharded else self._optimizer,
                scheduler=self.scheduler,
                map_location="cpu",  # optimizer.load_state_dict moves the state next to each parameter
            )
            warn_resumed_changes(ckpt.trainer_state, config, self.world_size)
            self.step = ckpt.step
            try:
                self.batches_consumed = int(ckpt.trainer_state["batches_consumed"])
            except (KeyError, TypeError, ValueError):
                raise CheckpointError(f"{ckpt.path / STATE_FILE}: no valid 'batches_consumed' (the data "
                                      "position); it is not a state this trainer wrote") from None
            self.tokens_seen = int(ckpt.trainer_state.get("tokens_seen", 0))
            # absent before this key existed
            self.recorder.elapsed_offset = float(ckpt.trainer_state.get("elapsed_s", 0.0))
            logger.info("resumed from %s (step %d)", ckpt.path, self.step)

        # The stream is positioned before the RNG restore: fast-forwarding an iterable may consume RNG.
        self._stream = BatchStream(
            train_data, batch_size=config.batch_size, seed=config.seed, rank=self.rank,
            world_size=self.world_size, collate_fn=self.collate_fn, num_workers=config.num_workers,
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

        if self.is_main:
            if resume:
                # Lines logged after the checkpoint (or all of them, if there is none) belong to lost steps.
                rundir.truncate_metrics(self.step)
            if not self.prepared and (ckpt is None or not rundir.config_path.exists()):
                atomic_write_text(rundir.config_path, dump_config(run_config or config))
            if summary_writer is not None:
                # purge_step hides the events a killed run logged after the checkpoint we resume from.
                self.recorder.tb_writer = summary_writer(
                    log_dir=str(rundir.tensorboard_path), purge_step=self.step if resume else None
                )
            self.recorder.trackers = open_trackers(config, rundir.path)
        acc.wait_for_everyone()

        self.recorder.last_saved_step = self.step if ckpt is not None else -1
        self._in_update = False

    # ---------------------------------------------------------------------------------------------------------
    # setup helpers

    # ---------------------------------------------------------------------------------------------------------
    # the loop

    def _forward(self, model: nn.Module, batch: Any) -> torch.Tensor:
        return forward_loss(model, batch, bf16=self.config.bf16, device_type=self.accelerator.device.type)

    def _train_step(self) -> float | None:
        """One optimizer step over ``grad_accum`` micro-batches; returns the gradient norm if clipping."""
        acc, cfg = self.accelerator, self.config
        for micro in range(cfg.grad_accum):
            batch = send_to_device(next(self._stream), acc.device)
            self.batches_consumed += 1
            n_tokens = int(self.token_counter(batch))
            # Gradients are all-reduced only on the last micro-batch of the step.
            last = micro == cfg.grad_accum - 1
            no_sync = gradient_sync(self.model, False) if self.sharded else acc.no_sync(self.model)
            with contextlib.nullcontext() if last else no_sync:
                loss = self._forward(self.model, batch)
                # Mean of the micro-batch means: each micro-batch counts equally.
                acc.backward(loss / cfg.grad_accum)
            self.recorder.add_micro_batch(loss.detach().float(), n_tokens)
            self.tokens_seen += n_tokens

        # From here to the step increment the weights change: an interrupt must not be saved half-way.
        self._in_update = True
        grad_norm = None
        if cfg.grad_clip > 0:
            grad_norm = as_float(acc.clip_grad_norm_(self.model.parameters(), cfg.grad_clip))
        self._step_lr = self._optimizer.param_groups[0]["lr"]
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self._in_update = False
        return grad_norm

    def _stop_requested(self, guard: InterruptGuard) -> bool:
        # All processes must stop at the same step, or the checkpoint's collectives would hang.
        return any_process(self.accelerator, guard.requested)

    def train(self) -> dict[str, Any]:
        """Train until ``config.steps``; returns the last logged metrics (train and eval).

        On an interrupt (Ctrl-C / SIGINT) a checkpoint of the last completed step is saved first, then
        ``KeyboardInterrupt`` is raised again.
        """
        cfg = self.config
        if self.step >= cfg.steps:
            logger.info("already at step %d of %d: nothing to train", self.step, cfg.steps)
            return self.recorder.last_metrics
        self.model.train()
        bar = tqdm(
            total=cfg.steps, initial=self.step, desc="train", dynamic_ncols=True,
            disable=not (self.progress and self.is_main),
        )
        self.recorder.start_clock(self.step)
        stop = False
        # While a step runs: what a checkpoint of the last completed step needs if an exception cuts it short.
        pending: tuple[dict[str, Any], int, int] | None = None
        with InterruptGuard() as guard:
            try:
                while self.step < cfg.steps:
                    pending = (capture_rng_state(), self.batches_consumed, self.tokens_seen)
                    grad_norm = self._train_step()
                    pending = None
                    bar.update(1)
                    # the heartbeat first: log_train empties the window the heartbeat reports from
                    self.recorder.heartbeat(self.step)
                    if self.step % cfg.log_every == 0 or self.step == cfg.steps:
                        self._log_train(grad_norm, bar)
                    paused = time.perf_counter()
                    if self.eval_available and cfg.eval_every > 0 and self.step % cfg.eval_every == 0:
                        self.evaluate()
                    if cfg.save_every > 0 and self.step % cfg.save_every == 0:
                        self.save()
                    # Time spent evaluating and saving is not training throughput.
                    self.recorder.exclude(time.perf_counter() - paused)
                    if self._stop_requested(guard):
                        stop = True
                        break
            except KeyboardInterrupt:
                self._save_after_exception(pending)
                raise
            finally:
                bar.close()
                self.recorder.stop_clock()
                if stop or sys.exc_info()[0] is not None:
                    self._stream.close()
        if stop:
            if self.recorder.last_saved_step != self.step:
                self.save()
            raise KeyboardInterrupt
        if self.eval_available and self.recorder.last_eval_step != self.step:
            self.evaluate()
        if self.recorder.last_saved_step != self.step:
            self.save()
        if self.recorder.tb_writer is not None:
            self.recorder.tb_writer.flush()
        self._stream.close()  # free DataLoader workers; the stream reopens at its position if training goes on
        return self.recorder.last_metrics

    def _save_after_exception(self, pending: tuple[dict[str, Any], int, int] | None) -> None:
        """Save the last completed step after an exception (Ctrl-C) interrupted the loop (best effort).

        ``pending`` is the state captured before the step that was cut short, or None if the exception came
        after a step had completed (while logging, evaluating or saving): then the live state is consistent.
        """
        if self._in_update:
            logger.error("interrupted during an optimizer update: not saving (the weights are half-updated)")
            return
        if self.recorder.last_saved_step == self.step:
            return
        rng, batches, tokens = pending or (capture_rng_state(), self.batches_consumed, self.tokens_seen)
        if self.sharded:  # the whole weights cannot be gathered without the other processes
            logger.error("interrupted: a sharded model is saved only at a step boundary (Ctrl-C once); the last "
                         "checkpoint stands")
            return
        # Other processes may be anywhere, so no collectives: the main process saves its own RNG state only.
        if self.is_main:
            self._write_checkpoint([rng], batches, tokens)

    # ---------------------------------------------------------------------------------------------------------
    # recording (the Recorder writes; these run the collectives and hand it the trainer's state)

    def _log_train(self, grad_norm: float | None, bar: Any) -> None:
        record = self.recorder.log_train(self.step, self._step_lr, grad_norm, self.accelerator, self.world_size)
        bar.set_postfix(loss=f"{record['loss']:.4f}", lr=f"{self._step_lr:.2e}", tok_s=f"{record['tokens_per_s']:.0f}")

    @property
    def heartbeat_s(self) -> float | None:
        """Seconds between heartbeat lines (None: none); settable, kept by the recorder."""
        return self.recorder.heartbeat_s

    @heartbeat_s.setter
    def heartbeat_s(self, seconds: float | None) -> None:
        self.recorder.heartbeat_s = seconds

    @property
    def eval_available(self) -> bool:
        """True if there is eval data or an eval function."""
        return self.eval_data is not None or self.eval_fn is not None

    def evaluate(self) -> dict[str, Any]:
        """Evaluate now (:func:`~synthformer.train.evaluation.evaluate_model`) and record it; returns the metrics."""
        result = evaluate_model(
            self.accelerator.unwrap_model(self.model), self.accelerator, self.config, eval_data=self.eval_data,
            eval_fn=self.eval_fn, rank=self.rank, world_size=self.world_size, collate_fn=self.collate_fn,
            token_counter=self.token_counter)
        self.recorder.record_eval(self.step, result)
        return result

    def save(self) -> Path | None:
        """Checkpoint the current step (collective: call on every process). Returns the path on the main one."""
        state = capture_rng_state()
        states: list[Any] = [state]
        if self.world_size > 1:
            states = [None] * self.world_size
            torch.distributed.all_gather_object(states, state)
        gathered = None
        if self.sharded:  # collectives: every process sends its shards, the main process gets the whole
            gathered = full_model_state(self.model), full_optimizer_state(self.model, self._optimizer)
        path = None
        if self.is_main:
            path = self._write_checkpoint(states, self.batches_consumed, self.tokens_seen, gathered)
        self.recorder.last_saved_step = self.step
        self.accelerator.wait_for_everyone()
        return path

    def _write_checkpoint(self, rng_states: list[dict[str, Any]], batches: int, tokens: int,
                          gathered: tuple[dict[str, Any], dict[str, Any]] | None = None) -> Path:
        """Save on the main process; ``gathered``: the whole model and optimizer states of a sharded model."""
        model, optimizer = gathered or (self.accelerator.unwrap_model(self.model), self._optimizer)
        state = trainer_state(self.config, batches_consumed=batches, tokens_seen=tokens,
                              elapsed_s=self.recorder.elapsed_s(), batches_per_epoch=self._stream.batches_per_epoch,
                              world_size=self.world_size)
        return self.recorder.write_checkpoint(self.step, model, optimizer, self.scheduler, rng_states, state)

    def close(self) -> None:
        """Release data loader workers, the TensorBoard writer and the run directory's lock."""
        self._stream.close()
        self.recorder.close()
        self._lock.release()

    def __enter__(self) -> Trainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
