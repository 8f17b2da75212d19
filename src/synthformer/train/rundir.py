"""The run directory: the names of its files, an earlier run in it, cleaning it, and locking it (the lock itself:
:mod:`.runlock`).

Layout (the names every earlier version wrote, so their run directories keep working)::

    RUN/config.yaml                     the run's configuration                           (trainer)
    RUN/metrics.jsonl                   one JSON object per log / eval line               (trainer)
    RUN/checkpoints/                    checkpoints (synthformer.train.checkpoint)        (trainer)
    RUN/tensorboard/                    TensorBoard events, with train.tensorboard=true   (trainer)
    RUN/synthformer_tokenizer.json      the tokenizer                                     (task pipeline)
    RUN/model_config.json               the resolved model config                         (task pipeline)
    RUN/labels.json                     classification: the class names in id order       (task pipeline)
    RUN/eval_<split>.json               metrics written by ``synthformer eval``
    RUN/eval_<split>_hypotheses.txt     seq2seq: the decoded outputs of that evaluation
    RUN/.lock                           exists while a process trains into RUN (see :meth:`RunDir.lock`)

``config.yaml`` is not part of an *earlier run* (a fresh run rewrites it) and :meth:`RunDir.clear` keeps it, as
every earlier version did. Files that are not in this list are never reported, deleted or touched.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from synthformer.common.io import atomic_write_text

from .checkpoint import CHECKPOINTS_DIR, latest_checkpoint, list_checkpoints
from .run_errors import RunError, RunExistsError
from .runlock import LOCK_FILE, RunLock, held_by_this_process, lock_directory

__all__ = ["RunDir", "RunError", "RunExistsError", "RunLock", "is_main_process"]

logger = logging.getLogger(__name__)


def is_main_process() -> bool:
    """True unless this is a non-zero rank of a multi-process launch (torchrun / accelerate set ``RANK``)."""
    return int(os.environ.get("RANK", "0")) == 0


class RunDir:
    """One run directory: the paths of its files, what an earlier run left there, cleaning and locking.

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
    LOCK = LOCK_FILE
    #: Written by training (the trainer's own files): what ``training_only=True`` looks at and deletes.
    TRAINING_FILES: tuple[str, ...] = (CHECKPOINTS, METRICS, TENSORBOARD)
    #: Written next to the training files by the task pipeline.
    ARTIFACT_FILES: tuple[str, ...] = (TOKENIZER, MODEL_CONFIG, LABELS, INIT_FROM)

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

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
        found = {p for pattern in ("eval_*.json", "eval_*_hypotheses.txt") for p in self.path.glob(pattern)}
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
            training_only: look only at what training writes (the trainer's check: the files a task pipeline
                wrote for the same run just before training are not an earlier run).
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

    def check(self, resume: bool = False, overwrite: bool = False, *, training_only: bool = False) -> list[str]:
        """Refuse to touch an earlier run unless asked; return what an earlier run left (see :meth:`earlier_run`).

        Raises:
            RunError: ``resume`` and ``overwrite`` together, or a file where the directory should be.
            RunExistsError: an earlier run without ``resume`` or ``overwrite`` (also a ``FileExistsError``).
        """
        if resume and overwrite:
            raise RunError("--resume and --overwrite contradict each other; choose one")
        self._check_not_a_file()
        existing = self.earlier_run(training_only=training_only)
        if existing and not (resume or overwrite):
            what = "checkpoints, metrics and TensorBoard logs" if training_only else (
                "checkpoints, metrics, TensorBoard logs, tokenizer, model config, labels and eval results")
            raise RunExistsError(
                f"{self.path} already holds a run ({', '.join(existing)}); pass --resume (resume=True) to continue "
                f"it, --overwrite (overwrite=True) to start it over (deletes its {what}), or choose another run "
                "directory (--run-dir)"
            )
        return existing

    def clear(self, *, training_only: bool = False) -> None:
        """Delete every file of an earlier run (with ``training_only``, only what training writes).

        Deleted: ``checkpoints/``, ``tensorboard/``, ``metrics.jsonl`` and, unless ``training_only``, the
        tokenizer, model config, labels and evaluation results. ``config.yaml``, the lock and any other file stay.
        """
        if not self.path.is_dir():
            return
        logger.warning("deleting the earlier run's files in %s", self.path)
        shutil.rmtree(self.checkpoints_path, ignore_errors=True)
        shutil.rmtree(self.tensorboard_path, ignore_errors=True)
        self.metrics_path.unlink(missing_ok=True)
        if not training_only:
            for name in self.ARTIFACT_FILES:
                (self.path / name).unlink(missing_ok=True)
            for path in self.eval_files():
                path.unlink(missing_ok=True)

    # -- metrics -------------------------------------------------------------------------------------------------
    def append_metrics(self, record: Mapping[str, Any]) -> None:
        """Append ``record`` to ``metrics.jsonl`` as one JSON line.

        A line torn by a kill mid-write (no newline at the end of the file) is closed first, so the new record
        starts a line of its own instead of being glued to it; :meth:`read_metrics` then skips the torn one.
        """
        with open(self.metrics_path, "a+b") as fh:
            if fh.tell() > 0:
                fh.seek(-1, os.SEEK_END)
                torn = fh.read(1) != b"\n"
                fh.seek(0, os.SEEK_END)
                if torn:
                    fh.write(b"\n")
            fh.write((json.dumps(record) + "\n").encode("utf-8"))

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

    def truncate_metrics(self, step: int) -> None:
        """Drop the metric lines logged after ``step`` (by a run killed after its last checkpoint), atomically."""
        path = self.metrics_path
        if not path.is_file():
            return
        kept = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                if json.loads(line).get("step", 0) > step:
                    continue
            except (json.JSONDecodeError, AttributeError):
                continue  # a line cut short by the crash
            kept.append(line)
        atomic_write_text(path, "".join(f"{line}\n" for line in kept))

    def _check_not_a_file(self) -> None:
        if self.path.exists() and not self.path.is_dir():
            raise RunError(f"run directory {self.path} exists and is not a directory")

    # -- locking -------------------------------------------------------------------------------------------------
    def lock(self, *, enabled: bool | None = None) -> RunLock:
        """Take the directory for this process (created if missing) until the returned lock is released.

        Use it as ``with run_dir.lock(): ...`` or keep the :class:`RunLock` and call ``release()``. The lock is an
        exclusive ``fcntl.lockf`` lock on ``RUN/.lock``: a second process fails at once, and the kernel drops the
        lock of a process that dies (a killed run leaves a ``.lock`` file that blocks nothing). The lock is
        re-entrant within a process (a pipeline and the trainer it starts may both take it). Where ``fcntl`` is
        missing (Windows) or the file system refuses locks, nothing is locked and a warning is logged.

        Args:
            enabled: lock (True) or return a lock that holds nothing (False); default: only on the main process
                of a multi-process launch (:func:`is_main_process`), since ranks of one run share the directory.

        Raises:
            RunError: another process holds the directory, or the path is a file.
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
