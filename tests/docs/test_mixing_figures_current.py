"""The token-mixing page's figures are those of the committed record: each drawn figure's JSON sidecar (the points
it plots) equals what ``benchmarks/studies/mixing_figures.py`` computes from ``benchmarks/results/mixing.jsonl``
now, and an axis with fewer than two recorded settings has no figure. A record appended without re-drawing fails
here (run the script)."""

from __future__ import annotations

import json

import pytest

from tests.bench.scripts import load_script


@pytest.mark.parametrize("axis", ["pairs", "width"])
def test_each_figure_draws_the_committed_record(axis: str, monkeypatch: pytest.MonkeyPatch) -> None:
    figures = load_script("studies/mixing_figures", monkeypatch)
    assert axis in figures.AXES
    png = figures.FIGURES / f"mixing-{axis}.png"
    found = figures.series(axis)
    if not figures.drawable(found):
        assert not png.exists(), f"{png.name}: drawn, but the record has fewer than two settings on its axis"
        return
    assert png.is_file(), f"{png.name} is missing: run python benchmarks/studies/mixing_figures.py"
    sidecar = png.with_suffix(".json")
    assert sidecar.is_file(), f"{sidecar.name} is missing: run python benchmarks/studies/mixing_figures.py"
    assert json.loads(sidecar.read_text(encoding="utf-8")) == json.loads(json.dumps(figures.plotted(axis, found))), (
        f"{png.name} is older than the record: run python benchmarks/studies/mixing_figures.py")
