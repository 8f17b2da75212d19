"""The errors of a run directory (beside :mod:`.rundir` and :mod:`.runlock`, which both raise them)."""

from __future__ import annotations

__all__ = ["RunError", "RunExistsError"]


class RunError(ValueError):
    """A run directory that cannot be used as asked (missing, not a run, would be overwritten, in use, ...)."""


class RunExistsError(RunError, FileExistsError):
    """The run directory holds an earlier run and neither resuming nor overwriting was asked for."""
