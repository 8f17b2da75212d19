"""benchmarks/studies/reach.py: the compute an out-of-reach table would need is the dry-run's FLOPs at the published
recipe, priced at the rate the recorded CPU-size run of the task reached (its FLOPs per step by the same counter,
times its steps, over its training seconds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .scripts import load_script


@pytest.fixture
def reach(monkeypatch, tmp_path: Path):
    module = load_script("studies/reach", monkeypatch)
    monkeypatch.setattr(module, "RESULTS", tmp_path)
    return module


def test_a_recorded_train_command_gives_its_config_and_overrides(reach) -> None:
    command = ("OMP_NUM_THREADS=1 synthformer train configs/lra_text.yaml model.encoder_kind=V train.steps=100 "
               "--run-dir /x/text-V --threads 1 && OMP_NUM_THREADS=1 synthformer eval /x/text-V --split test")
    assert reach._train_command(command) == ("configs/lra_text.yaml", ["model.encoder_kind=V", "train.steps=100"])


def test_the_recipe_is_priced_at_the_recorded_runs_rate(reach, tmp_path: Path) -> None:
    config = "configs/lra_pathfinder.yaml"
    recorded = {"table": "lra", "row": "pathfinder-V", "steps": 3, "train_s": 12.0, "threads": 1, "machine": "m",
                "command": f"synthformer train {config} train.batch_size=2 train.steps=3 --run-dir r && "
                           "synthformer eval r"}
    (tmp_path / "lra.jsonl").write_text(json.dumps(recorded) + "\n", encoding="utf-8")
    r = reach.Reach("p", "Pathfinder", ((config, ("train.batch_size=4", "train.steps=10")),), "lra", "pathfinder-V",
                    "a source")
    entry = reach.measure(r)
    small = reach._plan(config, ["train.batch_size=2"]).flops_per_step
    assert entry["stages"][0]["steps"] == 10 and entry["stages"][0]["examples_per_step"] == 4
    # the same model at twice the batch costs twice the FLOPs a step (the counter counts the batch)
    assert entry["stages"][0]["flops_per_step"] == pytest.approx(2 * small, rel=1e-6)
    assert entry["flops"] == pytest.approx(10 * 2 * small, rel=1e-6)
    assert entry["flops_per_second"] == pytest.approx(small * 3 / 12.0, rel=1e-6)
    assert entry["days"] == pytest.approx(entry["flops"] / entry["flops_per_second"] / 86400)
    assert entry["days"] == pytest.approx(10 * 2 * 12.0 / 3 / 86400, rel=1e-6)  # 20 small steps at 4 s each


def test_every_row_names_a_recorded_run(reach) -> None:
    real = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    for r in reach.REACHES:
        assert r.row in reach.latest(real / f"{r.record}.jsonl", r.record), (r.name, r.record, r.row)
