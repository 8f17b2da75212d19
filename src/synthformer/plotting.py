"""The project's one way to draw a figure and write it as a PNG: no pyplot, no global matplotlib state.

A figure is a :class:`~matplotlib.figure.Figure` given its own Agg canvas (:func:`new_figure`): no display is
needed (servers, CI, a terminal over SSH), and the process's matplotlib backend is left as the caller set it.
``matplotlib.use("Agg")`` would switch the backend of the whole process, under a notebook or a GUI that imported
``synthformer``; pyplot's figure manager would also keep every figure alive until ``plt.close``. A Figure that
nothing but the caller references is freed like any object.

:func:`save_png` writes beside the target and renames into place (atomic on POSIX): processes sharing a study
may write the same figure at the same time, and a reader never sees half a PNG.

This module is a leaf (it imports nothing of ``synthformer``), so ``analysis``, ``study`` and the benchmark
scripts all build on it; matplotlib is imported with it, so import it where a figure is drawn when the caller's
own import must stay light.
"""

from __future__ import annotations

import os
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["new_figure", "save_png"]


def new_figure(size: tuple[float, float], dpi: float = 100, layout: str | None = None) -> Figure:
    """A figure of ``size`` (width, height) inches at ``dpi``, on its own Agg canvas.

    ``layout``: matplotlib's layout engine ("constrained", "tight") or None (positions as set by the caller).
    """
    fig = Figure(figsize=size, dpi=dpi, layout=layout)
    FigureCanvasAgg(fig)  # attaches itself to fig: savefig renders with Agg whatever the process's backend
    return fig


def save_png(fig: Figure, path: Path, dpi: float = 100) -> Path:
    """Write ``fig`` to ``path`` as a PNG at ``dpi``, atomically (a temp file beside it, then ``os.replace``).

    Creates the parent directories; returns ``path``. On failure the temp file is removed and ``path`` is left
    as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fig.savefig(partial, dpi=dpi, format="png")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path
