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

__all__ = ["lock_for_training", "prepare_run_dir", "warn_resumed_changes"]

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


def warn_resumed_changes(state: Mapping[str, Any], config: TrainConfig, world_size: int) -> None:
    """Warn when a checkpoint (its ``trainer_state.json``) was trained with another number of processes or other
    training settings than the run resuming it."""
    if state.get("world_size", world_size) != world_size:
        logger.warning(
            "checkpoint was written by %s process(es), resuming with %d: the data order changes",
            state.get("world_size"), world_size,
        )
    saved = state.get("config", {})
    current = to_dict(config)
    changed = sorted(k for k in current if k in saved and saved[k] != current[k])
    if changed:
        logger.warning(
            "resuming with changed settings: %s",
            ", ".join(f"{k}: {saved[k]!r} -> {current[k]!r}" for k in changed),
        )
