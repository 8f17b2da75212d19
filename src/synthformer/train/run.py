"""A run directory's one owner from its lock to its last save (:class:`Run`), and the only module that writes
under a run directory, with the parts of the run's record it and the Trainer delegate (checkpoints, the lock, the
trackers; ``tests/test_layering_runfiles.py`` keeps it so). Whoever opens a run closes it:
``synthformer train`` and ``compare`` (:func:`~synthformer.tasks.train_run`), ``study`` (per run, handed to the
pipeline), ``convert t5``, or the caller of a :class:`~synthformer.train.Trainer` on its own; the Trainer receives
it::

    with Run.open(path, resume=..., overwrite=...) as run:  # lock, refuse an earlier run unless asked
        run.stage(config, tokenizer=..., model_config=...)   # the run files, written when the trainer starts it
        Trainer(model, data, train_config, run).train()      # starts the run (deletes an overwritten one, writes
                                                             # the files, once), then metrics and checkpoints

An opener that trains no model calls ``run.start(config, tokenizer=..., ...)`` itself instead of ``stage``. Staged
files wait for the trainer's start because the trainer refuses a run it cannot train (too few examples for one
batch, a damaged checkpoint) before it starts it: a refused run leaves no trace, and a rerun with the mistake fixed
needs no ``--overwrite``.

Others keep *extra files* in a run directory (a study's ``study_clock.jsonl`` and ``study_result.json``, an
analysis' ``analysis/`` folder): they write them through the run too, under names that are not the run's own
(:class:`ExtraFiles`: ``run.write_extra``, ``run.append_extra_jsonl``, ``run.extra_dir``; :func:`open_extras`
for a run directory nobody holds open, such as a finished run being analysed).

Under torchrun every process opens the run; only the main one locks, checks and writes. Files are written
atomically (``metrics.jsonl`` appended line by line), so a kill at any point leaves the previous state readable.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any

from accelerate import Accelerator

from synthformer.common import atomic_output, atomic_write_bytes, atomic_write_text, dump_config

from .checkpoint import STATE_FILE, latest_checkpoint, read_trainer_state, save_checkpoint
from .hooks import any_process
from .resume import check_earlier_run, check_resume_config, check_resumed_files
from .run_errors import RunError
from .rundir import RunDir, RunLock, is_main_process

__all__ = ["ExtraFiles", "Run", "append_metrics", "open_extras", "write_evaluation"]

logger = logging.getLogger(__name__)


class ExtraFiles:
    """The extra files of a run directory: what others keep in it beside the run's own files, written here as the
    run's are (atomically, and only on the main process, ``is_main``; the others get the paths and write nothing).

    A name is a relative path of plain names inside the directory (``study_result.json``,
    ``analysis/analysis.json``): no ``..``, no leading ``/``, no hidden part (the lock, the atomic writers'
    temporaries), and its first part is not one of the run's own entries (:meth:`RunDir.is_run_name`:
    ``config.yaml``, ``checkpoints``, ``eval_test.json``, ...). A :class:`Run` is one; :func:`open_extras` gives
    one for a run directory nobody holds open.
    """

    def __init__(self, rundir: RunDir, *, is_main: bool = True) -> None:
        self.rundir = rundir
        self.is_main = is_main

    @property
    def path(self) -> Path:
        """The run directory's path."""
        return self.rundir.path

    def extra_path(self, name: str) -> Path:
        """The path of the extra file ``name`` (checked, see the class docstring; nothing is written).

        Raises:
            ValueError: ``name`` escapes the run directory, is hidden, or collides with one of the run's files.
        """
        parts = name.split("/") if isinstance(name, str) else None
        if not parts or "\\" in name or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
            raise ValueError(f"extra file name {name!r}: expected a relative path of plain names inside the run "
                             f"directory {self.path}, such as 'notes.json' or 'analysis/figure.png' (no '..', no "
                             "leading '/', no hidden part)")
        if RunDir.is_run_name(parts[0]):
            raise ValueError(f"extra file name {name!r} collides with the run's own {parts[0]!r}: the run's files "
                             f"({', '.join(RunDir.RUN_NAMES)}, {', '.join(RunDir.EVAL_PATTERNS)}) are written by "
                             "the run itself; choose another name")
        return self.path.joinpath(*PurePosixPath(name).parts)

    def write_extra(self, name: str, data: str | bytes) -> Path:
        """Write ``data`` (text: UTF-8) to the extra file ``name`` atomically, creating its folders; returns its path.

        Raises:
            ValueError: a bad ``name`` (:meth:`extra_path`).
            TypeError: ``data`` is neither ``str`` nor ``bytes``.
        """
        path = self.extra_path(name)
        if not isinstance(data, (str, bytes)):
            raise TypeError(f"write_extra({name!r}): expected str or bytes, got {type(data).__name__}")
        if self.is_main:
            if isinstance(data, str):
                atomic_write_text(path, data)
            else:
                atomic_write_bytes(path, data)
        return path

    def append_extra_jsonl(self, name: str, record: Mapping[str, Any]) -> Path:
        """Append ``record`` to the extra file ``name`` as one JSON line (as :func:`append_metrics` appends: a line
        torn by a kill is closed first); returns its path.

        Raises:
            ValueError: a bad ``name`` (:meth:`extra_path`).
        """
        path = self.extra_path(name)
        if self.is_main:
            path.parent.mkdir(parents=True, exist_ok=True)
            _append_line(path, record)
        return path

    def extra_dir(self, name: str) -> Path:
        """The folder ``name`` of the run directory, created (with its parents) on the main process, for a caller
        that writes several files of its own into it (an analysis' figures and reports); returns its path.

        Raises:
            ValueError: a bad ``name`` (:meth:`extra_path`), or a file where the folder should be.
        """
        path = self.extra_path(name)
        if path.exists() and not path.is_dir():
            raise ValueError(f"extra folder {name!r}: {path} exists and is not a folder")
        if self.is_main:
            path.mkdir(parents=True, exist_ok=True)
        return path

    def remove_extra(self, name: str) -> None:
        """Delete the extra file ``name`` if it is there (on the main process).

        Raises:
            ValueError: a bad ``name`` (:meth:`extra_path`).
        """
        path = self.extra_path(name)
        if self.is_main:
            path.unlink(missing_ok=True)


