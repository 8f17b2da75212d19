"""benchmarks/mixing_study.py: the commands it runs (each kind's grid, the seeds at the chosen rate reusing the grid's
seed 0 where the setting is the grid's), the grid's variant names read back, and the choice of a rate from a grid
on validation only."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from .scripts import load_script


@pytest.fixture
def study(monkeypatch):
    return load_script("mixing_study", monkeypatch)


def test_grid_variants_read_back(study) -> None:
    assert study._grid_point("R+V train.lr=0.001") == ("R+V", 0.001)
    assert study._grid_point("DynamicConv train.lr=0.0003") == ("DynamicConv", 0.0003)


def test_every_setting_is_in_a_family_with_a_grid_setting(study) -> None:
    names = {s.name for s in study.SETTINGS}
    assert set(study.LR_SETTING.values()) <= names and {s.family for s in study.SETTINGS} == set(study.LR_SETTING)
    for s in study.SETTINGS:  # MQAR's queries fill the tail after the pairs
        opts = dict(o.split("=", 1) for o in s.overrides)
        if "task.generator_options.num_pairs" in opts:
            pairs, length = int(opts["task.generator_options.num_pairs"]), int(opts["task.generator_options.seq_len"])
            assert int(opts["task.generator_options.num_queries"]) == (length + 1 - 2 * pairs) // 2


def test_the_grid_setting_reuses_the_grids_seed_0(study, tmp_path: Path) -> None:
    grid_setting = study.setting(study.LR_SETTING["mqar"])
    other = study.setting("mqar-64x4")
    reuse = study.seeds_command(grid_setting, "R", 0.001, 3, tmp_path, 1)
    fresh = study.seeds_command(other, "R", 0.001, 3, tmp_path, 1)
    assert "train.seed=1" in reuse and reuse[reuse.index("--seeds") + 1] == "2"
    assert "train.seed=1" not in fresh and fresh[fresh.index("--seeds") + 1] == "3"
    assert "train.lr=0.001" in reuse and str(tmp_path / "mqar-64x8" / "R") in reuse
    assert study.seeds_command(other, "R+V", 0.001, 3, tmp_path, 1)[-3].endswith("R_plus_V")


def test_choose_takes_the_best_validation_accuracy_and_waits_for_the_whole_grid(study, tmp_path: Path,
                                                                              monkeypatch) -> None:
    record = tmp_path / "lr.jsonl"
    monkeypatch.setattr(study, "LR_RECORD", record)
    runs = [SimpleNamespace(variant=f"{k} train.lr={lr:g}", valid_metric=acc, valid_loss=loss)
            for k, lr, acc, loss in [("V", 3e-4, 0.2, 2.0), ("V", 1e-3, 1.0, 0.1), ("V", 3e-3, 1.0, 0.05),
                                     ("R", 3e-4, 0.3, 1.0)]]
    monkeypatch.setattr(study, "_records", lambda out: runs)
    study.choose(SimpleNamespace(families=["mqar"], runs=tmp_path, shared_cpu=True))
    entries = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(e["kind"], e["lr"]) for e in entries] == [("V", 3e-3)]  # ties on accuracy: the lower loss; R waits
    assert study.chosen_rates() == {("mqar", "V"): 3e-3}
