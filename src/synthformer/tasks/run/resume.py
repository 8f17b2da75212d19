"""The rules of ``synthformer train --resume``, all in one place.

* A run with a checkpoint resumes only with the tokenizer and model config it was trained with
  (:func:`resumed_inputs`): a new tokenizer would silently give the saved weights other meanings.
* Its config may differ from the saved ``config.yaml`` only in settings that do not change what the checkpoint
  means (:data:`RESUMABLE_CHANGES`, :func:`check_resume_config`), and not in its task type.
* The model sized for the data must be the saved one (:func:`check_resumed_model`).
* A directory with no tokenizer yet (the run stopped before writing one) starts fresh: nothing to resume.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from synthformer.data import Tokenizer, load_label_set, load_tokenizer
from synthformer.models import ModelConfig
from synthformer.train import RunDir, RunError, read_trainer_state, to_dict
from synthformer.train.checkpoint import STATE_FILE

from .config import RunConfig
from .loading import read_model_config, read_run_config

__all__ = ["EXECUTION_SETTINGS", "RESUMABLE_CHANGES", "ResumedInputs", "check_resumable_changes",
           "check_resume_config", "check_resumed_model", "config_differences", "resumed_inputs", "same_global_batch"]

logger = logging.getLogger(__name__)


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
    "train.spike_factor", "train.spike_window", "train.keep_best", "train.collective_timeout_s", "eval.",
)
#: Of those, the settings of how a run executes, not of what it computes: a study that differs only in them (or in
#: their defaults, which a newer version may change) is the same study.
EXECUTION_SETTINGS: tuple[str, ...] = (
    "train.tensorboard", "train.log_with", "train.tracker_project", "train.num_workers", "train.distributed",
    "train.fsdp_units", "train.fsdp_forward_methods", "train.collective_timeout_s",
)


def same_global_batch(rd: RunDir, saved: RunConfig, run: RunConfig) -> bool:
    """Whether ``train.batch_size`` times the number of processes is what the latest checkpoint was trained with
    (a run moved to another number of processes keeps its optimizer steps when the global batch stays)."""
    latest = rd.latest_checkpoint()
    if latest is None:
        return False
    saved_world = int(read_trainer_state(latest / STATE_FILE).get("world_size", 1))
    world = int(os.environ.get("WORLD_SIZE", "1"))  # set by torchrun / accelerate launch
    return saved.train.batch_size * saved_world == run.train.batch_size * world


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
            "spike_window, keep_best, collective_timeout_s), the eval section and a train.batch_size that keeps "
            "batch_size x processes may change on resume"
        )
    # a new train.steps gets the trainer's own line, which says what it does to the schedule
    shown = [d for d in allowed if not d.startswith("train.steps:")]
    if shown:
        logger.warning("resuming with a changed config: %s", "; ".join(shown))


def check_resume_config(rd: RunDir, saved: RunConfig, run: RunConfig) -> None:
    """Refuse to resume the run of ``rd`` (trained with ``saved``) with ``run`` when it is another task type or
    another run (:func:`check_resumable_changes`); log the changes that are allowed."""
    if saved.task.type != run.task.type:
        raise RunError(f"cannot resume {rd.path}: it holds a task.type {saved.task.type!r} run, and this config "
                       f"trains task.type {run.task.type!r}; resume it with its own config ({rd.config_path}), or "
                       "train into another --run-dir")
    check_resumable_changes(rd, config_differences(to_dict(saved), to_dict(run)),
                            batch_ok=same_global_batch(rd, saved, run))


@dataclass
class ResumedInputs:
    """What a resumed run reuses from its directory: the tokenizer and the class names it was trained with."""

    tokenizer: Tokenizer
    label_set: list[str] | None


def resumed_inputs(rd: RunDir, run: RunConfig, *, main_process: bool = True) -> ResumedInputs | None:
    """Check that the run of ``rd`` may be resumed with ``run`` and return what it reuses; None when there is
    nothing to resume (no tokenizer yet: the run starts fresh). Only the main process of a multi-process launch
    checks the files (the others read them once it has).

    Raises:
        RunError: a checkpoint without its tokenizer or model config, another task type, or a config change
            that would make another run of the saved one.
    """
    if main_process and rd.latest_checkpoint() is not None:
        lost = [p.name for p in (rd.tokenizer_path, rd.model_config_path) if not p.is_file()]
        if lost:  # a new tokenizer would silently give the saved weights other meanings
            raise RunError(f"cannot resume {rd.path}: {' and '.join(lost)} missing (the checkpoints need the "
                           "tokenizer and model config they were trained with); restore it, or start over with "
                           "--overwrite")
    if not rd.tokenizer_path.is_file():
        return None
    if rd.config_path.is_file():
        check_resume_config(rd, read_run_config(rd), run)
    labels = load_label_set(rd.labels_path) if rd.labels_path.is_file() else None
    return ResumedInputs(load_tokenizer(rd.tokenizer_path), labels)


def check_resumed_model(rd: RunDir, model_config: ModelConfig) -> None:
    """Refuse to resume when the model sized for the data differs from the saved ``model_config.json`` (a config
    written by an earlier version is compared in today's terms)."""
    if not rd.model_config_path.is_file():
        return
    diffs = config_differences(read_model_config(rd).to_dict(), model_config.to_dict())
    if diffs:
        raise RunError(f"cannot resume {rd.path}: the model differs from the saved one ({'; '.join(diffs)}); "
                       "train into a new --run-dir or pass --overwrite")
