"""The run directory's lock: an exclusive ``fcntl.lockf`` lock on ``RUN/.lock``, held once per process.

A second process fails at once, and the kernel drops the lock of a process that dies (a killed run leaves a
``.lock`` file that blocks nothing). A second acquire in the same process is refused too: a directory has one
owner (:class:`~synthformer.train.run.Run`), which hands itself to whoever else works in it. Where ``fcntl`` is
missing (Windows) or the file system refuses locks, nothing is locked and a warning is logged.
:meth:`synthformer.train.RunDir.lock` is the way in.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from .run_errors import RunError

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_FILE", "RunLock", "held_by_this_process", "lock_directory"]

logger = logging.getLogger(__name__)

#: The lock file's name inside the run directory.
LOCK_FILE = ".lock"


def lock_directory(path: Path) -> RunLock:
    """Take ``path`` (created if missing) for this process until the returned lock is released.

    Raises:
        RunError: another process holds the directory, or this one does already.
    """
    key = os.path.realpath(path)
    with _HELD_GUARD:
        held = _HELD.get(key)
        if held is not None and held.pid == os.getpid():
            # fcntl locks belong to the process: a second hold would succeed, and its release would unlock the first
            raise RunError(f"run directory {path} is already held by this process: hand its open Run to the code "
                           "that needs it instead of locking it again")
        _HELD[key] = _Held(*_acquire(path))  # an entry a forked parent left is its own, not this process's
    return RunLock(path, key)


def held_by_this_process(path: Path) -> bool:
    """True while this process holds the lock of ``path``."""
    with _HELD_GUARD:
        held = _HELD.get(os.path.realpath(path))
        return held is not None and held.pid == os.getpid()


class RunLock:
    """A hold on a run directory, from :meth:`RunDir.lock`; released by ``release()`` or by leaving ``with``."""

    def __init__(self, path: Path, key: str | None) -> None:
        self.path = path
        self._key = key

    @property
    def held(self) -> bool:
        """True until released (False from the start for a lock that holds nothing)."""
        return self._key is not None

    def release(self) -> None:
        """Unlock the directory (idempotent)."""
        key, self._key = self._key, None
        if key is None:
            return
        with _HELD_GUARD:
            held = _HELD.get(key)
            if held is None or held.pid != os.getpid():
                return  # a forked child (a data loader worker) never unlocks its parent's directory
            del _HELD[key]
            _unlock(Path(key), held)  # the resolved path: immune to a changed working directory

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


@dataclass
class _Held:
    fd: int | None  # None: nothing could be locked (no fcntl, or a file system without locks)
    created_dir: bool
    pid: int = field(default_factory=os.getpid)


_HELD: dict[str, _Held] = {}
_HELD_GUARD = threading.Lock()


def _acquire(run_dir: Path) -> tuple[int | None, bool]:
    """Lock ``run_dir/.lock``; return the descriptor (None if locking is unavailable) and whether the directory
    was created here."""
    created = not run_dir.exists()
    path = run_dir / LOCK_FILE
    if fcntl is None:
        run_dir.mkdir(parents=True, exist_ok=True)
        logger.warning("cannot lock %s on this platform (no fcntl): nothing stops a second process from using it",
                       run_dir)
        return None, created
    while True:
        run_dir.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:  # the directory was removed by a process releasing it: make it again
            continue
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            holder = _read_holder(fd)
            os.close(fd)
            if isinstance(err, (BlockingIOError, PermissionError)):  # EAGAIN / EACCES: held elsewhere
                raise RunError(
                    f"run directory {run_dir} is in use by another process{holder}; wait for it to finish (or stop "
                    "it), or choose another run directory"
                ) from None
            logger.warning("cannot lock %s (%s): nothing stops a second process from using it", path, err)
            return None, created
        # The holder we raced with may have deleted the file while releasing: only the file now there counts.
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
            return fd, created
        os.close(fd)


def _read_holder(fd: int) -> str:
    """`` (pid N on HOST)`` from the lock file of another process, or an empty string."""
    try:
        parts = os.read(fd, 256).decode("utf-8", "replace").split()
    except OSError:
        return ""
    return f" (pid {parts[0]} on {parts[1]})" if len(parts) == 2 and parts[0].isdigit() else ""


def _unlock(run_dir: Path, held: _Held) -> None:
    """Remove the lock file (while still holding it), unlock, and remove the directory if it was made empty."""
    if held.fd is not None:
        try:
            (run_dir / LOCK_FILE).unlink(missing_ok=True)
        except OSError as err:  # left behind, it blocks nothing: the lock goes with the descriptor
            logger.debug("could not remove %s: %s", run_dir / LOCK_FILE, err)
        os.close(held.fd)  # closing drops the lock
    if held.created_dir:
        try:
            run_dir.rmdir()  # only if nothing was written: a run that failed before writing leaves no trace
        except OSError:
            pass


