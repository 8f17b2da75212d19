"""How the :class:`~synthformer.train.Trainer` saves: the checkpoint of a step boundary, written by every process
together, and the best-effort one of the last completed step after an exception cut a step short.

:class:`CheckpointSaver` is a part the trainer holds: it is given the objects it saves once, and the step and data
position of each save as arguments (they change every step), so the loop reads in one file and the saving in another.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from torch import nn

from .checkpoint import capture_rng_state
from .checkpoint_losses import RECORD_KEY, guarded
from .config import TrainConfig
from .distributed import full_model_state, full_optimizer_state
from .faults import weights_finite
from .longrun import LongRunPolicy
from .recording import Recorder, trainer_state

__all__ = ["CheckpointSaver"]

logger = logging.getLogger(__name__)

#: Where the data stream stands at a save: batches consumed (per process) and targets seen.
Position = tuple[int, int]


class CheckpointSaver:
    """Saves a trainer's checkpoints (see the module): ``model`` is the prepared one (DDP-wrapped, or this process's
    shards when ``sharded``: the whole state is then gathered by every process together), ``optimizer`` the unwrapped
    one; the ``recorder`` writes through the run and keeps the run's clock, the ``policy`` checks the weights first
    and knows the best checkpoint."""

    def __init__(self, *, accelerator: Accelerator, config: TrainConfig, model: nn.Module,
                 optimizer: torch.optim.Optimizer, scheduler: Any, recorder: Recorder, policy: LongRunPolicy,
                 sharded: bool) -> None:
        self.accelerator = accelerator
        self.config = config
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.recorder = recorder
        self.policy = policy
        self.sharded = sharded

    def save(self, step: int, position: Position, batches_per_epoch: int | None) -> Path | None:
        """Checkpoint ``step`` (collective: call on every process). Returns the path on the main one.

        Raises:
            TrainingFailed: a weight is not finite (nothing is written).
        """
        acc = self.accelerator
        self.policy.check_weights(self.model, step)
        self.policy.before_save(step)
        state = capture_rng_state()
        states: list[Any] = [state]
        if acc.num_processes > 1:
            states = [None] * acc.num_processes
            torch.distributed.all_gather_object(states, state)
        gathered = None
        if self.sharded:  # collectives: every process sends its shards, the main process gets the whole
            gathered = full_model_state(self.model), full_optimizer_state(self.model, self.optimizer)
        path = None
        if acc.is_main_process:
            path = self._write(step, states, position, batches_per_epoch, gathered)
        self.recorder.last_saved_step = step
        self.policy.saved(step)
        acc.wait_for_everyone()
        return path

    def save_after_exception(self, step: int, pending: tuple[dict[str, Any] | None, int, int],
                             batches_per_epoch: int | None, *, in_update: bool) -> Path | None:
        """Save the last completed step after an exception (Ctrl-C, out of memory) interrupted the loop (best
        effort); returns the checkpoint written, if any.

        ``pending``: the RNG state and data position captured before the step that was cut short; or, if the
        exception came after a step had completed (while logging, evaluating or saving), None and the live
        position (the live RNG state is then consistent). ``in_update``: the optimizer was updating the weights.
        """
        if in_update:
            logger.error("interrupted during an optimizer update: not saving (the weights are half-updated)")
            return None
        if self.recorder.last_saved_step == step:
            return None
        rng, batches, tokens = pending
        if self.sharded:  # the whole weights cannot be gathered without the other processes
            logger.error("interrupted: a sharded model is saved only at a step boundary (Ctrl-C once); the last "
                         "checkpoint stands")
            return None
        if not weights_finite(self.model):  # checked here alone: other processes may be anywhere
            logger.error("interrupted: the weights are not finite; not saving (the last checkpoint stands)")
            return None
        # Other processes may be anywhere, so no collectives: the main process saves its own RNG state only.
        if not self.accelerator.is_main_process:
            return None
        return self._write(step, [rng or capture_rng_state()], (batches, tokens), batches_per_epoch)

    def _write(self, step: int, rng_states: list[dict[str, Any]], position: Position, batches_per_epoch: int | None,
               gathered: tuple[dict[str, Any], dict[str, Any]] | None = None) -> Path:
        """Save on the main process; ``gathered``: the whole model and optimizer states of a sharded model."""
        model, optimizer = gathered or (self.accelerator.unwrap_model(self.model), self.optimizer)
        batches, tokens = position
        state = trainer_state(self.config, batches_consumed=batches, tokens_seen=tokens,
                              elapsed_s=self.recorder.elapsed_s(), batches_per_epoch=batches_per_epoch,
                              world_size=self.accelerator.num_processes)
        state.update(self.policy.state())
        record = self.policy.checkpoint_record(step)
        state.update(record)
        return self.recorder.write_checkpoint(step, model, optimizer, self.scheduler, rng_states, state,
                                              self.policy.best_for(step), keep=guarded(record[RECORD_KEY]))
