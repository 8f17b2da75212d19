"""benchmarks/studies/seed_studies.py: a study trains only the seeds its earlier record lacks, the page reads the
earlier and the new runs together by (variant, seed), a repro run is set against the earlier run it repeats, and the
noise floor pairs runs of one seed and one library source under different CPU kernels only."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from .scripts import load_script


@pytest.fixture
def seeds(monkeypatch, tmp_path: Path):
    module = load_script("studies/seed_studies", monkeypatch)
    monkeypatch.setattr(module, "RECORD", tmp_path / "seed_studies.jsonl")
    return module


def _earlier(tmp_path: Path, runs: list[tuple[str, int, float]]) -> str:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"runs": [{"variant": v, "seed": s, "valid_metric": x, "test_metric": None}
                                         for v, s, x in runs]}), encoding="utf-8")
    return str(path)  # absolute: ROOT / absolute is the absolute path


def _row(seeds, study: str, variant: str, seed: int, valid: float, *, capability: str = "machine",
         tree: str = "abc", machine: str = "CPU X, torch CPU capability AVX2") -> None:
    seeds.append(seeds.RECORD, {"table": seeds.TABLE, "row": seeds.row_key(study, variant, seed), "study": study,
                                "variant": variant, "seed": seed, "valid": valid, "cpu_capability": capability,
                                "src_tree": [tree], "machine": machine})


def test_a_study_trains_only_the_seeds_its_earlier_record_lacks(seeds, tmp_path: Path) -> None:
    earlier = _earlier(tmp_path, [(k, s, 1.0) for k in ("V", "R") for s in (0, 1, 2)] + [("V", 3, 1.0)])
    s = seeds.SeedStudy("x", "configs/c.yaml", ("train.steps=9",), ("V", "R"), earlier=earlier)
    assert s.earlier_seeds() == {0, 1, 2}  # seed 3 only for V: R still needs it
    assert s.new_seeds() == [3, 4]
    command = s.command(Path("runs/seeds"))
    assert command[:4] == ["study", "configs/c.yaml", "train.steps=9", "train.seed=3"]
    assert command[command.index("--seeds") + 1] == "2" and command[command.index("--out") + 1] == "runs/seeds/x"
    fresh = seeds.SeedStudy("y", "configs/c.yaml", (), ("V",), seeds=(0, 1, 2))
    assert not any(a.startswith("train.seed=") for a in fresh.command(Path("r")))  # the config's seed first
    gap = seeds.SeedStudy("z", "configs/c.yaml", (), ("V",), seeds=(0, 2), earlier=None)
    with pytest.raises(ValueError, match="not contiguous"):
        gap.new_seeds()


def test_a_machine_without_the_run_folders_goes_on_from_the_record(seeds, tmp_path: Path) -> None:
    s = seeds.SeedStudy("x", "configs/c.yaml", (), ("V", "R"), seeds=(0, 1, 2, 3))
    _row(seeds, "x", "V", 0, 1.0)
    assert s.new_seeds() == [0, 1, 2, 3]  # seed 0 lacks R: trained again
    _row(seeds, "x", "R", 0, 1.0)
    _row(seeds, "x", "V", 2, 1.0)
    _row(seeds, "x", "R", 2, 1.0)
    assert s.recorded_seeds() == {0, 2}
    assert s.new_seeds() == [1, 2, 3]  # only a recorded prefix is dropped: the seeds stay contiguous
    command = s.command(Path("r"))
    assert "train.seed=1" in command and command[command.index("--seeds") + 1] == "3"
    assert s.out(Path("r")) == Path("r/x-seed1")  # not the folder of a study that started at seed 0
    assert seeds.SeedStudy("y", "c.yaml", (), ("V",)).out(Path("r")) == Path("r/y")


def test_a_noise_study_runs_under_the_named_kernels(seeds) -> None:
    noise, repro = seeds.study("shk-noise"), seeds.study("shk-repro")
    assert noise.env()["ATEN_CPU_CAPABILITY"] == "default"
    # the same training as the run it pairs with, into its own folder
    a, b = noise.command(Path("r")), repro.command(Path("r"))
    assert [x for x in a if x != "r/shk-noise"] == [x for x in b if x != "r/shk-repro"] and a != b
    assert seeds.study("shk").env().get("ATEN_CPU_CAPABILITY") == os.environ.get("ATEN_CPU_CAPABILITY")


def test_the_page_reads_earlier_and_new_runs_by_variant_and_seed(seeds, tmp_path: Path, monkeypatch) -> None:
    earlier = _earlier(tmp_path, [("V", 0, 2.0), ("R", 0, 2.5)])
    monkeypatch.setattr(seeds, "STUDIES", (seeds.SeedStudy("t", "c.yaml", (), ("V", "R"), earlier=earlier),
                                           seeds.SeedStudy("t-repro", "c.yaml", (), ("V",), seeds=(0,))))
    _row(seeds, "t", "V", 1, 2.1)
    _row(seeds, "t", "R", 1, 2.6)
    _row(seeds, "other", "V", 1, 9.0)  # another study's row is not this one's
    # by seed, the kinds in the earlier record's order within a seed
    assert seeds.runs_of("t") == [("V", 0, 2.0), ("R", 0, 2.5), ("V", 1, 2.1), ("R", 1, 2.6)]
    assert seeds.reproduction("t-repro") is None  # not recorded yet
    _row(seeds, "t-repro", "V", 0, 2.25)
    found = seeds.reproduction("t-repro")
    assert found["earlier"] == 2.0 and found["now"] == 2.25 and found["difference"] == pytest.approx(0.25)


def test_a_repro_of_a_study_without_an_earlier_record_reads_its_recorded_runs(seeds, monkeypatch) -> None:
    monkeypatch.setattr(seeds, "STUDIES", (seeds.SeedStudy("c", "c.yaml", (), ("V", "R")),
                                           seeds.SeedStudy("c-repro", "c.yaml", (), ("V",), seeds=(0,))))
    _row(seeds, "c-repro", "V", 0, 1.5)
    assert seeds.reproduction("c-repro")["earlier"] is None  # the study's own seed 0 not recorded yet
    _row(seeds, "c", "V", 0, 1.25)
    _row(seeds, "c", "V", 1, 9.0)  # another seed is not the one re-trained
    found = seeds.reproduction("c-repro")
    assert found["earlier"] == 1.25 and found["difference"] == pytest.approx(0.25)


def test_the_noise_floor_pairs_one_seed_and_source_under_different_kernels(seeds) -> None:
    _row(seeds, "t-repro", "V", 0, 2.00)
    _row(seeds, "t-noise", "V", 0, 2.03, capability="default")
    _row(seeds, "t-noise", "R", 0, 2.50, capability="default")  # no partner: R never ran on the machine's kernels
    _row(seeds, "u-repro", "V", 0, 1.00, tree="abc")
    _row(seeds, "u-noise", "V", 0, 1.50, capability="default", tree="def")  # other library code: not noise
    pairs = seeds.noise_pairs()
    assert len(pairs) == 1
    (pair,) = pairs
    assert pair["study"] == "t" and pair["difference"] == pytest.approx(0.03)
    assert {pair["a"], pair["b"]} == {"CPU X, torch CPU capability AVX2",
                                      "CPU X, torch CPU capability DEFAULT (forced)"}
    _row(seeds, "t", "V", 3, 2.2, machine="CPU Y, torch CPU capability AVX512")
    _row(seeds, "t-repro", "V", 3, 2.1)  # the same seed and source on two hosts pairs too
    assert len(seeds.noise_pairs()) == 2


def test_imdb_is_read_from_its_two_studies_paired_by_seed_once_v_has_two_seeds(seeds, monkeypatch) -> None:
    verdicts = load_script("doc_tables/verdicts", monkeypatch)  # reads this test's seed_studies copy
    one_seed = verdicts.imdb_verdicts()
    assert "benchmarks/results/imdb.jsonl" in one_seed and "seed_studies.jsonl" not in one_seed
    for seed, (v, r, fr, frv, lin) in enumerate([(0.80, 0.78, 0.83, 0.84, 0.70), (0.81, 0.77, 0.84, 0.85, 0.71),
                                                 (0.79, 0.79, 0.82, 0.86, 0.69)]):
        for study, variant, x in (("imdb", "V", v), ("imdb", "R", r), ("imdb-k32", "FR", fr),
                                  ("imdb-k32", "FR+V", frv), ("imdb-k32", "Linformer", lin)):
            seeds.append(seeds.RECORD, {"table": seeds.TABLE, "row": seeds.row_key(study, variant, seed),
                                        "study": study, "variant": variant, "seed": seed, "valid": x, "test": x})
    assert ("FR+V", 2, pytest.approx(86.0)) in verdicts.imdb_seeded()
    text = verdicts.imdb_verdicts()
    assert "studies `imdb` and `imdb-k32`" in text and "benchmarks/results/imdb.jsonl" not in text
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}
    # 84, 85, 86 against 80, 81, 79: +4, +4, +7 paired by seed (unpaired means would give the same +5, not the interval)
    assert "| 3 | +5.00 [+0.70, +9.30] |" in rows["FR+V"] and rows["FR+V"].endswith("holds |")
    assert "reversed" in rows["Linformer"] or "within noise" in rows["Linformer"]


def test_run_again_trains_recorded_seeds_into_its_own_folder_and_its_rows_supersede(seeds, tmp_path: Path,
                                                                                     monkeypatch) -> None:
    _row(seeds, "t8-repro", "V", 0, 13.03, tree="old")
    _row(seeds, "t8-noise", "V", 0, 13.09, capability="default", tree="old new")  # resumed across two sources
    assert seeds.study("t8-repro").new_seeds() == []  # recorded: a plain run trains nothing
    started = []
    monkeypatch.setattr(seeds, "src_tree", lambda: "new")
    monkeypatch.setattr(seeds, "_train", lambda s, runs, lane, again=None: started.append((s.name, again)) or 0)
    monkeypatch.setattr(seeds, "harvest_study", lambda s, runs, shared: 0)
    args = SimpleNamespace(studies=["t8-repro", "t8-noise"], runs=tmp_path, lanes=1, shared_cpu=False, again=True)
    assert seeds.run(args) == 0 and started == [("t8-repro", "new"), ("t8-noise", "new")]
    command = seeds.study("t8-noise").command(tmp_path, again="new")
    assert command[command.index("--out") + 1] == str(tmp_path / "t8-noise-again-new")
    assert command[command.index("--seeds") + 1] == "1" and not any(a.startswith("train.seed=") for a in command)
    monkeypatch.setattr(seeds, "src_tree", lambda: "new-dirty")
    assert seeds.run(args) == 2  # a dirty source is no source to pair

    # the again folders' runs supersede the rows of another source, once
    run = SimpleNamespace(variant="V", seed=0, metric="bleu", valid_metric=13.05, valid_loss=2.0, test_metric=None,
                          parameters=1, steps=5, steps_per_second=1.0, wall_seconds=1.0)
    monkeypatch.setattr(seeds, "_records", lambda out: [run])
    for name in ("t8-repro", "t8-noise"):
        out = seeds.study(name).again_out(tmp_path, "new")
        out.mkdir()
        seeds.append(seeds._launches(out), {"commit": "c1", "src": "new", "command": "study ..."})
        assert seeds._harvest_folder(seeds.study(name), out, False, again=True) == 1
        assert seeds._harvest_folder(seeds.study(name), out, False, again=True) == 0  # its own row: harvested
        assert seeds._harvest_folder(seeds.study(name), tmp_path / name, False) == 0  # a plain folder never does
    (pair,) = seeds.noise_pairs()
    assert pair["src_tree"] == "new" and pair["difference"] == pytest.approx(0.0)


def test_the_last_seed_half_recorded_trains_only_its_missing_kinds(seeds, tmp_path: Path) -> None:
    s = seeds.SeedStudy("x", "configs/c.yaml", (), ("V", "R", "D"), seeds=(0, 1))
    for kind in ("V", "R", "D"):
        _row(seeds, "x", kind, 0, 1.0)
    assert s.kinds_to_train(tmp_path) == ("V", "R", "D")  # nothing of seed 1 yet
    _row(seeds, "x", "R", 1, 1.0)
    command = s.command(tmp_path)
    assert command[command.index("--kinds") + 1] == "V,D" and "train.seed=1" in command
    assert command[command.index("--out") + 1] == str(tmp_path / "x-seed1")
    # a folder already started keeps its kinds, so the resumed study's manifest is unchanged
    (tmp_path / "x-seed1").mkdir()
    (tmp_path / "x-seed1" / "study.json").write_text(json.dumps({"kinds": ["V", "R", "D"]}), encoding="utf-8")
    assert s.kinds_to_train(tmp_path) == ("V", "R", "D")
    # two seeds left: every kind of both (a study's seeds are shared by its kinds)
    two = seeds.SeedStudy("y", "configs/c.yaml", (), ("V", "R"), seeds=(0, 1))
    _row(seeds, "y", "V", 0, 1.0)
    assert two.kinds_to_train(tmp_path) == ("V", "R")
    # run --again trains every kind
    assert s.command(tmp_path, again="t")[s.command(tmp_path, again="t").index("--kinds") + 1] == "V,R,D"


def test_the_fixed_width_heads_study_is_tabled_and_read_against_two_heads(seeds, monkeypatch) -> None:
    verdicts = load_script("doc_tables/verdicts", monkeypatch)  # reads this test's seed_studies copy
    assert "no recorded run yet" in verdicts.heads_table("t9-fixed")
    assert "no recorded run yet" in verdicts.t9_fixed_verdicts()
    # 2 heads at 10, 11, 12 by seed; 32 heads a steady 3 points above; 8 heads as often below as above
    for seed, base in enumerate((10.0, 11.0, 12.0)):
        for heads, x in ((2, base), (8, base + (1.0, -1.0, 0.5)[seed]), (32, base + 3.0)):
            variant = f"R model.n_heads={heads}"
            seeds.append(seeds.RECORD, {"table": seeds.TABLE, "row": seeds.row_key("t9-fixed", variant, seed),
                                        "study": "t9-fixed", "variant": variant, "seed": seed, "valid": x, "test": x})
    table = {line.split("|")[1].strip(): line for line in verdicts.heads_table("t9-fixed").splitlines()
             if line.startswith("| R/")}
    assert list(table) == ["R/2-heads", "R/8-heads", "R/32-heads"]
    assert "| 3 | 11.00 ± 1.00 | 11.00 ± 1.00 |" in table["R/2-heads"]
    text = verdicts.t9_fixed_verdicts()
    rows = [line for line in text.splitlines() if line.startswith("| R/32-heads")]
    assert len(rows) == 2 and all("+3.00" in r and r.endswith("holds |") for r in rows)  # valid and test
    assert all("within noise" in r for r in text.splitlines() if r.startswith("| R/8-heads"))
    assert "study `t9-fixed`" in text
