"""What a :class:`~synthformer.train.Trainer` used on its own does to its run directory before training (the task
pipeline does it itself and hands the trainer a prepared directory), and the warnings of a resumed run.

Multi-process runs: the main process locks and writes; every process checks, so that none waits for a failed peer.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from accelerate import Accelerator

from .config import TrainConfig, to_dict
from .hooks import any_process
from .rundir import RunDir, RunError
from .runlock import RunLock

__all__ = ["lock_for_training", "prepare_run_dir", "process_change", "warn_resumed_changes"]

logger = logging.getLogger(__name__)


def lock_for_training(rundir: RunDir, accelerator: Accelerator) -> RunLock:
    """Lock ``rundir`` on the main process; every process fails if that fails (a collective)."""
    error: RunError | None = None
    lock = rundir.lock(enabled=False)  # holds nothing: other ranks share the main process's lock
    if accelerator.is_main_process:
        try:
            lock = rundir.lock(enabled=True)
        except RunError as err:
            error = err
    if any_process(accelerator, error is not None):
        raise error or RunError(f"the main process could not lock the run directory {rundir.path}")
    return lock


def prepare_run_dir(rundir: RunDir, accelerator: Accelerator, *, resume: bool, overwrite: bool) -> None:
    """Refuse an earlier run unless resumed or overwritten, delete its training files if overwritten, create the
    directory (see :meth:`RunDir.check`: only what training writes counts here)."""
    # Never destroy a user's run: every process checks before the main one deletes anything.
    existing = rundir.check(resume, overwrite, training_only=True)
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        if overwrite and existing:
            rundir.clear(training_only=True)
        rundir.path.mkdir(parents=True, exist_ok=True)


def warn_resumed_changes(state: Mapping[str, Any], config: TrainConfig, world_size: int, *,
                         map_style: bool = True) -> None:
    """Say what changes when a checkpoint (its ``trainer_state.json``) was trained with another number of processes
    (:func:`process_change`) or other training settings than the run resuming it. ``train.steps`` is left to the
    schedule's own line (:func:`~synthformer.train.optim.extend_schedule`). ``map_style``: the training data is a
    dataset of examples (not an iterable of ready batches)."""
    change = process_change(state, config, world_size, map_style=map_style)
    if change is not None:
        level, message = change
        logger.log(level, "%s", message)
    saved = state.get("config", {})
    current = to_dict(config)
    changed = sorted(k for k in current if k in saved and saved[k] != current[k] and k != "steps")
    if changed:
        logger.warning(
            "resuming with changed settings: %s",
            ", ".join(f"{k}: {saved[k]!r} -> {current[k]!r}" for k in changed),
        )


def process_change(state: Mapping[str, Any], config: TrainConfig, world_size: int, *,
                   map_style: bool = True) -> tuple[int, str] | None:
    """(log level, message) when the checkpoint of ``state`` was written by another number of processes; None if not.

    What really changes (docs/distributed.md, "Resuming on another number of processes"): with examples (map-style
    data) and the same global batch, nothing about the data: global batch ``k`` of an epoch is the same examples for
    any number of processes; only the order of the gradient sums (rounding) and the RNG streams (reseeded: the
    trainer's own line) differ. With another global batch the position, counted in batches per process, points
    elsewhere in the epoch; with an iterable of ready batches the batches are dealt one to a process, so the steps
    see other batches.
    """
    saved_world = int(state.get("world_size", world_size))
    if saved_world == world_size:
        return None
    head = f"checkpoint was written by {saved_world} process(es), resuming on {world_size}"
    if not map_style:
        return logging.WARNING, (
            f"{head}: the training data is an iterable of ready batches, dealt to the processes one batch each, so "
            "the steps from here see other batches than an uninterrupted run would (a dataset of examples keeps "
            "the same examples per step)")
    saved_batch = int(state.get("config", {}).get("batch_size", config.batch_size))
    before, now = saved_batch * saved_world, config.batch_size * world_size
    if before == now:
        return logging.INFO, (
            f"{head} with the same global batch ({now} examples): every step sees the examples it would have seen; "
            "only rounding (the gradient sums run in another order) and the random numbers differ")
    return logging.WARNING, (
        f"{head}: the global batch changes from {saved_world} x {saved_batch} = {before} to {world_size} x "
        f"{config.batch_size} = {now} examples, and the data position is kept in batches, so the steps from here "
        f"see other examples than an uninterrupted run would (some repeated or skipped); keep train.batch_size x "
        f"processes = {before} to continue the same run")
