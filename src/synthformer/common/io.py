"""Crash-safe file writing: a file is written beside its final place, fsync'ed, and renamed into place.

``os.replace`` is atomic on POSIX, so a reader (or a process started after a crash) sees the old file or the new
one, never half of one. The directory is fsync'ed after the rename so that the rename itself survives a power
loss. Every package may use this module (it is part of the lowest layer, :mod:`synthformer.common`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["TMP_PREFIX", "atomic_output", "atomic_write_bytes", "atomic_write_text", "created_mode", "fsync_path"]

#: Name prefix of the temporaries: hidden (a leading dot), so listings of a run directory skip them.
TMP_PREFIX = ".tmp-"


def fsync_path(path: Path) -> None:
    """fsync a file or a directory (directories: so a rename inside them is durable). Best effort."""
    flags = os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() and hasattr(os, "O_DIRECTORY") else 0)
    try:
        fd = os.open(path, flags)
    except OSError:  # e.g. directories cannot be opened on Windows
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def created_mode(directory: bool = False) -> int:
    """The mode ``open()`` (0o666) or ``mkdir()`` (0o777) would give a new entry, less the process umask (read by
    setting and restoring it). ``mkstemp``/``mkdtemp`` create 0600/0700 entries, which the renamed results would
    keep, unreadable to the user's group."""
    mask = os.umask(0o022)
    os.umask(mask)
    return (0o777 if directory else 0o666) & ~mask


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path`` (same suffix) for a writer that takes a file name; when the block ends
    without an exception the file is fsync'ed and renamed to ``path``, otherwise it is removed.

    Example: ``with atomic_output(rd.tokenizer_path) as tmp: tokenizer.save(tmp)``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f"{TMP_PREFIX}{path.stem}-", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        os.chmod(tmp, created_mode())
        yield tmp
        fsync_path(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_path(path.parent)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically; the file gets the permissions a plain ``open(path, "wb")`` would give
    it (see :func:`created_mode`)."""
    with atomic_output(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"))