def open_extras(path: str | os.PathLike[str] | RunDir) -> ExtraFiles:
    """The extra files of the existing run directory ``path``, for a caller that holds no :class:`Run` (the
    analysis of a finished run). Nothing is locked: extra files are no part of the run, and no run writes them.

    Raises:
        RunError: ``path`` is not an existing directory.
    """
    rd = path if isinstance(path, RunDir) else RunDir(path)
    if not rd.path.is_dir():
        raise RunError(f"run directory {rd.path} not found (or not a directory): extra files go into an existing run")
    return ExtraFiles(rd, is_main=is_main_process())


class Run(ExtraFiles):
    """An open run directory (see the module docstring), made by :meth:`open`; ``existing``: what an earlier run left
    in it (checked on the main process, ``is_main``; empty elsewhere). Its extra files: :class:`ExtraFiles`."""

    def __init__(self, rundir: RunDir, lock: RunLock, *, resume: bool, overwrite: bool, training_only: bool,
                 is_main: bool, existing: list[str]) -> None:
        super().__init__(rundir, is_main=is_main)
        self.resume = resume
        self.overwrite = overwrite
        self.existing = existing
        self.started = False
        self._staged: tuple[Any, dict[str, Any]] | None = None
        self._training_only = training_only
        self._lock = lock
        # a run dropped without close() lets the directory go when it is collected
        self._release = weakref.finalize(self, lock.release)

    @classmethod
    def open(cls, path: str | os.PathLike[str] | RunDir, *, resume: bool = False, overwrite: bool = False,
             training_only: bool = False, accelerator: Accelerator | None = None) -> Run:
        """Lock ``path`` (on the main process) and refuse an earlier run in it unless resumed or overwritten.

        Args:
            path: the run directory (created by the lock if missing; removed at :meth:`close` if left empty).
            resume: continue the run in it from its latest checkpoint.
            overwrite: start it over: the earlier run is deleted by :meth:`start`, not before, so a run that fails
                while preparing its data leaves it intact.
            training_only: only what training writes (checkpoints, metrics, TensorBoard logs) counts as an earlier
                run and is deleted by ``overwrite`` (a Trainer on its own: task files kept beside it are the user's).
            accelerator: make a failure on the main process fail every process (a collective: every process
                opens the run); without one, the other processes rely on the launcher stopping them.

        Raises:
            RunError: ``resume`` and ``overwrite`` together, a file where the directory should be, or another
                process (or this one) holds the directory.
            RunExistsError: an earlier run without ``resume`` or ``overwrite`` (also a ``FileExistsError``).
        """
        rd = path if isinstance(path, RunDir) else RunDir(path)
        if resume and overwrite:  # on every process, before anything is touched
            raise RunError("--resume and --overwrite contradict each other; choose one")
        is_main = accelerator.is_main_process if accelerator is not None else is_main_process()
        # the other processes of a launch share the main process's lock: theirs holds nothing
        lock, existing, error = rd.lock(enabled=False), [], None
        if is_main:
            try:
                lock = rd.lock(enabled=True)
                existing = check_earlier_run(rd, resume, overwrite, training_only=training_only)
            except RunError as err:
                lock.release()
                error = err
        if accelerator is not None and any_process(accelerator, error is not None):
            raise error or RunError(f"the main process could not open the run directory {rd.path}")
        if error is not None:
            raise error
        return cls(rd, lock, resume=resume, overwrite=overwrite, training_only=training_only, is_main=is_main,
                   existing=existing)

    # -- the resume rules (task runs: the caller reads the saved config in its own terms, as a dict) ---------------
    def check_resume(self, read_saved: Callable[[], Mapping[str, Any]], config: Mapping[str, Any]) -> bool:
        """Check that this run may resume with ``config`` (its ``to_dict``); ``read_saved`` reads the saved
        ``config.yaml`` the same way (called only when there is one to compare with). Returns whether there is
        anything to resume (a saved tokenizer; without one the run starts fresh). Only the main process checks
        the files.

        Raises:
            RunError: a checkpoint without its tokenizer or model config, or past ``train.steps``, another task
                type, or a config change that would make another run of the saved one (:mod:`.resume`).
        """
        if self.is_main:
            check_resumed_files(self.rundir)
        _check_resumed_steps(self.rundir, _train_steps(config))  # on every process: all of them stop alike
        if not self.rundir.tokenizer_path.is_file():
            return False
        if self.rundir.config_path.is_file():
            check_resume_config(self.rundir, read_saved(), config)
        return True

    # -- writing --------------------------------------------------------------------------------------------------
    def stage(self, config: Any, *, tokenizer: Any = None, model_config: Mapping[str, Any] | None = None,
              labels: Sequence[str] | None = None, init_from: Mapping[str, Any] | None = None) -> None:
        """Hold what :meth:`start` is to write (the same arguments) until the trainer starts the run: nothing is
        written or deleted now, so a run the trainer refuses leaves the directory as it was. The staged ``config``
        is the one ``config.yaml`` gets (the trainer starts the run with its ``train`` section only)."""
        self._staged = (config, {"tokenizer": tokenizer, "model_config": model_config, "labels": labels,
                                 "init_from": init_from})

    def start(self, config: Any, *, tokenizer: Any = None, model_config: Mapping[str, Any] | None = None,
              labels: Sequence[str] | None = None, init_from: Mapping[str, Any] | None = None) -> None:
        """Begin the run (once: the trainer calls it with its config, when nothing can stop the training any
        more; an opener that trains no model calls it itself with more files): delete an overwritten earlier
        run, create the directory, write ``config.yaml`` (``config``, or the staged one, see :meth:`stage`; a
        checkpoint's own is kept: its run was trained with it), the tokenizer (anything with ``save(path)``),
        ``model_config.json`` and ``labels.json`` (a resumed run keeps those it was trained with) and
        ``init_from.json`` (dicts and lists, as JSON).

        Raises:
            RunError: a resumed run whose latest checkpoint is past ``config``'s ``train.steps``
                (:func:`_check_resumed_steps`; nothing is written then).
        """
        if self.started:
            return
        if self._staged is not None:
            config, staged = self._staged
            tokenizer = tokenizer if tokenizer is not None else staged["tokenizer"]
            model_config = model_config if model_config is not None else staged["model_config"]
            labels = labels if labels is not None else staged["labels"]
            init_from = init_from if init_from is not None else staged["init_from"]
        if self.resume:  # a Trainer on its own gets no check_resume: the steps are checked here for it
            _check_resumed_steps(self.rundir, _train_steps(config))
        self.started = True
        if not self.is_main:
            return
        rd = self.rundir
        if self.overwrite and self.existing:
            self._clear()
        rd.path.mkdir(parents=True, exist_ok=True)
        if not (self.resume and rd.tokenizer_path.is_file()):
            if tokenizer is not None:
                with atomic_output(rd.tokenizer_path) as tmp:
                    tokenizer.save(tmp)
            if model_config is not None:
                atomic_write_text(rd.model_config_path, json.dumps(dict(model_config), indent=1) + "\n")
            if labels is not None:  # the format of synthformer.data.save_label_set, which train cannot import
                atomic_write_text(rd.labels_path, json.dumps(list(labels), ensure_ascii=False) + "\n")
        if rd.latest_checkpoint() is None or not rd.config_path.exists():
            atomic_write_text(rd.config_path, dump_config(config))
        if init_from is not None:
            atomic_write_text(rd.init_from_path, json.dumps(dict(init_from), indent=1) + "\n")

    def _clear(self) -> None:
        """Delete the earlier run's files: what training writes and, unless ``training_only``, the task files and
        evaluation results. ``config.yaml``, the lock and any other file stay."""
        rd = self.rundir
        logger.warning("deleting the earlier run's files in %s", rd.path)
        shutil.rmtree(rd.checkpoints_path, ignore_errors=True)
        shutil.rmtree(rd.tensorboard_path, ignore_errors=True)
        rd.metrics_path.unlink(missing_ok=True)
        if not self._training_only:
            for name in RunDir.ARTIFACT_FILES:
                (rd.path / name).unlink(missing_ok=True)
            for path in rd.eval_files():
                path.unlink(missing_ok=True)

    def append_metrics(self, record: Mapping[str, Any]) -> None:
        """:func:`append_metrics` into this run."""
        append_metrics(self.rundir, record)

    def truncate_metrics(self, step: int) -> None:
        """Drop the metric lines logged after ``step`` (by a run killed after its last checkpoint), atomically."""
        path = self.rundir.metrics_path
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

    def save_checkpoint(self, step: int, model: Any, **kwargs: Any) -> Path:
        """:func:`~synthformer.train.checkpoint.save_checkpoint` into this run (main process only); a failed save
        says what is safe and how to go on."""
        try:
            return save_checkpoint(self.path, step, model, **kwargs)
        except OSError as err:  # a full disk, a quota, a vanished mount
            previous = latest_checkpoint(self.path)
            kept = (f"the previous checkpoint ({previous.name}) is intact" if previous is not None
                    else "there is no earlier checkpoint")
            raise OSError(err.errno, f"could not save the checkpoint of step {step} in {self.path}: "
                                     f"{err.strerror or err}; {kept}; fix the cause and continue with --resume"
                          ) from err

    # -- the end --------------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Unlock the directory (idempotent); a directory the lock created and nothing was written to goes."""
        self._release()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _check_resumed_steps(rd: RunDir, steps: int | None) -> None:
    """Refuse to resume a run whose latest checkpoint is past ``steps`` (``train.steps`` now; None: not checked).

    A run cannot be shortened below what it has trained: the trainer would train nothing, and its evaluation and
    metrics would then speak of a ``train.steps`` the weights are not. A checkpoint whose ``trainer_state.json``
    cannot be read is left to the trainer's load, which names what is wrong with it.
    """
    latest = rd.latest_checkpoint() if steps is not None else None
    if latest is None:
        return
    try:
        done = int(read_trainer_state(latest / STATE_FILE)["step"])
    except ValueError:  # CheckpointError: reported by the load, with the same words, where it was before
        return
    if done > steps:
        raise RunError(f"cannot resume {rd.path}: its latest checkpoint ({latest.name}) is at step {done}, past "
                       f"train.steps={steps}; resume with train.steps={done} or more (more trains on), or start "
                       "over with --overwrite (or another --run-dir)")


