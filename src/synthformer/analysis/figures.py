"""The analysis figures (PNG), labelled with the paper's names: histograms of attention weights (Figures 2-3),
heatmaps of each layer and head on an example (Figures 4-6), the mixture weights alpha, and the mean weight by
relative distance.

Every figure is drawn on its own :class:`~matplotlib.figure.Figure` with an Agg canvas and written atomically
(:mod:`synthformer.plotting`, the project's one plotting convention): no display is needed, no pyplot state is
shared, and the process's matplotlib backend is left alone (importing this module does not switch it). Sizes are
fixed by the layout (:func:`figure_size`), never cropped, so a figure's pixel size is predictable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from ..attention import paper_names
from ..plotting import new_figure, save_png

__all__ = [
    "DPI",
    "PAPER_NAMES",
    "alpha_figure",
    "alpha_figure_size",
    "distance_figure",
    "figure_size",
    "grid",
    "heatmap_figure",
    "histogram_figure",
    "kind_label",
    "panel_label",
]

DPI = 100
#: Width and height in inches of one panel.
PANEL = (3.6, 2.8)
#: Room in inches for the figure's title.
TITLE_SPACE = 0.6

#: The paper's names of the kinds (Table 1), declared by each kind's class (``paper_name``); the appendix kinds
#: keep their registered names.
PAPER_NAMES = paper_names()


def kind_label(kind: str) -> str:
    """A kind's label in the paper's words: ``"R+V"`` -> ``"Random + Vanilla (R+V)"``."""
    return " + ".join(PAPER_NAMES.get(p, p) for p in kind.split("+")) + f" ({kind})"


def panel_label(kind: str) -> str:
    """A kind's label in a panel's title: :func:`kind_label` for one kind, ``"mixture R+D+V"`` for a mixture (whose
    long name would not fit; its parts have their own panels)."""
    return f"mixture {kind}" if "+" in kind else kind_label(kind)


def grid(panels: int, max_cols: int = 3) -> tuple[int, int]:
    """(rows, cols) of a grid holding ``panels`` panels, at most ``max_cols`` wide."""
    cols = max(1, min(panels, max_cols))
    return math.ceil(max(panels, 1) / cols), cols


def figure_size(rows: int, cols: int, panel: tuple[float, float] = PANEL) -> tuple[int, int]:
    """The pixel size (width, height) of a figure of ``rows`` x ``cols`` panels."""
    width, height = _inches(rows, cols, panel)
    return round(width * DPI), round(height * DPI)


def _inches(rows: int, cols: int, panel: tuple[float, float]) -> tuple[float, float]:
    return cols * panel[0], rows * panel[1] + TITLE_SPACE


def _figure(rows: int, cols: int, title: str, panel: tuple[float, float] = PANEL) -> tuple[Figure, np.ndarray]:
    fig = new_figure(_inches(rows, cols, panel), DPI, layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False))  # (rows, cols) of Axes
    fig.suptitle(title)
    return fig, axes


def _save(fig: Figure, path: Path) -> Path:
    return save_png(fig, path, DPI)


def _label(ax, title: str, xlabel: str, ylabel: str, legend_size: str) -> None:
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=legend_size)


def _save_grid(fig: Figure, axes: np.ndarray, used: int, path: Path) -> Path:
    """Hide the grid's unused panels (the last row may be partly empty), then save."""
    for ax in axes.flat[used:]:
        ax.set_visible(False)
    return _save(fig, path)


def histogram_figure(path: Path, title: str, panels: Sequence[tuple[str, Sequence[float], Sequence[float]]],
                     per_row: int | None = None) -> Path:
    """Histograms of attention weights, one panel per layer (and part): at initialisation (grey) and trained.

    Args:
        path: the PNG to write.
        title: the figure's title.
        panels: ``(panel title, counts at init, counts trained)``; counts over equal bins of [0, 1].
        per_row: panels per row (one layer's parts side by side); default :func:`grid`'s.
    """
    rows, cols = grid(len(panels)) if per_row is None else grid(len(panels), max_cols=per_row)
    fig, axes = _figure(rows, cols, title)
    for ax, (name, init, trained) in zip(axes.flat, panels, strict=False):
        for counts, label, style in ((init, "initialisation", {"color": "0.55", "linestyle": "--"}),
                                     (trained, "trained", {"color": "C0"})):
            counts = np.asarray(counts, dtype=float)
            edges = np.linspace(0.0, 1.0, len(counts) + 1)
            share = counts / max(counts.sum(), 1.0)  # share of the weights in each bin
            ax.stairs(share, edges, label=label, **style)
        ax.set_yscale("log")
        _label(ax, name, "attention weight", "share of weights", "small")
    return _save_grid(fig, axes, len(panels), path)


