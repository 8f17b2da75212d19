"""What the trainer decides for a long run, identically on every process: whether a step's update is applied (its
loss and gradient norm finite, its loss no spike: ``train.nonfinite``, :mod:`.spikes`), whether the run diverges
(:mod:`.divergence`), whether to stop on a signal, which checkpoint is the best (``train.keep_best``) and which
checkpoint a stopped run should go back to.

Every decision that changes what the processes do next (skip an update, stop, save a new best) is agreed on by a
collective, so that no process waits in a collective the others never enter. A step costs one all-reduce of three
numbers (the non-finite flag, the stop request and the step's loss, the largest of the processes': :meth:`LongRunPolicy
.check_step`), made after backward and before the optimizer step; an evaluation or a save adds one more (a signal
that arrived during it, a new best).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from accelerate import Accelerator
from torch import nn

from synthformer.common import ConfigError

from .best import BestRecord, improves, metric_direction, metric_key, read_best
from .checkpoint import STATE_FILE, CheckpointError, checkpoint_name, read_trainer_state
from .checkpoint_losses import CheckpointLosses, go_back_to, good_checkpoints
from .config import TrainConfig
from .divergence import DivergenceWatch
from .faults import TrainingFailed, agree, agree_max, finite, nonfinite_message, weights_finite
from .rundir import RunDir
from .signals import StopGuard
from .spikes import LossReference, spike_message

__all__ = ["SIGNAL_CODES", "LongRunPolicy"]

logger = logging.getLogger(__name__)

#: How a stop request travels between processes: the index of its signal (0: none). The largest wins, so a
#: preemption notice on any process makes every process exit as preempted.
SIGNAL_CODES: tuple[str, ...] = ("", "SIGINT", "SIGTERM", "SIGUSR1")


class LongRunPolicy:
    """The trainer's decisions about non-finite steps, stop requests and the best checkpoint (see the module).

    Args:
        accelerator: the run's accelerator (its processes agree through it).
        config: ``nonfinite``, ``nonfinite_limit``, ``spike_factor``, ``spike_window`` and ``keep_best`` are read.
        rundir: the run directory (the last good checkpoint is named from it).
    """

    def __init__(self, accelerator: Accelerator, config: TrainConfig, rundir: RunDir) -> None:
        self.accelerator = accelerator
        self.config = config
        self.rundir = rundir
        self.guard = StopGuard()  # the trainer hands in the one it installs while training
        self.skipped_steps = 0
        self.in_a_row = 0
        self.stop_agreed = False
        self.losses = LossReference(config.spike_factor, config.spike_window)
        self.divergence = DivergenceWatch(config.divergence_factor, config.divergence_window, self.losses)
        self.record = CheckpointLosses()  # what each checkpoint's weights computed
        self.metric = metric_key(config.keep_best) if config.keep_best else None
        self.direction = metric_direction(config.keep_best) if config.keep_best else None
        self.best: BestRecord | None = None
        self.candidate: BestRecord | None = None  # a new best, until its checkpoint is saved

    def resume(self, trainer_state: Mapping[str, Any]) -> None:
        """Continue the counts and the best of the checkpoint a run resumes from."""
        self.skipped_steps = int(trainer_state.get("skipped_steps", 0))
        self.losses.resume(trainer_state)
        self.divergence.resume(trainer_state)
        self.record.resume(trainer_state)
        record = read_best(self.rundir.checkpoints_path) if self.metric else None
        # a best by another metric (keep_best changed on resume) is not compared with: this run's starts afresh
        self.best = record if record is not None and record.metric == self.metric else None

    # -- each step -----------------------------------------------------------------------------------------------
    def _signal_code(self) -> int:
        return SIGNAL_CODES.index(self.guard.signal_name) if self.guard.requested else 0

    def _note_stop(self, code: int) -> None:
        if code and not self.guard.requested:  # another process received the signal
            self.guard.request(SIGNAL_CODES[code])
        self.stop_agreed = self.stop_agreed or code > 0

    def check_step(self, step: int, loss: float, grad_norm: float) -> bool:
        """After backward, before the update of ``step`` (``loss``: the step's mean loss on this process): whether
        to apply it (a collective). A non-finite loss or gradient norm, or a loss spike (:mod:`.spikes`, judged on
        the largest loss of the processes), is handled per ``train.nonfinite``.

        Also agrees on a stop request (:attr:`stop_agreed`: stop once this step is done).

        Raises:
            TrainingFailed: a non-finite step or a spike with ``nonfinite: stop``, or the ``nonfinite_limit``-th
                skipped step in a row.
        """
        ok = finite(loss, grad_norm)
        nonfinite, stop, largest = agree_max(self.accelerator, [0 if ok else 1, self._signal_code(),
                                                                loss if ok else float("-inf")])
        self._note_stop(int(stop))
        spike = not nonfinite and self.losses.is_spike(largest)
        if not nonfinite and not spike:
            self.in_a_row = 0
            self.losses.accept(largest)
            self.record.applied(largest)
            diverged = self.divergence.accept(largest)  # every process holds the same losses: the same decision
            if diverged:
                raise TrainingFailed(self._divergence_message(step, diverged, since=step - 1))
            return True
        self.in_a_row += 1
        if self.config.nonfinite == "stop" or self.in_a_row >= self.config.nonfinite_limit:
            if spike:
                raise TrainingFailed(self._spike_message(step, largest))
            raise TrainingFailed(nonfinite_message(step, loss, grad_norm, self.go_back_to(step - self.in_a_row),
                                                   self.config, self.in_a_row))
        self.skipped_steps += 1
        what = f"loss {largest:g}, a spike over the reference {self.losses.value:g}" if spike else (
            f"loss {loss:g}, gradient norm {grad_norm:g}")
        logger.warning("step %d: %s: its update is skipped (%d in a row, %d in all)", step, what, self.in_a_row,
                       self.skipped_steps)
        return False

    def _spike_message(self, step: int, loss: float) -> str:
        cfg = self.config
        row = (f" ({self.in_a_row} skipped steps in a row, train.nonfinite_limit {cfg.nonfinite_limit})"
               if cfg.nonfinite == "skip" else "")
        return spike_message(step, step - self.in_a_row, loss, self.losses.value or 0.0, cfg.spike_factor,
                             cfg.spike_window, self._checkpoints(), row)

    def _checkpoints(self) -> list[tuple[int, Path]]:
        """``(step, path)`` of the run's complete checkpoints, oldest first (a damaged one left out: no stop can
        name it as one to go back to)."""
        found = []
        for path in self.rundir.list_checkpoints():
            try:
                found.append((int(read_trainer_state(path / STATE_FILE)["step"]), path))
            except CheckpointError:
                continue
        return sorted(found, key=lambda c: c[0])

    def _divergence_message(self, step: int, why: str, since: int) -> str:
        cfg = self.config
        return (f"step {step}: {why} (train.divergence_factor {cfg.divergence_factor:g}, train.divergence_window "
                f"{cfg.divergence_window}): the run diverges; nothing was saved from it; {self.go_back_to(since)}; "
                "try a lower train.lr or more train.warmup_steps, train.grad_clip (e.g. 1.0), or raise "
                "train.divergence_factor (0 turns the check off)")

    def go_back_to(self, since: int) -> str:
        """Which checkpoint a run stopped now should go back to (:mod:`.divergence`): the best good one among those
        before step ``since``, the last whose update was applied (its weights and later ones gave the bad loss)."""
        good = good_checkpoints(self._checkpoints(), self.record.judged(), since, self.divergence)
        return go_back_to(good, self.rundir.latest_checkpoint(), self.rundir.path)

    def stop_after_pause(self) -> bool:
        """After an evaluation or a save: whether to stop now, a signal having come during it (a collective)."""
        self._note_stop(agree(self.accelerator, [self._signal_code()])[0])
        return self.stop_agreed

    def log_fields(self) -> dict[str, int]:
        """What the training log lines add: the skipped steps so far (with ``nonfinite: skip``)."""
        return {"skipped_steps": self.skipped_steps} if self.config.nonfinite == "skip" else {}

    def state(self) -> dict[str, Any]:
        """What a checkpoint's ``trainer_state.json`` adds: the skipped steps, the spike check's reference."""
        skipped = {"skipped_steps": self.skipped_steps} if self.skipped_steps else {}
        return {**skipped, **self.losses.state(), **self.divergence.state()}

    def before_save(self, step: int) -> None:
        """A checkpoint of ``step`` is about to be written (every process; after :meth:`check_weights`)."""
        self.record.before_save(step)

    def checkpoint_record(self, step: int) -> dict[str, Any]:
        """The record of what the run's checkpoints computed, for the ``trainer_state.json`` of step ``step``'s
        (main process: the entries of the checkpoints on disk and its own)."""
        return self.record.for_save(step, (p.name for p in self.rundir.list_checkpoints()))

    # -- saving --------------------------------------------------------------------------------------------------
    def check_weights(self, model: nn.Module, step: int) -> None:
        """Refuse to save non-finite weights (a collective: each process checks its own).

        Raises:
            TrainingFailed: some weight is NaN or infinite.
        """
        if agree(self.accelerator, [0 if weights_finite(model) else 1])[0]:
            kept = self.go_back_to(step)  # step's update made them: a checkpoint before it gave a finite loss
            raise TrainingFailed(f"step {step}: the weights are not finite (NaN or inf) and were not saved; {kept}; "
                                 "try a lower train.lr or train.grad_clip")

    # -- the best checkpoint -------------------------------------------------------------------------------------
    def after_eval(self, step: int, result: Mapping[str, Any]) -> bool:
        """Whether the evaluation of ``step`` is a new best (then its checkpoint must be saved now); the main
        process decides for all (a collective).

        A validation loss (``eval_loss``) is checked for divergence first, the main process's value deciding for all
        (a collective under several processes: an ``eval_fn`` may report another value on each).

        Raises:
            TrainingFailed: the validation loss is not finite or out of its range (:mod:`.divergence`).
            ConfigError: the evaluation does not report ``train.keep_best``'s metric.
        """
        if "eval_loss" in result:
            mine = float(result["eval_loss"]) if self.accelerator.is_main_process else float("-inf")
            # a NaN is sent as a flag: a maximum over NaN is not defined alike by every backend
            bad, value = agree_max(self.accelerator, [float(math.isnan(mine)), -math.inf if math.isnan(mine) else mine])
            value = math.nan if bad else value
            why = self.divergence.evaluated(value)
            if why:  # the weights of this step gave it: a checkpoint before it may be good
                raise TrainingFailed(self._divergence_message(step, why, since=step))
            self.record.evaluated(step, value)
        if self.metric is None:
            return False
        if self.metric not in result:
            raise ConfigError(f"train.keep_best: the evaluation reports no {self.metric!r} (it reports: "
                              f"{', '.join(sorted(result)) or 'nothing'})")
        value = float(result[self.metric])
        new = improves(value, self.best.value if self.best else None, self.direction or "min")
        if not agree(self.accelerator, [int(new and self.accelerator.is_main_process)])[0]:
            return False
        self.candidate = BestRecord(checkpoint_name(step), self.metric, value, self.direction or "min", step)
        logger.info("step %d: new best %s %g", step, self.metric, value)
        return True

    @property
    def best_due(self) -> bool:
        """A new best waits for its checkpoint."""
        return self.candidate is not None

    def best_for(self, step: int) -> BestRecord | None:
        """The new best if the checkpoint of ``step`` is it (for :func:`~synthformer.train.save_checkpoint`)."""
        return self.candidate if self.candidate is not None and self.candidate.step == step else None

    def saved(self, step: int) -> None:
        """The checkpoint of ``step`` is written (with its best pointer, if it is the new best)."""
        self.record.saved(step)
        if self.candidate is not None and self.candidate.step == step:
            self.best, self.candidate = self.candidate, None

    @property
    def best_path(self) -> Path | None:
        """The best checkpoint's folder, if there is one."""
        return self.rundir.checkpoints_path / self.best.checkpoint if self.best else None
