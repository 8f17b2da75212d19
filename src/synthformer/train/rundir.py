"""The run directory read-only: the names of its files, what an earlier run left in it, and its lock (the lock
itself: :mod:`.runlock`). Everything that writes these files is :mod:`.run` (:class:`~synthformer.train.run.Run`).

Layout (the names every earlier version wrote, so their run directories keep working)::

    RUN/config.yaml                     the run's configuration
    RUN/metrics.jsonl                   one JSON object per log / eval line
    RUN/checkpoints/                    checkpoints (synthformer.train.checkpoint)
    RUN/tensorboard/                    TensorBoard events, with train.tensorboard=true
    RUN/trackers/                       the experiment trackers of train.log_with (synthformer.train.tracking)
    RUN/synthformer_tokenizer.json      the tokenizer                                     (task runs)
    RUN/model_config.json               the resolved model config                         (task runs)
    RUN/labels.json                     classification: the class names in id order       (task runs)
    RUN/eval_<split>.json               metrics written by ``synthformer eval``
    RUN/eval_<split>_hypotheses.txt     seq2seq: the decoded outputs of that evaluation
    RUN/.lock                           exists while a process owns RUN (see :meth:`RunDir.lock`)

``config.yaml`` is not part of an *earlier run* (a fresh run rewrites it). Files that are not in this list are
never reported, deleted or touched: they are *extra files*, kept in the directory by others (a study's clock and
result, an analysis' folder) and written through the run too (:class:`~synthformer.train.run.ExtraFiles`), under
names that are not the run's own (:meth:`RunDir.is_run_name`).
"""

from __future__ import annotations

import json
import logging
import os
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from .best import BEST_FILE, read_best
from .checkpoint import CHECKPOINTS_DIR, checkpoint_name, latest_checkpoint, list_checkpoints
from .run_errors import RunError, RunExistsError
from .runlock import LOCK_FILE, RunLock, held_by_this_process, lock_directory

__all__ = ["RunDir", "RunError", "RunExistsError", "RunLock", "is_main_process", "select_checkpoint"]

logger = logging.getLogger(__name__)


def is_main_process() -> bool:
    """True unless this is a non-zero rank of a multi-process launch (torchrun / accelerate set ``RANK``)."""
    return int(os.environ.get("RANK", "0")) == 0


