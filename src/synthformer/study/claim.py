"""Who a study directory belongs to: a study that trained nothing does not claim it, and ``overwrite`` replaces a
study only once the new one starts.

A study writes its manifest (``study.json``) before its first run, so that several processes can agree on it. A
study that fails before any of its runs starts (a missing data file, a value refused when the data is read) would
then leave a manifest that refuses the corrected command as "a different study". So:

- a failed study that started no run takes its manifest back (:func:`release_unstarted`), and a manifest left by
  one that died before starting a run (a kill) is replaced by the next study without a question;
- a study that started a run keeps the directory: a different study is refused, unless asked to ``overwrite``;
- ``overwrite`` deletes the earlier study only when the new study's first run starts training (as ``train
  --overwrite`` deletes an earlier run only when the trainer starts): a new study that fails before then leaves
  the earlier one as it was.

A run has *started* once the trainer wrote anything into its directory (``config.yaml`` first): the lock file of a
process that died is no start, the lock held by a live process is (that process may be about to start it).
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from synthformer.common import atomic_write_text
from synthformer.train import Run, RunDir, RunError

from .manifest import MANIFEST, StudySpec, check_manifest
from .runs import RESULT

__all__ = ["Claim", "StartingRun", "check_readable", "claim_study", "clear_earlier_study", "release_unstarted",
           "started_anything"]

logger = logging.getLogger(__name__)

#: How a study holds its directory: a ``new`` study (this process wrote the manifest), a ``continued`` one (the
#: manifest was this study's), or ``replace``: an earlier study stays until the new one's first run starts.
Claim = Literal["new", "continued", "replace"]


def _held_by_another(directory: Path) -> bool:
    """Whether a live process holds ``directory``'s lock (a lock file left by a dead process holds nothing)."""
    try:
        RunDir(directory).lock().release()
    except RunError:
        return True
    return False


def started_anything(out: Path) -> bool:
    """Whether any run of the study in ``out`` has started (see the module docstring), or is held by a live process.

    Only the manifest and lock files are no sign of a start; the study's own lock is the caller's to hold."""
    for path in out.rglob("*"):
        if path.is_dir() or path == out / MANIFEST:
            continue
        if path.name != RunDir.LOCK:
            return True
        if path.parent != out and _held_by_another(path.parent):
            return True
    return False


def claim_study(out: Path, spec: StudySpec, *, overwrite: bool = False) -> Claim:
    """Check or write the manifest of ``spec`` in ``out`` (call under the study directory's lock).

    Raises:
        RunError: ``out`` holds a study that started a run and is a different one (without ``overwrite``), is not
            a study directory, or is a file (:func:`~synthformer.study.manifest.check_manifest`).
    """
    manifest = out / MANIFEST
    if manifest.is_file() and out.is_dir() and not started_anything(out):
        # a study that trained nothing (it failed, or was killed, before its first run started) holds nothing to keep
        logger.info("%s: replacing the manifest of a study that trained nothing", out)
        manifest.unlink()
        _remove_empty_dirs(out)
    elif overwrite and manifest.is_file():
        check_readable(manifest)
        return "replace"
    return "continued" if check_manifest(out, spec) else "new"


def check_readable(manifest: Path) -> None:
    """Refuse to overwrite a directory whose ``study.json`` is not a study's manifest (it may not be a study)."""
    try:
        if not isinstance(json.loads(manifest.read_text(encoding="utf-8")), dict):
            raise ValueError("not an object")
    except (ValueError, UnicodeDecodeError) as err:
        raise RunError(f"{manifest}: not a study manifest ({err}); remove it or choose another --out") from None


def release_unstarted(out: Path) -> bool:
    """After a failure (call under the study directory's lock): take back the manifest of a new study that started
    no run, and the empty folders its runs left. Returns whether it was taken back (the caller may then remove
    ``out`` itself, once its lock is released, if it created it)."""
    if not (out / MANIFEST).is_file() or started_anything(out):
        return False
    (out / MANIFEST).unlink()
    _remove_empty_dirs(out)
    logger.info("%s: no run started; the study directory is left free", out)
    return True


def clear_earlier_study(out: Path, keep: Run, spec: StudySpec) -> None:
    """Delete the earlier study in ``out`` (its runs, tables, figures and report) but ``keep``, the run being
    started (its earlier run is deleted by the run itself: it is opened with ``overwrite``), and lock files;
    then write ``spec``'s manifest."""
    logger.warning("replacing the earlier study in %s", out)
    _clear_around(out, keep.path.resolve(), spare=(RunDir.LOCK,))
    # the earlier run's result (the run's overwrite keeps extra files), before the manifest says the study is new
    keep.remove_extra(RESULT)
    atomic_write_text(out / MANIFEST, json.dumps(spec.to_json(), indent=1) + "\n")


def _clear_around(directory: Path, keep: Path, spare: tuple[str, ...] = ()) -> None:
    """Delete everything in ``directory`` but ``keep`` (and the folders on the way to it) and the names ``spare``."""
    for path in sorted(directory.iterdir()):
        if path.resolve() == keep or path.name in spare:
            continue
        if path.is_dir() and keep.is_relative_to(path.resolve()):
            _clear_around(path, keep)
        elif path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def _remove_empty_dirs(out: Path) -> None:
    """Remove the empty folders under ``out`` (a failed run's variant folder), deepest first."""
    for path in sorted((p for p in out.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        try:
            path.rmdir()
        except OSError:
            pass


class StartingRun(Run):
    """A :class:`~synthformer.train.Run` that calls ``on_start`` once, just before the trainer starts it (after the
    trainer's own checks: a run refused by them calls nothing)."""

    on_start: Callable[[], None] | None = None

    def start(self, config: Any, **files: Any) -> None:
        if not self.started and self.on_start is not None:
            on_start, self.on_start = self.on_start, None
            on_start()
        super().start(config, **files)
