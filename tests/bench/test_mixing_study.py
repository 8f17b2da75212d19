"""benchmarks/studies/mixing_study.py: the commands it runs (each kind's grid, the seeds at the chosen rate reusing the
grid's seed 0 where the setting is the grid's), the grid's variant names read back, and the choice of a rate from a grid
on validation only."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from .scripts import load_script


@pytest.fixture
def study(monkeypatch):
    return load_script("studies/mixing_study", monkeypatch)


def test_grid_variants_read_back(study) -> None:
    assert study._grid_point("R+V train.lr=0.001") == ("R+V", 0.001)
    assert study._grid_point("DynamicConv train.lr=0.0003") == ("DynamicConv", 0.0003)


def test_every_setting_trains_at_a_grid_and_each_grid_setting_at_its_own(study) -> None:
    names = {s.name for s in study.SETTINGS}
    assert set(study.LR_SETTING.values()) <= names
    # every setting's grid is chosen on a setting, or borrows the choices of one that is
    assert {s.grid for s in study.SETTINGS} == set(study.LR_SETTING) | set(study.RATES_FROM)
    assert set(study.RATES_FROM.values()) <= set(study.LR_SETTING) and not set(study.RATES_FROM) & set(study.LR_SETTING)
    for grid, name in study.LR_SETTING.items():  # a grid folder's runs are harvested as its setting's (its seed 0)
        assert study.setting(name).grid == grid
    # each MQAR width has a grid of its own; the numbers of pairs at width 128 share one
    widths = {s.option("model.d_model"): s.grid for s in study.SETTINGS if s.family == "mqar"}
    assert widths == {"128": "mqar", "64": "mqar-d64"}
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
    # the runs each study trains, as the record keys them: the grid setting's seed 0 is the grid's run
    assert study.seeds_job(grid_setting, "R", 0.001, 3, tmp_path, 1).keys == ("mqar-64x8-R-lr0.001-seed1",
                                                                             "mqar-64x8-R-lr0.001-seed2")
    assert study.seeds_job(other, "R", 0.001, 3, tmp_path, 1).keys == tuple(
        f"mqar-64x4-R-lr0.001-seed{n}" for n in range(3))
    assert study.lr_job("mqar", "R", tmp_path, 1).keys == tuple(
        study.run_key("mqar-64x8", "R", lr, 0) for lr in study.LRS)


def test_the_seeds_stage_goes_on_from_the_record(study, tmp_path: Path) -> None:
    other, grid_setting = study.setting("mqar-64x4"), study.setting(study.LR_SETTING["mqar"])
    done = {study.run_key("mqar-64x4", "R", 0.001, 0): {}, study.run_key("mqar-64x4", "R", 0.001, 2): {}}
    job = study.seeds_job(other, "R", 0.001, 3, tmp_path, 1, done)
    # seed 0 is recorded: seeds 1 and 2 train (2 again: only a recorded prefix is skipped), in a folder of their own
    assert job.keys == ("mqar-64x4-R-lr0.001-seed1", "mqar-64x4-R-lr0.001-seed2")
    assert job.out == tmp_path / "mqar-64x4" / "R-seed1"
    assert "train.seed=1" in job.command and job.command[job.command.index("--seeds") + 1] == "2"
    assert study.seeds_job(other, "R", 0.001, 3, tmp_path, 1).out == tmp_path / "mqar-64x4" / "R"
    # the grid setting's base seed is 1: its plain folder starts there
    assert study.seeds_job(grid_setting, "R", 0.001, 3, tmp_path, 1, done).out == tmp_path / "mqar-64x8" / "R"
    assert study.first_seed(other, "R", 0.003, done) == 0  # another rate's runs are not these


def test_a_folder_of_another_study_is_kept_and_the_chosen_one_trains_beside_it(study, tmp_path: Path) -> None:
    other, grid_setting = study.setting("mqar-64x4"), study.setting(study.LR_SETTING["mqar"])

    def started(s, lr: float, seeds: list[int]) -> Path:  # the folder as `synthformer study` leaves it
        out = tmp_path / s.name / "R"
        out.mkdir(parents=True)
        (out / "study.json").write_text(json.dumps({"overrides": [*s.overrides, f"train.lr={lr:g}"],
                                                    "seeds": seeds}))
        return out

    earlier = started(other, 3e-4, [0, 1, 2])  # trained before its grid chose 1e-3
    assert study._spec_rate(study._study_spec(earlier)) == 3e-4 and study._study_spec(tmp_path / "none") == {}
    assert study.seeds_job(other, "R", 0.001, 3, tmp_path, 1).out == tmp_path / "mqar-64x4" / "R-lr0.001"
    done = {study.run_key("mqar-64x4", "R", 0.001, 0): {}}
    assert study.seeds_job(other, "R", 0.001, 3, tmp_path, 1, done).out == tmp_path / "mqar-64x4" / "R-seed1"  # free
    assert study.seeds_job(other, "R", 0.0003, 3, tmp_path, 1).out == earlier  # its own study: the folder goes on
    # the same rate from another first seed: the grid setting's seed 0 trained as a plain seeds study before its
    # grid existed (its seeds start at 1 now, seed 0 being the grid's run)
    seed0 = started(grid_setting, 3e-4, [0])
    job = study.seeds_job(grid_setting, "R", 0.0003, 3, tmp_path, 1)
    assert job.out == seed0.with_name("R-lr0.0003") and "train.seed=1" in job.command


def _run(variant: str, seed: int, valid: float, loss: float) -> SimpleNamespace:
    return SimpleNamespace(variant=variant, seed=seed, metric="accuracy", valid_metric=valid, valid_loss=loss,
                           test_metric=valid, parameters=10, steps=5, steps_per_second=2.0, wall_seconds=3.0)


@pytest.fixture
def records(study, tmp_path: Path, monkeypatch) -> Path:
    for name in ("LR_RECORD", "RUNS_RECORD", "RECORD"):
        monkeypatch.setattr(study, name, tmp_path / f"{name}.jsonl")
    monkeypatch.setattr(study, "ROOT", tmp_path)
    # every setting's budget is the fake runs' 5 steps (the budget filter has tests of its own)
    monkeypatch.setattr(study.Setting, "steps", property(lambda self: 5))
    return tmp_path


def _study_dir(root: Path, rel: str, overrides: list[str], seeds: tuple[int, ...] = (0, 1, 2)) -> Path:
    out = root / "runs" / rel
    out.mkdir(parents=True)
    (out / "study.json").write_text(json.dumps({"overrides": overrides, "seeds": list(seeds)}))
    launch = {"commit": "abc1234", "command": "study ..."}
    (out.parent / f"{out.name}.launches.jsonl").write_text(json.dumps(launch) + "\n")
    return out


def test_harvest_copies_each_finished_run_once_keyed_by_setting_kind_rate_seed(study, records: Path,
                                                                               monkeypatch) -> None:
    grid = _study_dir(records, "lr-mqar/R_plus_V", [])
    seeds = _study_dir(records, "mqar-64x4/R_plus_V", ["train.lr=0.003"])
    beside = _study_dir(records, "mqar-64x4/R-lr0.001-seed1", ["train.lr=0.001", "train.seed=1"], (1, 2))
    found = {grid: [_run("R+V train.lr=0.001", 0, 0.5, 1.0)],
             seeds: [_run("R+V", 0, 0.7, 0.5), _run("R+V", 2, 0.8, 0.4)], beside: [_run("R", 1, 0.2, 2.0)]}
    monkeypatch.setattr(study, "_records", lambda out: found.get(out, []))
    args = SimpleNamespace(runs=records / "runs", shared_cpu=False)
    study.harvest(args)
    study.harvest(args)  # a second harvest appends nothing
    rows = [json.loads(line)["row"] for line in study.RUNS_RECORD.read_text().splitlines()]
    assert sorted(rows) == ["mqar-64x4-R+V-lr0.003-seed0", "mqar-64x4-R+V-lr0.003-seed2",
                            "mqar-64x4-R-lr0.001-seed1", "mqar-64x8-R+V-lr0.001-seed0"]
    # a row's command names the folder it was harvested from, its rate and first seed as its study.json holds them
    command = study.harvested()["mqar-64x4-R-lr0.001-seed1"]["command"]
    assert "--out runs/mixing/mqar-64x4/R-lr0.001-seed1" in command and "train.seed=1 " in command
    assert "--seeds 2" in command and "train.lr=0.001" in command
    entry = study.harvested()["mqar-64x8-R+V-lr0.001-seed0"]
    assert (entry["family"], entry["valid"], entry["test"]) == ("mqar", 0.5, 0.5) and "--grid" in entry["command"]
    assert entry["launched_at"] == ["abc1234"]  # the code the run trained with, not only the harvest's commit


def test_run_skips_the_studies_whose_runs_are_all_harvested(study, records: Path, monkeypatch) -> None:
    for kind in study.KINDS[1:]:  # every kind's grid but V's is done
        for lr in study.LRS:
            study.append(study.RUNS_RECORD, {"table": "mixing_runs", "row": study.run_key("mqar-64x8", kind, lr, 0),
                                             "setting": "mqar-64x8", "steps": 5})
    study.append(study.RUNS_RECORD, {"table": "mixing_runs", "row": study.run_key("mqar-64x8", "V", 1e-3, 0),
                                     "setting": "mqar-64x8", "steps": 5})
    started: list[list[str]] = []
    monkeypatch.setattr(study, "_study", lambda c: started.append(c) or 0)
    args = SimpleNamespace(stage="lr", families=["mqar"], settings=["mqar-64x8"], runs=records / "runs", threads=1,
                           lanes=2, shared_cpu=False)
    assert study.run(args) == 0
    assert [j.command[j.command.index("--kinds") + 1] for j in started] == ["V"]  # 2 of V's 3 rates still to train
    assert started[0].out == records / "runs" / "lr-mqar" / "V"
    started.clear()
    args.settings = None  # the whole family: the widths' grids too, each kind in a folder of its grid
    assert study.run(args) == 0
    assert sorted({j.out.parent.name for j in started}) == ["lr-mqar", "lr-mqar-d64"]
    assert len(started) == 1 + len(study.KINDS)
    width = next(j for j in started if j.out.parent.name == "lr-mqar-d64")
    assert "model.d_model=64" in width.command and width.keys[0].startswith("mqar-64x8-d64-")


def test_choose_takes_the_best_validation_accuracy_and_waits_for_the_whole_grid(study, records: Path) -> None:
    for kind, lr, acc, loss in [("V", 3e-4, 0.2, 2.0), ("V", 1e-3, 1.0, 0.1), ("V", 3e-3, 1.0, 0.05),
                                ("R", 3e-4, 0.3, 1.0)]:
        study.append(study.RUNS_RECORD, {"table": "mixing_runs", "row": study.run_key("mqar-64x8", kind, lr, 0),
                                         "setting": "mqar-64x8", "steps": 5, "kind": kind, "lr": lr, "valid": acc,
                                         "valid_loss": loss})
    for lr, acc in ((3e-4, 0.1), (1e-3, 0.9), (3e-3, 0.5)):  # width 64's grid: its own choice
        study.append(study.RUNS_RECORD, {"table": "mixing_runs", "row": study.run_key("mqar-64x8-d64", "V", lr, 0),
                                         "setting": "mqar-64x8-d64", "steps": 5, "kind": "V", "lr": lr, "valid": acc,
                                         "valid_loss": 1.0})
    study.choose(SimpleNamespace(families=["mqar"], runs=records / "runs", shared_cpu=True))
    entries = [json.loads(line) for line in study.LR_RECORD.read_text().splitlines()]
    # ties on accuracy: the lower loss; R waits
    assert [(e["grid_name"], e["kind"], e["lr"]) for e in entries] == [("mqar", "V", 3e-3), ("mqar-d64", "V", 1e-3)]
    assert entries[1]["row"] == "mqar-d64-V" and entries[1]["family"] == "mqar"
    # MAD has a grid of its own, not trained here
    assert study.chosen_rates() == {("mqar", "V"): 3e-3, ("mqar-d64", "V"): 1e-3}
    grid = study.lr_command("mad", "V", records / "runs", 1)
    assert "task.generator=mixing:recall" in grid and "train.lr=0.0003,0.001,0.003" in grid


def test_the_seeds_stage_trains_seed_0_of_every_setting_before_the_other_seeds(study, records: Path,
                                                                            monkeypatch) -> None:
    study.append(study.LR_RECORD, {"table": "mixing_lr", "row": "mqar-R", "family": "mqar", "kind": "R", "lr": 1e-3,
                                   "steps": 5})  # written before grids had names of their own: the family's grid
    for grid in ("mqar-d64",):
        study.append(study.LR_RECORD, {"table": "mixing_lr", "row": f"{grid}-R", "family": "mqar", "grid_name": grid,
                                       "kind": "R", "lr": 3e-3, "steps": 5})
    assert study.chosen_rates() == {("mqar", "R"): 1e-3, ("mqar-d64", "R"): 3e-3}
    started: list = []
    monkeypatch.setattr(study, "_study", lambda j: started.append(j) or 0)
    args = SimpleNamespace(stage="seeds", families=["mqar"], settings=None, kinds=None, runs=records / "runs",
                           threads=1, lanes=1, shared_cpu=False)
    assert study.run(args) == 0
    mqar = [s.name for s in study.SETTINGS if s.family == "mqar"]
    grids = set(study.LR_SETTING.values())
    firsts = [(j.out.parent.name, len(j.keys)) for j in started[:len(set(mqar) - grids)]]
    assert firsts == [(n, 1) for n in mqar if n not in grids]  # a grid's setting has its seed 0
    rest = [(j.out.parent.name, len(j.keys)) for j in started[len(set(mqar) - grids):]]
    assert rest == [(n, 2 if n in grids else 3) for n in mqar]
    width = next(j for j in started if j.out.parent.name == "mqar-64x8-d64")
    assert "train.lr=0.003" in width.command  # its own grid's rate, not width 128's
    started.clear()
    args.settings = ["mqar-64x4", "mqar-64x8"]  # --settings: only those, seed 0 first as before
    assert study.run(args) == 0
    assert [(j.out.parent.name, len(j.keys)) for j in started] == [("mqar-64x4", 1), ("mqar-64x4", 3),
                                                                   ("mqar-64x8", 2)]
    started.clear()
    args.kinds = ["V"]  # --kinds: R's studies are not started
    assert study.run(args) == 0 and started == []


def test_a_dropped_setting_is_not_trained_and_its_folder_not_harvested(study, records: Path, capsys) -> None:
    dropped = next(iter(study.DROPPED))
    assert dropped not in {s.name for s in study.SETTINGS}
    out = _study_dir(records, f"{dropped}/R", ["train.lr=0.001"])
    assert study._harvest_study(out, False, {}) == 0
    assert "setting dropped" in capsys.readouterr().out
    grid = _study_dir(records, "lr-mqar-d32/R", ["train.lr=0.001,0.003"])  # the grid of a dropped width
    assert "mqar-d32" not in study.LR_SETTING and study._harvest_study(grid, False, {}) == 0
    assert "grid dropped" in capsys.readouterr().out


def test_a_family_that_borrows_its_rates_has_no_grid_and_trains_its_seeds_from_seed_0(study, records: Path,
                                                                                     monkeypatch) -> None:
    # MAD borrowed MQAR's rates at first (it has its own grid now): the lending as it was
    monkeypatch.setattr(study, "LR_SETTING", {"mqar": "mqar-64x8"})
    monkeypatch.setattr(study, "RATES_FROM", {"mad": "mqar"})
    study.append(study.LR_RECORD, {"table": "mixing_lr", "row": "mqar-R", "family": "mqar", "kind": "R", "lr": 1e-3,
                                   "steps": 5})
    started: list = []
    monkeypatch.setattr(study, "_study", lambda j: started.append(j) or 0)
    args = SimpleNamespace(stage="lr", families=["mad"], settings=None, kinds=None, runs=records / "runs", threads=1,
                           lanes=1, shared_cpu=False)
    assert study.run(args) == 0 and started == []  # no grid to train
    args.stage = "seeds"
    assert study.run(args) == 0
    mad = [s.name for s in study.SETTINGS if s.family == "mad"]
    assert [(j.out.parent.name, j.keys[0]) for j in started[:len(mad)]] == [
        (n, study.run_key(n, "R", 1e-3, 0)) for n in mad]  # seed 0 first, at R's MQAR rate, for every task
    assert all("train.lr=0.001" in j.command and "train.seed=1" not in j.command for j in started)


def test_a_rows_machine_and_date_are_its_runs_not_the_recording_hosts(study) -> None:
    amd, intel = "AMD EPYC, 2 CPUs, torch CPU capability AVX2", "Intel(R) Xeon(R), 2 CPUs, torch CPU capability AVX512"
    found = [{"machine": amd, "date": "2026-12-07 19:10 UTC"}, {"machine": intel, "date": "2026-12-07 23:40 UTC"},
             {"machine": amd, "date": "2026-12-07 19:30 UTC"}]
    assert study.run_provenance(found) == {"machine": f"{amd}; {intel}", "date": "2026-12-07 23:40 UTC"}
