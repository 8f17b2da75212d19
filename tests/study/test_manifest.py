"""What a study is: grids, variants and folders, and the manifest that tells a continued study from another."""

from __future__ import annotations

import json

import pytest

from synthformer.common.config import ConfigError
from synthformer.study import DEFAULT_KINDS, StudySpec, Variant, parse_grid
from synthformer.study.manifest import MANIFEST, check_manifest
from synthformer.train import RunError


def spec(**changes) -> StudySpec:
    base = {"config": {"train": {"steps": 4, "lr": 0.003}}, "kinds": ["V", "R"], "grid": [], "seeds": [0, 1]}
    return StudySpec(**{**base, **changes})


def test_parse_grid_and_its_errors() -> None:
    assert parse_grid(["model.n_heads=2, 4,8", "train.lr=1e-3"]) == [("model.n_heads", ["2", "4", "8"]),
                                                                    ("train.lr", ["1e-3"])]
    for bad in ("model.n_heads", "model.n_heads=", "=2,4", "model.n_heads=2,,4", "model.n_heads=2,2"):
        with pytest.raises(ConfigError, match="--grid"):
            parse_grid([bad])
    with pytest.raises(ConfigError, match="given twice"):
        parse_grid(["a.b=1", "a.b=2"])


def test_variants_are_kinds_times_grid_points() -> None:
    s = spec(grid=[("model.n_heads", ["2", "4"]), ("train.lr", ["1", "2"])])
    names = [v.name for v in s.variants]
    assert len(names) == 8 and names[0] == "V model.n_heads=2 train.lr=1" and names[-1].startswith("R ")
    assert s.variants[0].dir_name == "V_model.n_heads=2_train.lr=1"
    assert [v.name for v in spec(kinds=[], grid=[("model.n_heads", ["2", "4"])]).variants] == [
        "model.n_heads=2", "model.n_heads=4"]
    assert Variant("R+V").label == "R+V" and Variant("FD").label == "Factorized Dense (FD)"
    assert DEFAULT_KINDS == ("V", "R", "Fix", "FR", "D", "FD", "R+V", "D+V")
    with pytest.raises(ConfigError, match="kind key"):
        spec(grid=[("model.decoder_kind", ["R", "D"])])
    with pytest.raises(ConfigError, match="duplicate"):
        spec(kinds=["V", "V"])


def test_manifest_written_then_same_study_continues_and_another_is_refused(tmp_path) -> None:
    out = tmp_path / "study"
    assert check_manifest(out, spec()) is False
    saved = json.loads((out / MANIFEST).read_text())
    assert saved["kinds"] == ["V", "R"] and saved["seeds"] == [0, 1]
    assert check_manifest(out, spec()) is True
    with pytest.raises(RunError, match=r"different study \(seeds: \[0, 1\] -> \[0\]\)"):
        check_manifest(out, spec(seeds=[0]))
    with pytest.raises(RunError, match=r"different study \(seeds: \[0, 1\] -> \[1, 2, 3\]\)"):
        check_manifest(out, spec(seeds=[1, 2, 3]))
    # more seeds after the saved ones grow the study (its finished runs stay valid); the manifest records them
    assert check_manifest(out, spec(seeds=[0, 1, 2])) is True
    assert json.loads((out / MANIFEST).read_text())["seeds"] == [0, 1, 2]
    with pytest.raises(RunError, match=r"seeds: \[0, 1, 2\] -> \[0, 1\]"):
        check_manifest(out, spec())
    assert check_manifest(out, spec(seeds=[0, 1, 2])) is True
    with pytest.raises(RunError, match=r"train\.lr: 0\.003 -> 0\.001"):
        check_manifest(out, spec(config={"train": {"steps": 4, "lr": 0.001}}, seeds=[0, 1, 2]))
    # how runs execute (DDP or FSDP and its units, loader workers), also when a newer version changes a default:
    # the same study
    executed = {"steps": 4, "lr": 0.003, "distributed": "fsdp", "fsdp_units": ["Block"], "num_workers": 2}
    assert check_manifest(out, spec(config={"train": executed}, seeds=[0, 1, 2])) is True
    (out / MANIFEST).write_text("{not json")
    with pytest.raises(RunError, match="not a study manifest"):
        check_manifest(out, spec())


def test_a_folder_that_is_no_study_is_refused(tmp_path) -> None:
    (tmp_path / "something.txt").write_text("x")
    with pytest.raises(RunError, match="not empty and holds no study.json"):
        check_manifest(tmp_path, spec())
    with pytest.raises(RunError, match="not a directory"):
        check_manifest(tmp_path / "something.txt", spec())
