"""benchmarks/studies/mixing_status.py: what the study has and lacks, read from planted records only: the grid's
runs and choices per family, each setting's seeds at the chosen rate (a run at another rate does not count), and
the CPU time left from the recorded wall times."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from .scripts import load_script


@pytest.fixture
def status(monkeypatch, tmp_path: Path):
    module = load_script("studies/mixing_status", monkeypatch)
    monkeypatch.setattr(module.study, "RUNS_RECORD", tmp_path / "mixing_runs.jsonl")
    monkeypatch.setattr(module.study, "LR_RECORD", tmp_path / "mixing_lr.jsonl")
    return module


def _write(path: Path, rows: list[dict]) -> None:
    with open(path, "a", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def _run(study, setting: str, kind: str, lr: float, seed: int, wall: float = 100.0) -> dict:
    s = study.setting(setting)
    return {"table": "mixing_runs", "row": study.run_key(setting, kind, lr, seed), "setting": setting,
            "family": s.family, "kind": kind, "lr": lr, "seed": seed, "steps": s.steps, "wall_seconds": wall}


def test_the_status_counts_grid_runs_choices_and_seeds_at_the_chosen_rate(status) -> None:
    study = status.study
    grid = study.LR_SETTING["mqar"]
    _write(study.RUNS_RECORD, [_run(study, grid, "V", lr, 0, wall=200.0) for lr in study.LRS]
           + [_run(study, "mqar-64x4", "V", 3e-4, seed) for seed in range(study.SEEDS)]
           + [_run(study, "mqar-64x4", "R", 3e-3, 0)])  # R at a rate not chosen: not a seed of the table
    _write(study.LR_RECORD, [{"table": "mixing_lr", "row": "mqar-V", "family": "mqar", "kind": "V", "lr": 3e-4,
                              "steps": study.setting(grid).steps},
                             {"table": "mixing_lr", "row": "mqar-R", "family": "mqar", "kind": "R", "lr": 1e-3,
                              "steps": study.setting(grid).steps}])
    lines = {p.name: p for p in status.progress()}
    n = len(study.KINDS)
    assert (lines["lr-mqar"].done, lines["lr-mqar"].planned) == (3, n * len(study.LRS))
    assert lines["lr-mqar"].note.startswith("no rate chosen for Fix, FR")  # V and R are chosen
    assert lines["mqar-64x4"].done == study.SEEDS and lines["mqar-64x4"].left == n * study.SEEDS - study.SEEDS
    assert lines["mqar-64x4"].seconds == pytest.approx(lines["mqar-64x4"].left * 100.0)
    assert lines[grid].done == 1  # the grid's seed-0 run at V's chosen rate is the setting's seed 0
    assert lines["mqar-64x2"].seconds == pytest.approx(lines["mqar-64x2"].left * 100.0)  # the family's median
    assert math.isnan(lines["recall"].seconds) and lines["lr-mad"].done == 0  # nothing timed in MAD yet


def test_a_setting_without_runs_is_estimated_per_step_at_its_own_budget(status) -> None:
    study = status.study
    recall, fuzzy = study.setting("recall"), study.setting("fuzzy_recall")
    assert fuzzy.steps != recall.steps  # fuzzy recall trains longer than the family's other tasks
    _write(study.RUNS_RECORD, [_run(study, "recall", "V", 1e-3, 0, wall=2.0 * recall.steps)])
    lines = {p.name: p for p in status.progress()}
    assert lines["fuzzy_recall"].seconds == pytest.approx(lines["fuzzy_recall"].left * 2.0 * fuzzy.steps)


def test_main_prints_every_line_and_the_total(status, capsys) -> None:
    assert status.main([]) == 0
    out = capsys.readouterr().out
    assert all(s.name in out for s in status.study.SETTINGS) and "runs left" in out


def test_help_prints_the_docstring_and_an_unknown_argument_is_refused(status, capsys) -> None:
    for argv, code in ((["--help"], 0), (["--bogus"], 2)):
        with pytest.raises(SystemExit) as stop:
            status.main(argv)
        assert stop.value.code == code
    captured = capsys.readouterr()
    assert "CPU time it needs" in captured.out and "unrecognized arguments: --bogus" in captured.err
