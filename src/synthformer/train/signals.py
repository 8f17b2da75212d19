"""Stopping a run cleanly on a signal: Ctrl-C (SIGINT), and the preemption notices of batch systems (SIGTERM, sent
by SLURM, Kubernetes and spot instances before they kill a job; SIGUSR1, SLURM's advance warning with
``--signal=USR1@SECONDS``).

The handler only records the request; the loop finishes the step it is in, saves a checkpoint and stops
(:class:`~synthformer.train.Trainer`). Under several processes the request is agreed on at the next step (one
all-reduce of a flag per step), so every process stops at the same step and the save is collective even when only
one process received the signal. After Ctrl-C the trainer raises ``KeyboardInterrupt`` (the command exits with 130);
after SIGTERM or SIGUSR1 it raises :class:`Preempted` and ``synthformer train`` exits with
:data:`EXIT_PREEMPTED` (75), which a job script requeues on (docs/distributed.md, "SLURM").
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

__all__ = ["EXIT_PREEMPTED", "PREEMPTION_SIGNALS", "Preempted", "StopGuard"]

logger = logging.getLogger(__name__)

#: The exit status of ``synthformer train`` stopped by SIGTERM or SIGUSR1 after saving its checkpoint: 75 is
#: ``EX_TEMPFAIL`` of sysexits.h ("a temporary failure; the user is invited to retry"), distinct from a crash (1),
#: a user error (2), Ctrl-C (130) and a kill by the signal itself (143 for SIGTERM).
EXIT_PREEMPTED = 75

#: The signals that mean "this job is about to be stopped": save and exit with :data:`EXIT_PREEMPTED`.
PREEMPTION_SIGNALS: tuple[str, ...] = ("SIGTERM", "SIGUSR1")


class Preempted(KeyboardInterrupt):
    """Training stopped on SIGTERM or SIGUSR1 after saving the checkpoint of ``step`` (a ``KeyboardInterrupt``, so
    that callers which stop on Ctrl-C stop on it too)."""

    def __init__(self, signal_name: str, step: int) -> None:
        super().__init__(f"stopped by {signal_name} at step {step}; its checkpoint is saved")
        self.signal_name = signal_name
        self.step = step


class StopGuard:
    """Turn SIGINT, SIGTERM and SIGUSR1 into a request to stop at the next step boundary (then save and raise).

    Stopping between steps means the checkpoint never holds half-applied optimizer updates. A second Ctrl-C raises
    ``KeyboardInterrupt`` at once; a second SIGTERM is only logged (a batch system's SIGKILL follows anyway, and the
    save under way is the one that matters). Signal handlers can only be installed from the main thread; elsewhere
    this is a no-op and an interrupt arrives as a plain ``KeyboardInterrupt``.

    Attributes:
        requested: a stop was asked for.
        signal_name: the first signal that asked (``"SIGINT"``, ``"SIGTERM"``, ``"SIGUSR1"``), or None.
    """

    def __init__(self) -> None:
        self.requested = False
        self.signal_name: str | None = None
        self._previous: dict[int, Any] = {}

    @property
    def preempted(self) -> bool:
        """The stop was asked for by a preemption signal (SIGTERM, SIGUSR1), not Ctrl-C."""
        return self.signal_name in PREEMPTION_SIGNALS

    def request(self, signal_name: str) -> None:
        """Ask for a stop as the signal ``signal_name`` does (also used for a peer's request, see the trainer)."""
        if not self.requested:
            self.requested, self.signal_name = True, signal_name

    def _handler(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.requested:
            if name == "SIGINT":
                raise KeyboardInterrupt
            logger.warning("%s again: still finishing the step and its checkpoint", name)
            return
        self.request(name)
        again = " (Ctrl-C again to stop at once)" if name == "SIGINT" else ""
        logger.warning("%s: finishing this step and saving a checkpoint%s", name, again)

    def __enter__(self) -> StopGuard:
        if threading.current_thread() is threading.main_thread():
            for name in ("SIGINT", *PREEMPTION_SIGNALS):
                number = getattr(signal, name, None)
                if number is not None:  # SIGUSR1 does not exist on Windows
                    self._previous[number] = signal.getsignal(number)
                    signal.signal(number, self._handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        for number, previous in self._previous.items():
            if previous is None:  # installed outside Python: the closest is the default
                previous = signal.default_int_handler if number == signal.SIGINT else signal.SIG_DFL
            signal.signal(number, previous)
        self._previous = {}