class RunDir:
    """One run directory: the paths of its files, what an earlier run left there, and its lock.

    Args:
        path: the directory (it need not exist yet; nothing is created until :meth:`lock`).
    """

    CONFIG = "config.yaml"
    METRICS = "metrics.jsonl"
    CHECKPOINTS = CHECKPOINTS_DIR
    TENSORBOARD = "tensorboard"
    TOKENIZER = "synthformer_tokenizer.json"
    MODEL_CONFIG = "model_config.json"
    LABELS = "labels.json"
    INIT_FROM = "init_from.json"
    TRACKERS = "trackers"
    LOCK = LOCK_FILE
    #: Written by training (the trainer's own records): what ``training_only=True`` looks at and deletes.
    TRAINING_FILES: tuple[str, ...] = (CHECKPOINTS, METRICS, TENSORBOARD)
    #: Written next to the training files for a task run (the pipeline, ``convert t5``).
    ARTIFACT_FILES: tuple[str, ...] = (TOKENIZER, MODEL_CONFIG, LABELS, INIT_FROM)
    #: Every name the run's own entries take right in the directory (the evaluation results: :data:`EVAL_PATTERNS`).
    RUN_NAMES: tuple[str, ...] = (CONFIG, *TRAINING_FILES, TRACKERS, *ARTIFACT_FILES, LOCK)
    #: The names of the evaluation results (``eval_<split>.json``, ``eval_<split>_hypotheses.txt``).
    EVAL_PATTERNS: tuple[str, ...] = ("eval_*.json", "eval_*_hypotheses.txt")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @classmethod
    def is_run_name(cls, name: str) -> bool:
        """Whether ``name``, an entry right in a run directory, is one of the run's own (:data:`RUN_NAMES`, an
        evaluation result): extra files must take other names."""
        return name in cls.RUN_NAMES or any(fnmatchcase(name, pattern) for pattern in cls.EVAL_PATTERNS)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    # -- paths ---------------------------------------------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        """``RUN/config.yaml``."""
        return self.path / self.CONFIG

    @property
    def metrics_path(self) -> Path:
        """``RUN/metrics.jsonl``."""
        return self.path / self.METRICS

    @property
    def checkpoints_path(self) -> Path:
        """``RUN/checkpoints``."""
        return self.path / self.CHECKPOINTS

    @property
    def tensorboard_path(self) -> Path:
        """``RUN/tensorboard``."""
        return self.path / self.TENSORBOARD

    @property
    def tokenizer_path(self) -> Path:
        """``RUN/synthformer_tokenizer.json``."""
        return self.path / self.TOKENIZER

    @property
    def model_config_path(self) -> Path:
        """``RUN/model_config.json``."""
        return self.path / self.MODEL_CONFIG

    @property
    def labels_path(self) -> Path:
        """``RUN/labels.json``."""
        return self.path / self.LABELS

    @property
    def init_from_path(self) -> Path:
        """``init_from.json``: the pretrained run a finetuning run started from, and its new parameters."""
        return self.path / self.INIT_FROM

    def eval_path(self, split: str) -> Path:
        """``RUN/eval_<split>.json``: the metrics of ``synthformer eval`` on ``split``."""
        return self.path / f"eval_{_split_name(split)}.json"

    def hypotheses_path(self, split: str) -> Path:
        """``RUN/eval_<split>_hypotheses.txt``: the decoded outputs of that evaluation (seq2seq)."""
        return self.path / f"eval_{_split_name(split)}_hypotheses.txt"

    def eval_files(self) -> list[Path]:
        """The evaluation results in the directory (``eval_*.json``, ``eval_*_hypotheses.txt``), sorted."""
        if not self.path.is_dir():
            return []
        found = {p for pattern in self.EVAL_PATTERNS for p in self.path.glob(pattern)}
        return sorted(p for p in found if p.is_file())

    # -- checkpoints ---------------------------------------------------------------------------------------------
    def latest_checkpoint(self) -> Path | None:
        """The newest complete checkpoint (``checkpoints/latest`` or, if stale, the newest one), or None."""
        return latest_checkpoint(self.path)

    def list_checkpoints(self) -> list[Path]:
        """The complete checkpoints, oldest first."""
        return list_checkpoints(self.path)

    # -- an earlier run ------------------------------------------------------------------------------------------
    def earlier_run(self, *, training_only: bool = False) -> list[str]:
        """What in the directory belongs to an earlier run; empty if nothing (safe to start a fresh run).

        Counted: a non-empty ``checkpoints/`` (hidden temporaries aside), a non-empty ``metrics.jsonl``, and
        unless ``training_only``, the tokenizer, model config, labels and evaluation results. ``config.yaml`` and
        ``tensorboard/`` alone are not a run (nothing is lost when a fresh run rewrites them).

        Args:
            training_only: look only at what training writes (a :class:`~synthformer.train.Trainer` on its own:
                the task files a user keeps beside it are not an earlier run).
        """
        if not self.path.is_dir():
            return []
        found = []
        root = self.checkpoints_path
        if root.is_dir() and any(not p.name.startswith(".") for p in root.iterdir()):
            n = len(self.list_checkpoints())
            found.append(f"{self.CHECKPOINTS}/ ({n} checkpoint{'s' if n != 1 else ''})")
        if self.metrics_path.is_file() and self.metrics_path.stat().st_size > 0:
            found.append(self.METRICS)
        if not training_only:
            found += [name for name in self.ARTIFACT_FILES if (self.path / name).is_file()]
            found += [p.name for p in self.eval_files()]
        return found

    # -- metrics -------------------------------------------------------------------------------------------------
    def read_metrics(self) -> list[dict[str, Any]]:
        """The records of ``metrics.jsonl`` in order ([] if there is none).

        A line that is not a JSON object (cut short by a kill or a full disk while it was written) is skipped
        with a warning naming its line number; the records around it are kept.
        """
        if not self.metrics_path.is_file():
            return []
        records = []
        lines = self.metrics_path.read_bytes().decode("utf-8", errors="replace").splitlines()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                record = None
            if not isinstance(record, dict):
                where = "last line" if number == len(lines) else "line"
                logger.warning("%s:%d: skipping a torn metrics record (%s, written when the run was killed?): %.60r",
                               self.metrics_path, number, where, line)
                continue
            records.append(record)
        return records

    def _check_not_a_file(self) -> None:
        if self.path.exists() and not self.path.is_dir():
            raise RunError(f"run directory {self.path} exists and is not a directory")

    # -- locking -------------------------------------------------------------------------------------------------
    def lock(self, *, enabled: bool | None = None) -> RunLock:
        """Take the directory for this process (created if missing) until the returned lock is released.

        Use it as ``with run_dir.lock(): ...`` or keep the :class:`RunLock` and call ``release()``. The lock is an
        exclusive ``fcntl.lockf`` lock on ``RUN/.lock``: a second process fails at once, and the kernel drops the
        lock of a process that dies (a killed run leaves a ``.lock`` file that blocks nothing). A second lock in the
        same process fails too (a directory has one owner, :class:`~synthformer.train.run.Run`). Where ``fcntl``
        is missing (Windows) or the file system refuses locks, nothing is locked and a warning is logged.

        Args:
            enabled: lock (True) or return a lock that holds nothing (False); default: only on the main process
                of a multi-process launch (:func:`is_main_process`), since ranks of one run share the directory.

        Raises:
            RunError: another process (or this one) holds the directory, or the path is a file.
        """
        if not (is_main_process() if enabled is None else enabled):
            return RunLock(self.path, None)
        self._check_not_a_file()
        return lock_directory(self.path)

    def locked_by_this_process(self) -> bool:
        """True while this process holds the directory's lock."""
        return held_by_this_process(self.path)


