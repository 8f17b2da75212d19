"""Examples longer than the model allows: the count per split for the run summary, and the refusal to train
when most training examples would be cut.

A model trained on examples that lost most of their text can learn nothing (an exact match of 0.0 after 75%
of the examples were cut, in a run of this project), and a warning among the loading messages is easy to miss. So
with the default ``task.overflow: null`` a run whose training split would be more than half truncated does not start;
``task.overflow: truncate`` (set explicitly) trains on the cut examples anyway, ``skip`` drops them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from synthformer.common import ConfigError
from synthformer.data import LengthReport

from .task_config import TaskConfig

__all__ = ["MOST", "check_truncation", "describe_lengths", "length_reports"]

#: The fraction of cut training examples above which a run with the default overflow policy refuses to start.
MOST = 0.5


def length_reports(datasets: Mapping[str, Any]) -> dict[str, LengthReport]:
    """The :class:`LengthReport` of each dataset that keeps one (seq2seq and classification-like tasks)."""
    return {name: ds.length_report for name, ds in datasets.items()
            if isinstance(getattr(ds, "length_report", None), LengthReport)}


def _limits(task: TaskConfig) -> str:
    limits = f"max_len={task.max_len}"
    return limits + (f", max_target_len={task.max_target_len}" if task.max_target_len is not None else "")


def check_truncation(task: TaskConfig, report: LengthReport) -> None:
    """Refuse a training split of which more than half would be truncated, unless ``overflow`` was set.

    Raises:
        ConfigError: naming the count, the fraction, the limits and the two ways out.
    """
    if task.overflow is not None or report.total == 0 or report.truncated / report.total <= MOST:
        return
    raise ConfigError(
        f"task.max_len: {report.truncated:,} of {report.total:,} training examples "
        f"({report.truncated / report.total:.0%}) are longer than the model allows ({_limits(task)}) and would be "
        "cut; raise the limit, or set task.overflow: truncate to train on the cut examples anyway (skip: drop them)"
    )


def describe_lengths(task: TaskConfig, reports: Mapping[str, LengthReport]) -> list[str]:
    """One line per split, e.g. ``train: 1,000 examples, 750 (75.0%) truncated to max_len=16``."""
    lines = []
    for split, r in reports.items():
        line = f"{split}: {r.total:,} examples"
        if r.truncated:
            line += f", {r.truncated:,} ({r.truncated / max(r.total, 1):.1%}) truncated to {_limits(task)}"
        if r.skipped:
            line += f", {r.skipped:,} ({r.skipped / max(r.total, 1):.1%}) skipped for length"
        lines.append(line)
    return lines
