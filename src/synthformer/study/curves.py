"""Convergence curves of a study: the validation metric against training steps and against wall time.

The paper's Figure A.7 plots each model's validation curve against time. Here every variant is one line, the mean
over its seeds at the steps all seeds evaluated, with a band from the seeds' minimum to their maximum. Times come
from each run's study clock (:mod:`synthformer.study.runs`): wall-clock seconds of training, the time spent
evaluating and saving left out (it depends on how often a run is evaluated, not on the model), summed over
sittings; a variant's time axis is its seeds' mean time at each step.

matplotlib is imported when a figure is drawn (:mod:`synthformer.plotting`: a Figure on its own Agg canvas, no
display needed and the process's backend left alone), never when ``synthformer`` is imported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .manifest import Variant
from .runs import RunRecord, eval_curve
from .table import METRIC_NAMES, PERCENT_METRICS

__all__ = ["FIGURE_DPI", "FIGURE_SIZE", "Curve", "collect_curves", "plot_curves"]

#: Figure size in inches and resolution: every figure is 800 x 500 pixels.
FIGURE_SIZE = (8.0, 5.0)
FIGURE_DPI = 100


@dataclass
class Curve:
    """One variant's validation curve over its seeds."""

    label: str
    steps: list[int]
    wall: list[float]
    """Mean over seeds of the training seconds at each step (nan where a seed has no time)."""
    mean: list[float]
    low: list[float]
    high: list[float]


def collect_curves(records: Sequence[RunRecord], variants: Sequence[Variant], metric: str) -> list[Curve]:
    """Read each run's evaluations from its ``metrics.jsonl`` and combine the seeds of each variant."""
    import numpy as np

    curves = []
    for variant in variants:
        per_seed = [eval_curve(Path(r.run_dir), metric) for r in records if r.variant == variant.name]
        per_seed = [{step: (wall, value) for step, wall, value in c} for c in per_seed if c]
        if not per_seed:
            continue
        steps = sorted(set.intersection(*(set(c) for c in per_seed)))
        if not steps:
            continue
        values = np.array([[c[s][1] for c in per_seed] for s in steps], dtype=float)  # (steps, seeds)
        walls = np.array([[c[s][0] for c in per_seed] for s in steps], dtype=float)
        curves.append(Curve(variant.label, steps, walls.mean(axis=1).tolist(), values.mean(axis=1).tolist(),
                            values.min(axis=1).tolist(), values.max(axis=1).tolist()))
    return curves


def plot_curves(curves: Sequence[Curve], metric: str, path: Path, x_axis: str = "steps") -> Path:
    """Draw the curves against ``x_axis`` (``steps`` or ``wall``) into the PNG ``path`` (800 x 500 pixels)."""
    import matplotlib

    from ..plotting import new_figure, save_png  # matplotlib only when a figure is drawn

    name = METRIC_NAMES.get(metric, metric)
    scale = 100.0 if metric in PERCENT_METRICS else 1.0
    fig = new_figure(FIGURE_SIZE, FIGURE_DPI)
    ax = fig.subplots()
    colors = matplotlib.colormaps["tab10" if len(curves) <= 10 else "tab20"]
    for i, curve in enumerate(curves):
        x = curve.steps if x_axis == "steps" else curve.wall
        keep = [j for j, v in enumerate(x) if math.isfinite(v)]
        if not keep:
            continue
        xs = [x[j] for j in keep]
        color = colors(i % colors.N)
        ax.plot(xs, [scale * curve.mean[j] for j in keep], marker="o", markersize=3, color=color, label=curve.label)
        ax.fill_between(xs, [scale * curve.low[j] for j in keep], [scale * curve.high[j] for j in keep],
                        color=color, alpha=0.2, linewidth=0)
    ax.set_xlabel("training steps" if x_axis == "steps" else "training time (s, wall clock, evaluations excluded)")
    ax.set_ylabel(f"validation {name}" + (" (%)" if metric in PERCENT_METRICS else ""))
    ax.set_title(f"Validation {name} against {'training steps' if x_axis == 'steps' else 'wall time'} "
                 "(mean over seeds, band: min-max)")
    ax.grid(True, alpha=0.3)
    if curves:
        ax.legend(fontsize="small", loc="best")
    else:
        ax.text(0.5, 0.5, "no evaluations recorded", ha="center", va="center", transform=ax.transAxes)
    # atomic: processes sharing a study may write the same figure at the same time
    return save_png(fig, path, FIGURE_DPI)
