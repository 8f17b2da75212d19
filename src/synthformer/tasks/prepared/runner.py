"""Running units of a prepare: in this process, or in a pool of worker processes whose progress comes back through a
queue; a unit's error (returned as data by :func:`~.work.run_unit`) is raised here as a one-line error."""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synthformer.common import ConfigError

from .plan import Context, Unit
from .work import run_unit

__all__ = ["PrepareError", "PrepareResult", "die_with_parent", "raise_error", "run_units"]


@dataclass
class PrepareResult:
    """What a prepare did: ``status`` is ``"prepared"``, ``"resumed"``, ``"complete"`` (nothing was left) or
    ``"repaired"`` (a finished folder's damaged shards rewritten); ``note``: one line on sources that moved or are
    gone since a finished prepare (empty when none did)."""

    folder: Path
    manifest: dict[str, Any]
    status: str
    units: int
    units_kept: int
    note: str = ""


class PrepareError(ValueError):
    """A prepare that cannot go on: the message says why and what to do (one line)."""


_QUEUE: Any = None
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
#: How often a worker looks whether its parent is still there (where the kernel cannot tell it).
_PARENT_POLL_S = 0.5


def _watch_parent(parent: int) -> None:
    """Exit this worker once ``parent`` is gone (the worker is then re-parented: its parent pid changes)."""
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL_S)
    os._exit(1)


def die_with_parent(parent: int) -> None:
    """Make this worker process die when ``parent`` does, even by SIGKILL.

    A worker that outlives a killed prepare goes on writing into ``DIR/.parts/`` while the next prepare, which took
    the folder's lock once the kernel dropped the dead one's, rewrites the same unit: the two corrupt each other.
    On Linux the kernel sends SIGKILL to this process when its parent dies (``prctl(PR_SET_PDEATHSIG)``); the
    parent pid is checked after it, as the parent may have died before the call. Elsewhere, and as a second line
    on Linux, a daemon thread polls the parent pid.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no libc symbol: the thread below still watches
            pass
    if os.getppid() != parent:  # the parent died before the kernel was told to watch it
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="watch-parent", daemon=True).start()


def _init_worker(queue: Any, parent: int) -> None:
    global _QUEUE
    die_with_parent(parent)
    _QUEUE = queue
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one process per unit already uses the cores
    # Ctrl-C reaches the whole process group: the main process stops the workers, which would otherwise each print
    # a KeyboardInterrupt traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _pool_unit(ctx: Context, unit: Unit) -> dict[str, Any]:
    return run_unit(ctx, unit, lambda b, d: _QUEUE.put((b, d)))


def raise_error(result: dict[str, Any], out: Path, remaining: int, ratio: float, kept: int) -> None:
    """Raise the error a unit returned (``remaining`` source bytes and the ``ratio`` of bytes written per byte read
    estimate the space a full disk still needs; ``kept``: the finished units)."""
    kind, message = result["error"], result["message"]
    if kind == "nospace":
        free = shutil.disk_usage(out).free
        need = int(remaining * ratio)
        raise PrepareError(f"no space left on the device ({message}): about {need / 1e6:,.0f} MB more needed, "
                           f"{free / 1e6:,.0f} MB free in {out}; free space and re-run the same command: "
                           f"the {kept} finished unit(s) are kept")
    if kind == "bug":
        raise RuntimeError(f"a prepare worker failed:\n{message}")
    if kind == "config":
        raise ConfigError(message)
    raise PrepareError(message)


def run_units(ctx: Context, units: list[Unit], workers: int, bar: Any, on_done: Callable[[dict[str, Any]], None],
              ) -> None:
    """Run ``units`` (``workers`` processes), passing each unit's result to ``on_done`` and progress to ``bar``."""

    def report(nbytes: int, docs: int) -> None:
        bar.update(nbytes)
        bar.docs += docs
        bar.set_postfix_str(f"{bar.docs:,} documents", refresh=False)

    if workers == 1 or len(units) <= 1:
        for unit in units:
            on_done(run_unit(ctx, unit, report))
        return
    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    mpctx = mp.get_context(method)
    queue = mpctx.Queue()
    # a ProcessPoolExecutor, not a Pool: a worker that dies (killed, out of memory) breaks it at once instead of
    # leaving its unit pending forever
    pool = ProcessPoolExecutor(min(workers, len(units)), mp_context=mpctx, initializer=_init_worker,
                               initargs=(queue, os.getpid()))
    try:
        pending = {pool.submit(_pool_unit, ctx, unit) for unit in units}
        while pending:
            done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            while not queue.empty():
                report(*queue.get())
            for job in done:
                on_done(job.result())
        while not queue.empty():
            report(*queue.get())
    except BaseException as err:
        # stop the units still running (an error, Ctrl-C): what they wrote is redone by the next run
        for process in list((pool._processes or {}).values()):  # noqa: SLF001 - the executor keeps no public list
            process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        if isinstance(err, BrokenProcessPool):
            raise PrepareError("a prepare worker process died (killed, or out of memory?); re-run the same command "
                               "to continue: finished units are kept") from None
        raise
    pool.shutdown(wait=True)