def _split_name(split: str) -> str:
    if not split or "/" in split or os.sep in split or split.startswith("."):
        raise RunError(f"invalid split name {split!r}: expected a plain name such as 'valid' or 'test'")
    return split


def select_checkpoint(run_dir: str | Path, which: str | None = None) -> Path:
    """A run's checkpoint by name: ``latest`` (or None), ``best``, ``step_000040`` or a step number (``40``).

    Raises:
        RunError: no such checkpoint (naming what there is).
    """
    root = Path(run_dir) / CHECKPOINTS_DIR
    which = "latest" if which is None else str(which).strip()
    if which == "latest":
        found = latest_checkpoint(run_dir)
        if found is None:
            raise RunError(f"{run_dir} has no checkpoint yet (nothing in {root})")
        return found
    if which == "best":
        record = read_best(root)
        if record is None:
            raise RunError(f"{run_dir} has no best checkpoint ({root / BEST_FILE} is missing or damaged): the run "
                           "was trained without train.keep_best; use --checkpoint latest, or train with "
                           "train.keep_best=METRIC")
        name = record.checkpoint
    else:
        name = checkpoint_name(int(which)) if which.isdigit() else which
    complete = {p.name: p for p in list_checkpoints(run_dir)}
    if name not in complete:
        have = ", ".join(complete) or "none"
        raise RunError(f"checkpoint {which!r} of {run_dir}: {name} is not a complete checkpoint (there are: {have}); "
                       "expected latest, best, a step number or a checkpoint folder name")
    return complete[name]