def heatmap_figure(path: Path, title: str, rows: Sequence[tuple[str, np.ndarray]], queries: Sequence[str],
                   keys: Sequence[str]) -> Path:
    """Heatmaps of one layer's attention on an example: one row per part (mixtures: each part, then the
    mixture), one column per head.

    Args:
        path: the PNG to write.
        title: the figure's title.
        rows: ``(row label, weights (H, L, L))``: query along the vertical axis, key along the horizontal one. Each
            panel's colour scale tops out at its 99th percentile of positive weights (larger ones saturate).
        queries, keys: the tokens at the query and key positions (shown when there are at most 40).
    """
    heads = rows[0][1].shape[0]
    fig, axes = _figure(len(rows), heads, title)
    for r, (label, weights) in enumerate(rows):
        for h in range(heads):
            ax = axes[r, h]
            image = ax.imshow(weights[h], cmap="viridis", vmin=0.0, vmax=_colour_top(weights[h]),
                              interpolation="nearest", aspect="auto")
            ax.set_title(f"{label}, head {h + 1}", fontsize="small")
            _token_ticks(ax, queries, keys)
            fig.colorbar(image, ax=ax, shrink=0.8, extend="max")
    return _save(fig, path)


def _colour_top(weights: np.ndarray) -> float:
    """The top of a heatmap's colour scale: the 99th percentile of its positive weights. The few largest weights
    (a causal layer's first query attends its only key with weight 1) would otherwise darken everything else."""
    positive = weights[weights > 0]
    return float(np.quantile(positive, 0.99)) if positive.size else 1.0


def _token_ticks(ax, queries: Sequence[str], keys: Sequence[str]) -> None:
    if len(keys) > 40 or len(queries) > 40:
        ax.set_xlabel("key position")
        ax.set_ylabel("query position")
        return
    ax.set_xticks(range(len(keys)), [_show(t) for t in keys], fontsize=7, rotation=90)
    ax.set_yticks(range(len(queries)), [_show(t) for t in queries], fontsize=7)


def _show(token: str) -> str:
    """A token as a readable tick label (whitespace made visible)."""
    return token.replace("\n", "\\n").replace(" ", "\u2423") or "\u2205"


def alpha_figure(path: Path, title: str, bars: Sequence[tuple[str, Sequence[float]]], parts: Sequence[str]) -> Path:
    """Stacked bars of the learned mixture weights alpha: one bar per (layer, head), one segment per part.

    Args:
        path: the PNG to write.
        title: the figure's title.
        bars: ``(bar label, alpha over the parts (N,))``; each sums to 1.
        parts: the parts' kinds, in alpha's order.
    """
    width = max(1.0, len(bars) / 6.0)  # panels wide enough for about six bars each
    fig, axes = _figure(1, 1, title, panel=(PANEL[0] * width, PANEL[1]))
    ax = axes[0, 0]
    values = np.asarray([b[1] for b in bars], dtype=float).reshape(len(bars), len(parts))  # (bars, N)
    bottom = np.zeros(len(bars))
    for n, part in enumerate(parts):
        ax.bar(range(len(bars)), values[:, n], bottom=bottom, label=kind_label(part), color=f"C{n}")
        bottom += values[:, n]
    ax.axhline(1.0 / len(parts), color="0.3", linewidth=0.8, linestyle=":")  # the initial value 1/N
    ax.set_xticks(range(len(bars)), [b[0] for b in bars], fontsize="small", rotation=45, ha="right")
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel("alpha")
    ax.legend(fontsize="small", loc="upper right")
    return _save(fig, path)


def alpha_figure_size(bars: int) -> tuple[int, int]:
    """The pixel size of :func:`alpha_figure` with ``bars`` bars."""
    return figure_size(1, 1, panel=(PANEL[0] * max(1.0, bars / 6.0), PANEL[1]))


def distance_figure(path: Path, title: str,
                    panels: Sequence[tuple[str, Sequence[tuple[str, Sequence[int], Sequence[float], bool]]]],
                    window: int) -> Path:
    """Mean attention weight by relative distance (query - key), one panel per layer.

    Args:
        path: the PNG to write.
        title: the figure's title.
        panels: ``(panel title, lines)``; a line is ``(label, distances, mean weights, trained)``: one colour per
            label, trained lines solid, lines at initialisation dashed. The label ``"uniform"`` is the chance
            level, drawn dotted in black.
        window: the local window, shaded (|q - k| <= window).
    """
    rows, cols = grid(len(panels))
    fig, axes = _figure(rows, cols, f"{title}\n(solid: trained, dashed: initialisation)")
    for ax, (name, lines) in zip(axes.flat, panels, strict=False):
        colours: dict[str, str] = {}
        seen: list[int] = []
        for label, distances, means, trained in lines:
            seen += list(distances)
            if label == "uniform":
                ax.plot(distances, means, color="black", linestyle=":", linewidth=1.0, label="uniform (chance)")
                continue
            colour = colours.setdefault(label, f"C{len(colours)}")
            # initialisation drawn above the trained line: a short run barely moves R, and the lines would hide
            ax.plot(distances, means, color=colour, linestyle="-" if trained else "--",
                    label=label if trained else None, linewidth=1.2, zorder=2 if trained else 3,
                    alpha=0.8 if trained else 1.0)
        if seen:
            ax.axvspan(max(-window, min(seen)), min(window, max(seen)), color="0.9", zorder=0)
        _label(ax, name, "distance (query - key)", "mean attention weight", "x-small")
    return _save_grid(fig, axes, len(panels), path)
