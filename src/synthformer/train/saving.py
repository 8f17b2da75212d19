"""How the :class:`~synthformer.train.Trainer` saves: the checkpoint of a step boundary, written by every process
together, and the best-effort one of the last completed step after an exception cut a step short.

A mixin of the trainer (it reads the trainer's model, optimizer, data position, recorder and policy), kept apart so
that the loop reads in one file and the saving in another.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch

from .checkpoint import capture_rng_state
from .distributed import full_model_state, full_optimizer_state
from .faults import weights_finite
from .recording import trainer_state

__all__ = ["CheckpointSaving"]

logger = logging.getLogger(__name__)


class CheckpointSaving:
    """The trainer's saving (see the module); every attribute it reads is the trainer's."""

    # the trainer's attributes this mixin reads
    accelerator: Any
    batches_consumed: int
    config: Any
    is_main: bool
    model: Any
    policy: Any
    recorder: Any
    scheduler: Any
    sharded: bool
    step: int
    tokens_seen: int
    world_size: int
    _in_update: bool
    _optimizer: Any
    _stream: Any

    def save(self) -> Path | None:
        """Checkpoint the current step (collective: call on every process). Returns the path on the main one.

        Raises:
            TrainingFailed: a weight is not finite (nothing is written).
        """
        self.policy.check_weights(self.model, self.step)
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
        self.policy.saved(self.step)
        self.accelerator.wait_for_everyone()
        return path

    def _write_checkpoint(self, rng_states: list[dict[str, Any]], batches: int, tokens: int,
                          gathered: tuple[dict[str, Any], dict[str, Any]] | None = None) -> Path:
        """Save on the main process; ``gathered``: the whole model and optimizer states of a sharded model."""
        model, optimizer = gathered or (self.accelerator.unwrap_model(self.model), self._optimizer)
        state = trainer_state(self.config, batches_consumed=batches, tokens_seen=tokens,
                              elapsed_s=self.recorder.elapsed_s(), batches_per_epoch=self._stream.batches_per_epoch,
                              world_size=self.world_size)
        state.update(self.policy.state())
        return self.recorder.write_checkpoint(self.step, model, optimizer, self.scheduler, rng_states, state,
                                              self.policy.best_for(self.step))

    def _save_after_exception(self, pending: tuple[dict[str, Any], int, int] | None) -> Path | None:
        """Save the last completed step after an exception (Ctrl-C, out of memory) interrupted the loop (best
        effort); returns the checkpoint written, if any.

        ``pending`` is the state captured before the step that was cut short, or None if the exception came
        after a step had completed (while logging, evaluating or saving): then the live state is consistent.
        """
        if self._in_update:
            logger.error("interrupted during an optimizer update: not saving (the weights are half-updated)")
            return None
        if self.recorder.last_saved_step == self.step:
            return None
        rng, batches, tokens = pending or (capture_rng_state(), self.batches_consumed, self.tokens_seen)
        if self.sharded:  # the whole weights cannot be gathered without the other processes
            logger.error("interrupted: a sharded model is saved only at a step boundary (Ctrl-C once); the last "
                         "checkpoint stands")
            return None
        if not weights_finite(self.model):  # checked here alone: other processes may be anywhere
            logger.error("interrupted: the weights are not finite; not saving (the last checkpoint stands)")
            return None
        # Other processes may be anywhere, so no collectives: the main process saves its own RNG state only.
        return self._write_checkpoint([rng], batches, tokens) if self.is_main else None
