"""Every rule of resuming a run (and of refusing an earlier one), applied by :class:`~synthformer.train.run.Run`: a
checkpoint resumes only with the tokenizer and model config it was trained with; its config may change only in
:data:`RESUMABLE_CHANGES`, never in its task type; the model sized for the data must be the saved one; a directory
without a tokenizer yet starts fresh. Configs are compared as dicts (their ``to_dict``), so nothing above ``train``
is needed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from synthformer.common import to_dict

from .checkpoint import STATE_FILE, CheckpointError, read_trainer_state
from .config import TrainConfig
from .hooks import seed_everything
from .rng import restore_rng_state
from .run_errors import RunError, RunExistsError
from .rundir import RunDir

__all__ = ["EXECUTION_SETTINGS", "RESUMABLE_CHANGES", "check_earlier_run", "check_resumable_changes",
           "restore_process_rng", "resumed_position",
           "check_resume_config", "check_resumed_files", "check_resumed_model", "config_differences",
           "process_change", "same_global_batch", "warn_resumed_changes"]

logger = logging.getLogger(__name__)


def check_earlier_run(rd: RunDir, resume: bool = False, overwrite: bool = False, *,
                      training_only: bool = False) -> list[str]:
    """Refuse to touch an earlier run unless asked; return what an earlier run left (:meth:`RunDir.earlier_run`).

    Raises:
        RunError: ``resume`` and ``overwrite`` together, or a file where the directory should be.
        RunExistsError: an earlier run without ``resume`` or ``overwrite`` (also a ``FileExistsError``).
    """
    if resume and overwrite:
        raise RunError("--resume and --overwrite contradict each other; choose one")
    if rd.path.exists() and not rd.path.is_dir():
        raise RunError(f"run directory {rd.path} exists and is not a directory")
    existing = rd.earlier_run(training_only=training_only)
    if existing and not (resume or overwrite):
        what = "checkpoints, metrics and TensorBoard logs" if training_only else (
            "checkpoints, metrics, TensorBoard logs, tokenizer, model config, labels and eval results")
        raise RunExistsError(
            f"{rd.path} already holds a run ({', '.join(existing)}); pass --resume (resume=True) to continue "
            f"it, --overwrite (overwrite=True) to start it over (deletes its {what}), or choose another run "
            "directory (--run-dir)"
        )
    return existing


def config_differences(saved: Any, current: Any, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two config dicts."""
    if isinstance(saved, Mapping) and isinstance(current, Mapping):
        out = []
        for key in sorted(set(saved) | set(current), key=str):
            out += config_differences(saved.get(key), current.get(key), f"{prefix}{key}.")
        return out
    return [] if saved == current else [f"{prefix[:-1]}: {saved!r} -> {current!r}"]


#: Settings that may change when a run is resumed (a longer run, other intervals, another evaluation, DDP or FSDP:
#: checkpoints are the same files either way): they do not change what the checkpoint means. Anything else (data,
#: model, optimizer, batch, seed) would silently make a different run out of the saved one.
RESUMABLE_CHANGES: tuple[str, ...] = (
    "train.steps", "train.log_every", "train.eval_every", "train.eval_steps", "train.save_every",
    "train.max_checkpoints", "train.tensorboard", "train.log_with", "train.tracker_project", "train.num_workers",
    "train.distributed", "train.fsdp_units", "train.fsdp_forward_methods", "train.nonfinite", "train.nonfinite_limit",
    "train.spike_factor", "train.spike_window", "train.divergence_factor", "train.divergence_window",
    "train.keep_best", "train.collective_timeout_s", "eval.",
)
#: Of those, the settings of how a run executes, not of what it computes: a study that differs only in them (or in
#: their defaults, which a newer version may change) is the same study.
EXECUTION_SETTINGS: tuple[str, ...] = (
    "train.tensorboard", "train.log_with", "train.tracker_project", "train.num_workers", "train.distributed",
    "train.fsdp_units", "train.fsdp_forward_methods", "train.collective_timeout_s",
    # whether a diverging run stops: a run that does not diverge computes the same with any value
    "train.divergence_factor", "train.divergence_window",
)


def same_global_batch(rd: RunDir, saved_batch: int, batch: int) -> bool:
    """Whether ``batch`` (``train.batch_size``) times the number of processes is what the latest checkpoint was
    trained with (``saved_batch`` per process): a run moved to another number of processes keeps its optimizer
    steps when the global batch stays."""
    latest = rd.latest_checkpoint()
    if latest is None:
        return False
    saved_world = int(read_trainer_state(latest / STATE_FILE).get("world_size", 1))
    world = int(os.environ.get("WORLD_SIZE", "1"))  # set by torchrun / accelerate launch
    return saved_batch * saved_world == batch * world


