"""The model-agnostic training loop.

Any ``nn.Module`` whose ``forward(**batch)`` returns a mapping with a scalar ``"loss"`` (docs/CONTRACTS.md)
can be trained. The loop is built on ``accelerate.Accelerator``, so the same script runs on one CPU, one GPU, or
under ``torchrun --nproc_per_node=N`` / ``accelerate launch`` with DDP (gloo on CPU), or with the model, its
gradients and optimizer state sharded by FSDP2 (``train.distributed: fsdp``, :mod:`~synthformer.train.distributed`).

Resume is exact: model, optimizer, scheduler, every process's RNG state and the data position are
checkpointed, so ``kill`` + ``resume=True`` gives bit-identical weights to an uninterrupted run on the same
hardware (CPU, same seed, same world size). What a long run meets (non-finite steps, SIGTERM, a dead process, out
of memory) is decided by :class:`~synthformer.train.longrun.LongRunPolicy` and worded by :mod:`.faults`.

This module is the loop; the :class:`~synthformer.train.recording.Recorder` it holds writes what it logs, evaluates
and checkpoints, :mod:`~synthformer.train.evaluation` computes the forward pass and the evaluations, and
:class:`~synthformer.train.run.Run` it receives owns the run directory (its lock, its files, the resume rules).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import send_to_device
from torch import nn
from tqdm.auto import tqdm

from synthformer.common import ConfigError

from . import faults
from .callbacks import TrainerCallback, checked_callback, fire
from .checkpoint import (
    capture_rng_state,
    load_checkpoint,
    load_model_weights,
)
from .config import TrainConfig
from .distributed import ShardedOptimizerState, as_float, gradient_sync, shard_model
from .evaluation import evaluate_model, forward_loss
from .hooks import count_tokens, default_accelerator, require_tensorboard, seed_everything
from .loader import BatchStream, is_map_style
from .longrun import LongRunPolicy
from .optim import build_optimizer, build_scheduler, extend_schedule
from .recording import Recorder
from .resume import restore_process_rng, resumed_position, warn_resumed_changes
from .run import Run
from .saving import CheckpointSaver
from .signals import Preempted, StopGuard
from .tracking import check_trackers, open_tensorboard, open_trackers

__all__ = ["Trainer", "count_tokens", "seed_everything"]

logger = logging.getLogger(__name__)


class Trainer:
    """Train ``model`` on ``train_data`` and record the run in ``run``.

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
        run: the open run directory (:meth:`Run.open <synthformer.train.run.Run.open>`); its opener closes it. The
            trainer starts it (:meth:`Run.start`: an overwritten earlier run is deleted and ``config.yaml`` written,
            unless its opener started it first with more files) and adds its records through it (metrics,
            checkpoints); TensorBoard logs go into it. ``run.resume``: continue from its latest checkpoint (starts
            fresh if there is none). On its own::

                with Run.open("runs/lm", resume=False) as run:
                    Trainer(model, dataset, config, run, collate_fn=collate).train()

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
        collate_fn: batches a list of examples (map-style data); default ``torch.utils.data.default_collate``.
        token_counter: ``batch -> number of targets`` for tokens/s; default :func:`count_tokens`.
        progress: show a tqdm progress bar on the main process.
        heartbeat_s: without the bar, log a line (step, loss, tokens/s, ETA) at most this often (None: never).
        callbacks: :class:`~synthformer.train.callbacks.TrainerCallback` s told of each step, evaluation and
            checkpoint, in this order (more with :meth:`add_callback`).
    """

    def __init__(
        self,
        model: nn.Module,
        train_data: Any,
        config: TrainConfig,
        run: Run,
        eval_data: Any | None = None,
        eval_fn: Callable[[nn.Module], Mapping[str, Any]] | None = None,
        accelerator: Accelerator | None = None,
        *,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        token_counter: Callable[[Mapping[str, Any]], int | torch.Tensor] | None = None,
        progress: bool = True,
        heartbeat_s: float | None = 60.0,
        callbacks: Sequence[TrainerCallback] = (),
    ) -> None:
        self.config = config
        self.run = run
        self.rundir = run.rundir
        self.run_dir = run.path
        self.eval_data = eval_data
        self.eval_fn = eval_fn
        self.collate_fn = collate_fn
        self.token_counter = token_counter or count_tokens
        self.progress = progress
        self.callbacks: list[TrainerCallback] = [checked_callback(callback) for callback in callbacks]
        self.accelerator = acc = (accelerator if accelerator is not None
                                  else default_accelerator(config.collective_timeout_s))
        self.is_main = acc.is_main_process
        self.rank = acc.process_index
        self.world_size = acc.num_processes
        # without a progress bar (a log file, a batch job) a line every heartbeat_s seconds shows the run is alive
        self.recorder = Recorder(run, config, is_main=self.is_main,
                                 heartbeat_s=heartbeat_s if not progress else None)
        self.policy = LongRunPolicy(acc, config, self.rundir)  # non-finite steps, stop requests, the best
        # Checked on every process (not only the one that writes), so that none waits for a failed peer.
        summary_writer = require_tensorboard() if config.tensorboard else None
        check_trackers(config.log_with)
        self._setup(model, train_data, summary_writer)

    def _setup(self, model: nn.Module, train_data: Any, summary_writer: Any) -> None:
        acc, config, rundir, resume = self.accelerator, self.config, self.rundir, self.run.resume
        if acc.distributed_type.value in ("FSDP", "DEEPSPEED", "MEGATRON_LM"):
            # their wrappers hold flattened or partitioned weights, which checkpoints here cannot save whole
            raise ConfigError(f"accelerate is configured for {acc.distributed_type.value}: launch without its "
                              "fsdp/deepspeed options and set train.distributed=fsdp to shard the model")
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
            warn_resumed_changes(ckpt.trainer_state, config, self.world_size, map_style=is_map_style(train_data))
            extended = extend_schedule(self.scheduler, config.steps, ckpt.step)  # a new train.steps: one line
            if extended and self.is_main:
                logger.warning("%s", extended)
            self.step = ckpt.step
            self.batches_consumed, self.tokens_seen = resumed_position(ckpt)
            self.policy.resume(ckpt.trainer_state)
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
            restore_process_rng(ckpt.rng_states or [], self.rank, self.world_size,
                                reseed=config.seed + self.rank + 7919 * self.step)

        # Only now (nothing failed): an overwritten run is deleted and config.yaml written, unless the run's opener
        # started it with its own files; the main process writes.
        self.run.start(config)
        if self.is_main:
            if resume:
                # Lines logged after the checkpoint (or all of them, if there is none) belong to lost steps.
                self.run.truncate_metrics(self.step)
            if summary_writer is not None:
                self.recorder.tb_writer = open_tensorboard(summary_writer, rundir.path, self.step if resume else None)
            self.recorder.trackers = open_trackers(config, rundir.path)
        acc.wait_for_everyone()

        self.recorder.last_saved_step = self.step if ckpt is not None else -1
        self._in_update = False
        self.saver = CheckpointSaver(accelerator=acc, config=config, model=self.model, optimizer=self._optimizer,
                                     scheduler=self.scheduler, recorder=self.recorder, policy=self.policy,
                                     sharded=self.sharded)

    # ---------------------------------------------------------------------------------------------------------
    # the loop

    def _forward(self, model: nn.Module, batch: Any) -> torch.Tensor:
        return forward_loss(model, batch, bf16=self.config.bf16, device_type=self.accelerator.device.type)

    def _train_step(self) -> float | None:
        """One optimizer step over ``grad_accum`` micro-batches; returns the gradient norm if clipping.

        After backward the step's loss and gradient norm are checked (:meth:`LongRunPolicy.check_step`, which also
        agrees on a stop request): a non-finite step is skipped or stops the run. An out-of-memory error in forward
        or backward becomes :class:`OutOfMemory` (the weights are untouched: the step never reached its update).
        """
        acc, cfg = self.accelerator, self.config
        micro_batches = []
        for micro in range(cfg.grad_accum):
            batch = send_to_device(next(self._stream), acc.device)
            self.batches_consumed += 1
            n_tokens = int(self.token_counter(batch))
            # Gradients are all-reduced only on the last micro-batch of the step.
            last = micro == cfg.grad_accum - 1
            no_sync = gradient_sync(self.model, False) if self.sharded else acc.no_sync(self.model)
            try:
                with contextlib.nullcontext() if last else no_sync:
                    loss = self._forward(self.model, batch)
                    # Mean of the micro-batch means: each micro-batch counts equally.
                    acc.backward(loss / cfg.grad_accum)
            except RuntimeError as err:  # torch.OutOfMemoryError is one
                if not faults.is_out_of_memory(err):
                    raise
                self.optimizer.zero_grad(set_to_none=True)  # frees the gradients for the save that follows
                raise faults.OutOfMemory(faults.out_of_memory_detail(self.step + 1, batch, cfg)) from None
            micro_batches.append((loss.detach().float(), n_tokens))
            self.tokens_seen += n_tokens

        # From here to the step increment the weights change: an interrupt must not be saved half-way.
        self._in_update = True
        params = list(self.model.parameters())
        grad_norm = as_float(acc.clip_grad_norm_(params, cfg.grad_clip)) if cfg.grad_clip > 0 else None
        step_loss = float(sum(loss for loss, _ in micro_batches)) / cfg.grad_accum  # the step's mean, as logged
        self._step_lr = self._optimizer.param_groups[0]["lr"]
        # without clipping a norm is computed for the check alone (one pass over the gradients)
        norm = faults.gradient_norm(params) if grad_norm is None else grad_norm
        if self.policy.check_step(self.step + 1, step_loss, norm):
            for loss, n_tokens in micro_batches:
                self.recorder.add_micro_batch(loss, n_tokens)
            self.optimizer.step()
            self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self._in_update = False
        return grad_norm

    def train(self) -> dict[str, Any]:
        """Train until ``config.steps``; returns the last logged metrics (train and eval).

        On Ctrl-C (SIGINT), SIGTERM or SIGUSR1 the step under way is finished, a checkpoint of it saved (by every
        process together), then ``KeyboardInterrupt`` is raised (:class:`~synthformer.train.signals.Preempted`
        for SIGTERM and SIGUSR1). A second Ctrl-C or an exception cutting a step short saves the last completed step
        (best effort).

        Raises:
            TrainingFailed: a non-finite step (``train.nonfinite``); an out-of-memory step (after saving the last
                completed step); under several processes, a collective that failed because another process died or
                did not answer within ``train.collective_timeout_s``. One line each, naming the step and the
                checkpoint that is safe.
        """
        try:
            return self._train()
        except Exception as err:
            if self.world_size > 1 and faults.is_collective_failure(err) and not isinstance(err, faults.TrainingFailed):
                raise faults.TrainingFailed(faults.lost_process_message(
                    err, self.rank, self.world_size, self.step, self.rundir.latest_checkpoint(), self.config)
                ) from None
            raise

    def _train(self) -> dict[str, Any]:
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
        with StopGuard() as guard:
            self.policy.guard = guard
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
                    fire(self.callbacks, "on_step", self)
                    paused = time.perf_counter()
                    paused_for = self._evaluate_and_save()
                    # Time spent evaluating and saving is not training throughput.
                    self.recorder.exclude(time.perf_counter() - paused)
                    # the stop agreed in this step; or a signal that came while evaluating or saving
                    if self.policy.stop_agreed or (paused_for and self.policy.stop_after_pause()):
                        stop = True
                        break
            except KeyboardInterrupt:
                self._save_after_exception(pending)
                raise
            except faults.OutOfMemory as err:
                saved = self._save_after_exception(pending)
                last = saved or self.rundir.latest_checkpoint()
                kept = (f"the last completed step is saved ({last})" if saved else
                        f"the last checkpoint ({last}) is intact" if last else "there is no checkpoint yet")
                raise faults.TrainingFailed(f"{err.detail}; {kept}; continue with --resume") from None
            finally:
                bar.close()
                self.recorder.stop_clock()
                if stop or sys.exc_info()[0] is not None:
                    self._stream.close()
            if stop:
                if self.recorder.last_saved_step != self.step:
                    self.save()
                if guard.preempted:
                    raise Preempted(guard.signal_name or "SIGTERM", self.step)
                raise KeyboardInterrupt
        if self.eval_available and self.recorder.last_eval_step != self.step:
            self.evaluate()
        if self.recorder.last_saved_step != self.step or self.policy.best_due:
            self.save()
        if self.recorder.tb_writer is not None:
            self.recorder.tb_writer.flush()
        self._stream.close()  # free DataLoader workers; the stream reopens at its position if training goes on
        return self.recorder.last_metrics

    def _evaluate_and_save(self) -> bool:
        """The periodic evaluation and checkpoint after a step (a new best is saved at once); whether either ran."""
        cfg, ran = self.config, False
        if self.eval_available and cfg.eval_every > 0 and self.step % cfg.eval_every == 0:
            self.evaluate()
            ran = True
        if (cfg.save_every > 0 and self.step % cfg.save_every == 0) or self.policy.best_due:
            self.save()
            ran = True
        return ran

    # ---------------------------------------------------------------------------------------------------------
    # recording (the Recorder writes; these run the collectives and hand it the trainer's state)

    def _log_train(self, grad_norm: float | None, bar: Any) -> None:
        record = self.recorder.log_train(self.step, self._step_lr, grad_norm, self.accelerator, self.world_size,
                                         self.policy.log_fields())
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

    def add_callback(self, callback: TrainerCallback) -> None:
        """Tell ``callback`` of the steps, evaluations and checkpoints from now on, after those registered before
        (a :class:`~synthformer.train.callbacks.TrainerCallback`; anything else: ``TypeError``)."""
        self.callbacks.append(checked_callback(callback))

    def evaluate(self) -> dict[str, Any]:
        """Evaluate now (:func:`~synthformer.train.evaluation.evaluate_model`) and record it; returns the metrics.
        The callbacks' ``on_evaluate_start`` and ``on_evaluate`` hooks fire around it."""
        fire(self.callbacks, "on_evaluate_start", self)
        result = evaluate_model(
            self.accelerator.unwrap_model(self.model), self.accelerator, self.config, eval_data=self.eval_data,
            eval_fn=self.eval_fn, rank=self.rank, world_size=self.world_size, collate_fn=self.collate_fn,
            token_counter=self.token_counter)
        self.recorder.record_eval(self.step, result)
        self.policy.after_eval(self.step, result)  # a new best is saved by the loop right away
        fire(self.callbacks, "on_evaluate", self, result)
        return result

    # ---------------------------------------------------------------------------------------------------------
    # saving (the CheckpointSaver writes; these hand it the step and the data position)

    def save(self) -> Path | None:
        """Checkpoint the current step (collective: call on every process). Returns the path on the main one. The
        callbacks' ``on_save_start`` and ``on_save`` hooks fire around it.

        Raises:
            TrainingFailed: a weight is not finite (nothing is written).
        """
        fire(self.callbacks, "on_save_start", self)
        path = self.saver.save(self.step, (self.batches_consumed, self.tokens_seen), self._stream.batches_per_epoch)
        fire(self.callbacks, "on_save", self, path)
        return path

    def _save_after_exception(self, pending: tuple[dict[str, Any], int, int] | None) -> Path | None:
        """Save the last completed step after an exception cut the loop short (best effort); ``pending``: the
        state captured before a step that was cut short, None if the exception came between steps."""
        return self.saver.save_after_exception(self.step, pending or (None, self.batches_consumed, self.tokens_seen),
                                               self._stream.batches_per_epoch, in_update=self._in_update)

    def close(self) -> None:
        """Release data loader workers and the TensorBoard writer (the run's opener closes the run)."""
        self._stream.close()
        self.recorder.close()

    def __enter__(self) -> Trainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
