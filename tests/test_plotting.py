"""The one plotting convention (``synthformer.plotting``): every figure writer of the project draws on its own
Agg canvas and writes a valid PNG of the expected size, atomically, without touching matplotlib's global backend.

The analysis figures and the study curves are checked here, the Table 3 figure in tests/bench/test_table3_script.py
(with :func:`untouched_backend` from this file).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from matplotlib.image import imread

from synthformer.analysis import figures
from synthformer.plotting import new_figure, save_png
from synthformer.study.curves import FIGURE_DPI, FIGURE_SIZE, Curve, plot_curves

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@contextmanager
def untouched_backend(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run the block with the process's backend set to "svg" (not Agg, so that a switch to Agg shows) and
    ``matplotlib.use`` failing the test; assert the backend is still "svg" afterwards."""

    def no_switch(*args, **kwargs):
        pytest.fail(f"matplotlib.use{args} called: figures must not switch the process's backend")

    monkeypatch.setitem(matplotlib.rcParams, "backend", "svg")
    monkeypatch.setattr(matplotlib, "use", no_switch)
    yield
    assert matplotlib.get_backend() == "svg"


def _pixels(path: Path) -> tuple[int, int]:
    """(width, height) of the PNG at ``path``, checked to be a PNG that decodes."""
    assert path.read_bytes()[:8] == PNG_MAGIC
    image = imread(path)  # (height, width, channels)
    assert image.ndim == 3 and np.isfinite(image).all()
    return image.shape[1], image.shape[0]


def test_save_png_writes_atomically_and_leaves_no_temp_file(tmp_path, monkeypatch):
    out = tmp_path / "sub" / "f.png"
    with untouched_backend(monkeypatch):
        fig = new_figure((2.0, 1.5), dpi=100)
        fig.subplots().plot([0, 1], [1, 0])
        assert save_png(fig, out, dpi=100) == out
    assert _pixels(out) == (200, 150)  # inches x dpi
    assert [p.name for p in out.parent.iterdir()] == ["f.png"]


def test_a_failed_save_keeps_the_previous_file(tmp_path, monkeypatch):
    out = tmp_path / "f.png"
    out.write_bytes(b"previous")
    fig = new_figure((1.0, 1.0))

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(fig, "savefig", broken)
    with pytest.raises(OSError, match="disk full"):
        save_png(fig, out)
    assert out.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == ["f.png"]


def test_the_analysis_figures_follow_the_convention(tmp_path, monkeypatch):
    with untouched_backend(monkeypatch):
        hist = figures.histogram_figure(
            tmp_path / "h.png", "weights", [("D", [0.1, 0.2, 0.3], [0.2, 0.2, 0.6]), ("R", [0.5, 0.5], [0.9, 0.1])]
        )
        alpha = figures.alpha_figure(tmp_path / "a.png", "alpha", [("layer 0", [0.3, 0.7])], ["R", "V"])
    assert _pixels(hist) == figures.figure_size(*figures.grid(2))  # the layout's size, never cropped
    assert _pixels(alpha) == figures.alpha_figure_size(1)


def test_the_study_curves_follow_the_convention(tmp_path, monkeypatch):
    curves = [Curve("D", [1.0, 2.0], [10.0, 20.0], [0.5, 0.4], [0.45, 0.35], [0.55, 0.45])]
    with untouched_backend(monkeypatch):
        out = plot_curves(curves, "loss", tmp_path / "curves.png")
        empty = plot_curves([], "loss", tmp_path / "empty.png", x_axis="wall")
    size = (round(FIGURE_SIZE[0] * FIGURE_DPI), round(FIGURE_SIZE[1] * FIGURE_DPI))
    assert _pixels(out) == size == (800, 500)  # the module's documented size
    assert _pixels(empty) == size