def check_resumable_changes(rd: RunDir, diffs: list[str], *, batch_ok: bool = False) -> None:
    """Log the allowed changes of a resumed run's config; refuse any other in one line naming the first three.
    ``batch_ok``: ``train.batch_size`` may change too (the global batch stays, see :func:`same_global_batch`)."""
    prefixes = RESUMABLE_CHANGES + (("train.batch_size:",) if batch_ok else ())
    allowed = [d for d in diffs if d.startswith(prefixes)]
    refused = [d for d in diffs if d not in allowed]
    if refused:
        more = f" (and {len(refused) - 3} more)" if len(refused) > 3 else ""
        raise RunError(
            f"cannot resume {rd.path} with a changed config: {'; '.join(refused[:3])}{more}; resume with the "
            f"settings saved in {rd.config_path}, or start a new run (another --run-dir, or --overwrite). Only "
            "train.steps, the log/eval/save intervals, DDP/FSDP, the long-run settings (nonfinite, spike_factor, "
            "spike_window, divergence_factor, divergence_window, keep_best, collective_timeout_s), the eval section "
            "and a train.batch_size that keeps batch_size x processes may change on resume"
        )
    # a new train.steps gets the trainer's own line, which says what it does to the schedule
    shown = [d for d in allowed if not d.startswith("train.steps:")]
    if shown:
        logger.warning("resuming with a changed config: %s", "; ".join(shown))


def check_resume_config(rd: RunDir, saved: Mapping[str, Any], current: Mapping[str, Any]) -> None:
    """Refuse to resume the run of ``rd`` (trained with the config dict ``saved``) with ``current`` when it is another
    task type or another run (:func:`check_resumable_changes`); log the changes that are allowed."""
    before, now = saved.get("task", {}).get("type"), current.get("task", {}).get("type")
    if before != now:
        raise RunError(f"cannot resume {rd.path}: it holds a task.type {before!r} run, and this config trains "
                       f"task.type {now!r}; resume it with its own config ({rd.config_path}), or train into another "
                       "--run-dir")
    batch_ok = same_global_batch(rd, saved["train"]["batch_size"], current["train"]["batch_size"])
    check_resumable_changes(rd, config_differences(saved, current), batch_ok=batch_ok)


def check_resumed_files(rd: RunDir) -> None:
    """Refuse to resume a run whose checkpoints lost the tokenizer or model config they were trained with."""
    if rd.latest_checkpoint() is None:
        return
    lost = [p.name for p in (rd.tokenizer_path, rd.model_config_path) if not p.is_file()]
    if lost:  # a new tokenizer would silently give the saved weights other meanings
        raise RunError(f"cannot resume {rd.path}: {' and '.join(lost)} missing (the checkpoints need the tokenizer "
                       "and model config they were trained with); restore it, or start over with --overwrite")


def check_resumed_model(rd: RunDir, saved: Mapping[str, Any], current: Mapping[str, Any]) -> None:
    """Refuse to resume when the model sized for the data (``current``, a model config dict) differs from the
    saved ``model_config.json`` (``saved``, read in today's terms)."""
    diffs = config_differences(saved, current)
    if diffs:
        raise RunError(f"cannot resume {rd.path}: the model differs from the saved one ({'; '.join(diffs)}); "
                       "train into a new --run-dir or pass --overwrite")


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


def resumed_position(ckpt: Any) -> tuple[int, int]:
    """``(batches_consumed, tokens_seen)`` of a loaded checkpoint's trainer state: where the data stream resumes.

    Raises:
        CheckpointError: the state has no valid ``batches_consumed`` (not a state this trainer wrote).
    """
    try:
        batches = int(ckpt.trainer_state["batches_consumed"])
    except (KeyError, TypeError, ValueError):
        raise CheckpointError(f"{ckpt.path / STATE_FILE}: no valid 'batches_consumed' (the data "
                              "position); it is not a state this trainer wrote") from None
    return batches, int(ckpt.trainer_state.get("tokens_seen", 0))


def restore_process_rng(states: list[Any], rank: int, world_size: int, reseed: int) -> None:
    """This process's RNG state from a checkpoint's per-process ``states``; with another number of processes,
    a warning and ``seed_everything(reseed)`` instead (correct, not bit-identical to an uninterrupted run)."""
    if len(states) == world_size:
        restore_rng_state(states[rank])
        return
    logger.warning(
        "checkpoint has RNG states for %d process(es), this run has %d: reseeding (the run "
        "continues correctly but is not bit-identical to an uninterrupted one)",
        len(states), world_size,
    )
    seed_everything(reseed)