def _train_steps(config: Any) -> int | None:
    """``train.steps`` of a run's config: a config dict or a task's run config (a ``train`` section), or a
    :class:`~.config.TrainConfig` (a Trainer on its own); None when it has none."""
    if isinstance(config, Mapping):
        train = config.get("train", config)
        steps = train.get("steps") if isinstance(train, Mapping) else None
    else:
        steps = getattr(getattr(config, "train", config), "steps", None)
    return steps if isinstance(steps, int) and not isinstance(steps, bool) else None


def append_metrics(rd: RunDir, record: Mapping[str, Any]) -> None:
    """Append ``record`` to ``rd``'s ``metrics.jsonl`` as one JSON line (a run's trainer, or ``synthformer eval``
    on a finished run, which needs no lock: it adds a line and rewrites nothing).

    A line torn by a kill mid-write (no newline at the end of the file) is closed first, so the new record starts a
    line of its own instead of being glued to it; :meth:`RunDir.read_metrics` then skips the torn one.
    """
    _append_line(rd.metrics_path, record)


def _append_line(path: Path, record: Mapping[str, Any]) -> None:
    """Append ``record`` to the JSON-lines file ``path``, closing a line torn by a kill first."""
    with open(path, "a+b") as fh:
        if fh.tell() > 0:
            fh.seek(-1, os.SEEK_END)
            torn = fh.read(1) != b"\n"
            fh.seek(0, os.SEEK_END)
            if torn:
                fh.write(b"\n")
        fh.write((json.dumps(record) + "\n").encode("utf-8"))


def write_evaluation(rd: RunDir, split: str, report: Mapping[str, Any], hypotheses: Sequence[str] = ()) -> Path:
    """Write ``synthformer eval``'s results: ``eval_<split>.json`` and, for seq2seq, the decoded outputs one per
    line (``eval_<split>_hypotheses.txt``); returns the first path."""
    path = rd.eval_path(split)
    atomic_write_text(path, json.dumps(dict(report), indent=1) + "\n")
    if hypotheses:
        atomic_write_text(rd.hypotheses_path(split), "".join(h.replace("\n", " ") + "\n" for h in hypotheses))
    return path
