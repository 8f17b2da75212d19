"""benchmarks/studies/mixing_study.py's training budget: a setting's steps come from its config (an override wins), and
a run or a learning-rate choice of another budget stays in the record as history but is neither harvested again, chosen
from, nor current."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from .scripts import load_script


@pytest.fixture
def study(monkeypatch):
    return load_script("studies/mixing_study", monkeypatch)


def test_a_settings_budget_is_its_configs_steps_unless_overridden(study) -> None:
    mqar = study.setting("mqar-64x8")
    config = yaml.safe_load((study.ROOT / mqar.config).read_text(encoding="utf-8"))
    assert mqar.steps == config["train"]["steps"]
    assert study.Setting("x", "mqar", "mqar", mqar.config, ("train.steps=7",)).steps == 7


def test_runs_and_choices_of_another_budget_are_history(study, tmp_path: Path, monkeypatch) -> None:
    for name in ("LR_RECORD", "RUNS_RECORD", "RECORD"):
        monkeypatch.setattr(study, name, tmp_path / f"{name}.jsonl")
    budget = study.setting("mqar-64x8").steps
    old, new = (study.run_key("mqar-64x8", kind, 1e-3, 0) for kind in ("R", "V"))
    study.append(study.RUNS_RECORD, {"table": "mixing_runs", "row": old, "setting": "mqar-64x8", "steps": budget // 2})
    study.append(study.RUNS_RECORD, {"table": "mixing_runs", "row": new, "setting": "mqar-64x8", "steps": budget})
    study.append(study.RUNS_RECORD, {"table": "mixing_runs", "row": "gone-V-lr0.001-seed0", "setting": "gone",
                                     "steps": budget})  # a setting no longer in SETTINGS
    assert set(study.harvested()) == {new}
    study.append(study.LR_RECORD, {"table": "mixing_lr", "row": "mqar-R", "family": "mqar", "kind": "R", "lr": 3e-3})
    study.append(study.LR_RECORD, {"table": "mixing_lr", "row": "mqar-V", "family": "mqar", "kind": "V", "lr": 1e-3,
                                   "steps": budget})
    # R's choice carries no budget: made before it was kept
    assert study.chosen_rates() == {("mqar", "V"): 1e-3}


def test_harvest_leaves_a_study_folder_of_another_budget(study, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(study, "RUNS_RECORD", tmp_path / "runs.jsonl")
    out = tmp_path / "runs" / "lr-mqar" / "R"
    out.mkdir(parents=True)
    (out / "study.json").write_text(json.dumps({"overrides": []}))
    budget = study.setting("mqar-64x8").steps
    runs = [SimpleNamespace(variant=f"R train.lr={lr:g}", seed=0, metric="accuracy", valid_metric=0.5, valid_loss=1.0,
                            test_metric=0.5, parameters=10, steps=steps, steps_per_second=2.0, wall_seconds=3.0)
            for lr, steps in ((1e-3, budget // 2), (3e-3, budget))]
    monkeypatch.setattr(study, "_records", lambda o: runs)
    assert study._harvest_study(out, False, {}) == 1
    rows = [json.loads(line) for line in study.RUNS_RECORD.read_text().splitlines()]
    assert [(r["lr"], r["steps"]) for r in rows] == [(3e-3, budget)]
    assert f"trained {budget // 2} steps" in capsys.readouterr().out


def test_the_first_grid_table_shows_the_earlier_budget_though_the_row_names_repeat(tmp_path: Path,
                                                                                   monkeypatch) -> None:
    tables = load_script("doc_tables/mixing", monkeypatch)
    study = tables.study
    monkeypatch.setattr(study, "RUNS_RECORD", tmp_path / "runs.jsonl")
    monkeypatch.setattr(tables, "_record_name", lambda path: path.name)
    budget = study.setting("mqar-64x8").steps
    for steps, valid in ((budget // 2, 0.25), (budget, 0.75)):  # the same row name at two budgets, newest last
        study.append(study.RUNS_RECORD, {"table": "mixing_runs", "row": study.run_key("mqar-64x8", "D+V", 1e-3, 0),
                                         "setting": "mqar-64x8", "kind": "D+V", "lr": 1e-3, "seed": 0,
                                         "steps": steps, "valid": valid})
    table = tables.earlier_grid_table()
    assert f"{budget // 2:,} steps, lr 0.001" in table and "| D+V | — | 0.250 | — |" in table
    assert "0.750" not in table and set(study.harvested()) == {study.run_key("mqar-64x8", "D+V", 1e-3, 0)}
