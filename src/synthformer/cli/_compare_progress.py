"""Where ``synthformer compare`` is: which kind trains (``[2/4] R``) and the ETA of the whole comparison, and the
thread count its numbers were computed with.

The ETA of the whole comparison is estimated per kind: the kinds still to come are assumed to take as long as the
mean wall time of the kinds finished so far (while the first kind trains: as long as it is projected to take).
A parameter count would predict worse: at the default size R has more parameters than V and D but trains
faster than either (docs/results/compare.md).

Off a terminal the trainer's heartbeat lines (``synthformer.train.recording``, a line a minute) are the only sign of
life during a kind: :class:`HeartbeatFilter` prefixes them with the kind and adds the comparison's ETA.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence

__all__ = ["ComparisonProgress", "HeartbeatFilter", "duration", "parse_duration", "threads_note"]

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def duration(seconds: float) -> str:
    """``1h02m``, ``4m05s`` or ``12s`` (the trainer's heartbeat spelling)."""
    seconds = int(round(max(seconds, 0.0)))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def parse_duration(text: object) -> float | None:
    """Seconds of a :func:`duration` string, or None when ``text`` is not one."""
    match = _DURATION.match(text) if isinstance(text, str) and text else None
    if match is None:
        return None
    hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    return 3600.0 * hours + 60.0 * minutes + seconds


class ComparisonProgress:
    """The kinds of a comparison, which one trains, and how long the finished ones took."""

    def __init__(self, kinds: Sequence[str]) -> None:
        self.kinds = list(kinds)
        self.current = 0
        self.finished: list[float] = []  # wall seconds of each finished kind

    @property
    def label(self) -> str:
        """``[2/4] R``: the kind training now."""
        return f"[{self.current + 1}/{len(self.kinds)}] {self.kinds[self.current]}"

    def finish(self, index: int, wall_seconds: float) -> None:
        """Kind ``index`` is done after ``wall_seconds``; the next one trains now."""
        self.finished.append(wall_seconds)
        self.current = min(index + 1, len(self.kinds) - 1)

    def eta(self, current_left: float | None = None, current_elapsed: float = 0.0) -> tuple[float, str] | None:
        """Seconds left in the whole comparison and how they were estimated; ``current_left`` and
        ``current_elapsed``: of the kind training now (None: between kinds). None while nothing is measured."""
        after = len(self.kinds) - len(self.finished) - (0 if current_left is None else 1)
        if self.finished:
            per_kind = sum(self.finished) / len(self.finished)
            how = (f"the {len(self.finished)} finished kinds' mean" if len(self.finished) > 1
                   else "the finished kind's")
        elif current_left is not None:
            per_kind = current_elapsed + current_left
            how = "this kind's projected"
        else:
            return None
        seconds = (current_left or 0.0) + max(after, 0) * per_kind
        kinds = "kind" if after == 1 else "kinds"
        return seconds, f"{max(after, 0)} more {kinds} x {per_kind:.0f} s, {how} wall time"


class HeartbeatFilter(logging.Filter):
    """Prefixes the trainer's heartbeat lines with the kind and appends the whole comparison's ETA."""

    def __init__(self, progress: ComparisonProgress) -> None:
        super().__init__()
        self.progress = progress

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = f"{self.progress.label}: {record.msg}"
        args = record.args if isinstance(record.args, tuple) else ()
        # "step %d/%d (%.0f%%): loss %s, %s tokens/s, elapsed %s, ETA %s": the kind's elapsed time and ETA
        if "ETA %s" in str(record.msg) and len(args) >= 2:
            elapsed, left = parse_duration(args[-2]), parse_duration(args[-1])
            eta = self.progress.eta(left, elapsed) if elapsed is not None and left is not None else None
            if eta is not None:
                record.msg = str(record.msg).replace("ETA %s", "ETA %s (this kind); comparison ETA %s (%s)")
                record.args = (*args, duration(eta[0]), eta[1])
        return True


def threads_note(threads: int, given: int | None) -> str:
    """``2 (the default: one per core)`` or ``1 (--threads 1)``, and whether the machine is busy now."""
    source = f"--threads {given}" if given is not None else "the default: one per core"
    if hasattr(os, "getloadavg"):
        load = os.getloadavg()[0]
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            cores = os.cpu_count() or 1
        if load + threads > cores + 0.5:
            source += f"; the machine is busy: load {load:.1f} on {cores} cores, the times are slower"
    return f"{threads} ({source})"
