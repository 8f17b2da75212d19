"""benchmarks/studies/mixing_figures.py: the points come from the record (mean and 95% interval over the seeds,
clipped to what an accuracy can be), an axis with fewer than two recorded settings is not drawn, and a drawn one is
a PNG."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .scripts import load_script


@pytest.fixture
def figures(monkeypatch, tmp_path: Path):
    module = load_script("studies/mixing_figures", monkeypatch)
    monkeypatch.setattr(module.study, "RECORD", tmp_path / "mixing.jsonl")
    return module


def _entry(figures, setting: str, kind: str, test: list[float], steps: int | None = None) -> None:
    row = {"table": figures.study.TABLE, "row": f"{setting}-{kind}", "setting": setting, "test": test, "valid": test,
           "seeds": list(range(len(test))), "steps": steps or figures.study.setting(setting).steps}
    with open(figures.study.RECORD, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def test_points_are_the_seeds_mean_and_interval_clipped_to_zero_and_one(figures) -> None:
    _entry(figures, "mqar-64x4", "R+V", [1.0, 1.0, 0.02])  # an interval of 3 seeds reaching past 0 and 1
    _entry(figures, "mqar-64x8", "R+V", [0.5])
    _entry(figures, "mqar-64x8", "V", [1.0, 1.0, 1.0])
    points = figures.series("pairs")
    (x4, mean4, low4, high4), (x8, mean8, low8, high8) = points["R+V"]
    assert (x4, x8) == (4, 8) and mean4 == pytest.approx(0.6733333) and (low4, high4) == (0.0, 1.0)
    assert mean8 == low8 == high8 == 0.5  # one seed: no bar
    assert points["V"] == [(8, 1.0, 1.0, 1.0)] and "R" not in points
    assert figures.series("width") == {"V": [(128, 1.0, 1.0, 1.0)], "R+V": [(128, 0.5, 0.5, 0.5)]}


def test_an_axis_with_fewer_than_two_settings_is_not_drawn(figures, tmp_path: Path) -> None:
    _entry(figures, "mqar-64x8", "V", [1.0, 1.0])
    assert not figures.draw("width", tmp_path / "width.png") and not (tmp_path / "width.png").exists()
    _entry(figures, "mqar-64x8-d64", "R", [0.1, 0.12])
    assert figures.draw("width", tmp_path / "width.png")
    assert (tmp_path / "width.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_drawn_figure_has_the_points_it_draws_beside_it_and_a_newer_record_differs(figures, tmp_path: Path) -> None:
    _entry(figures, "mqar-64x8", "V", [1.0, 1.0])
    _entry(figures, "mqar-64x8-d64", "V", [0.5, 0.7])
    assert figures.draw("width", tmp_path / "width.png")
    sidecar = json.loads((tmp_path / "width.json").read_text(encoding="utf-8"))
    assert sidecar["points"] == {"V": [[64, 0.6, pytest.approx(0.0, abs=1e-9), 1.0], [128, 1.0, 1.0, 1.0]]}
    assert sidecar == json.loads(json.dumps(figures.plotted("width")))
    _entry(figures, "mqar-64x8-d64", "V", [0.5, 0.5])  # a newer entry of a drawn setting: the sidecar is stale
    assert sidecar != json.loads(json.dumps(figures.plotted("width")))


def test_an_entry_of_an_earlier_budget_is_not_drawn(figures) -> None:
    _entry(figures, "mqar-64x8", "V", [1.0, 1.0])
    earlier = figures.study.setting("mqar-64x4").steps // 2
    _entry(figures, "mqar-64x4", "V", [0.3, 0.3], steps=earlier)  # the newest entry of its row, at another budget
    assert figures.series("pairs") == {"V": [(8, 1.0, 1.0, 1.0)]}
    _entry(figures, "mqar-64x4", "V", [0.9, 0.9])  # the setting's own budget again
    assert figures.series("pairs")["V"] == [(4, 0.9, 0.9, 0.9), (8, 1.0, 1.0, 1.0)]


def test_the_command_line_answers_help_without_drawing(figures, monkeypatch, capsys) -> None:
    drawn: list[str] = []
    monkeypatch.setattr(figures, "draw", lambda axis, out: drawn.append(axis))
    with pytest.raises(SystemExit) as stop:
        figures.main(["--help"])
    assert stop.value.code == 0 and "mixing-pairs.png" in capsys.readouterr().out and drawn == []
    assert figures.main([]) == 0 and drawn == list(figures.AXES)
