"""Who holds a study directory (``synthformer study`` through ``main``): a study that failed before training
anything leaves --out free for the corrected command, a different study is still refused once one trained
something, and --overwrite replaces a study only when the new one's first run starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synthformer.cli.main import main
from synthformer.study import StudySpec
from synthformer.study.claim import started_anything
from synthformer.tasks import load_run_config
from tests.tasks.helpers import lm_config, write_yaml

pytestmark = pytest.mark.usefixtures("restore_logging")


def configs(tmp: Path) -> tuple[Path, Path]:
    """A tiny LM study config, and the same one whose training file is missing."""
    good = lm_config(tmp, steps=2, save_every=2, eval_every=2, log_every=1)
    bad = {**good, "task": {**good["task"], "train": str(tmp / "missing.txt")}}
    return write_yaml(tmp / "good.yaml", good), write_yaml(tmp / "bad.yaml", bad)


def study(config: Path, out: Path, kinds: str, *extra: str) -> list[str]:
    return ["study", str(config), "--kinds", kinds, "--seeds", "1", "--out", str(out), "--threads", "1", *extra]


def test_a_study_that_failed_before_training_leaves_out_free_for_the_fixed_command(tmp_path, capsys) -> None:
    good, bad = configs(tmp_path)
    out = tmp_path / "out"
    assert main(study(bad, out, "V")) == 2
    assert "missing.txt: file not found" in capsys.readouterr().err
    assert not out.exists()  # the study made the folder and gives it back

    # the same mistake into a folder the user made: the folder stays, empty
    out.mkdir()
    assert main(study(bad, out, "V")) == 2
    capsys.readouterr()
    assert list(out.iterdir()) == []

    # the fixed command (another config: "a different study" before) starts
    assert main(study(good, out, "V")) == 0
    captured = capsys.readouterr()
    assert "holds a different study" not in captured.err and "continued the study" not in captured.out
    assert (out / "V" / "seed0" / "study_result.json").is_file()


def test_a_manifest_left_by_a_study_killed_before_its_first_run_is_replaced(tmp_path, capsys) -> None:
    good, _ = configs(tmp_path)
    out = tmp_path / "out"
    (out / "R" / "seed0").mkdir(parents=True)  # what a kill leaves: the manifest, a folder, a stale lock file
    (out / "R" / "seed0" / ".lock").write_text("pid 1\n", encoding="utf-8")
    other = StudySpec.from_run(load_run_config(good), ["R"], [], 1)
    (out / "study.json").write_text(json.dumps(other.to_json()), encoding="utf-8")
    assert not started_anything(out)
    assert main(study(good, out, "V")) == 0
    capsys.readouterr()
    assert json.loads((out / "study.json").read_text(encoding="utf-8"))["kinds"] == ["V"]
    assert not (out / "R").exists()


def test_overwrite_replaces_a_finished_study_only_when_the_new_one_starts(tmp_path, capsys) -> None:
    good, bad = configs(tmp_path)
    out = tmp_path / "out"
    assert main(study(good, out, "V")) == 0
    capsys.readouterr()
    manifest = (out / "study.json").read_text(encoding="utf-8")
    old_record = (out / "V" / "seed0" / "study_result.json").read_text(encoding="utf-8")

    # without --overwrite a different study is still refused, in one line, and nothing is touched
    assert main(study(good, out, "R")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds a different study (kinds: ['V'] -> ['R'])" in err[0]

    # --overwrite with a study that fails before its first run starts: the earlier study is as it was
    assert main(study(bad, out, "V,R", "--overwrite")) == 2
    assert "missing.txt: file not found" in capsys.readouterr().err
    assert (out / "study.json").read_text(encoding="utf-8") == manifest
    assert (out / "V" / "seed0" / "study_result.json").read_text(encoding="utf-8") == old_record
    assert (out / "results.md").is_file() and (out / "V" / "seed0" / "checkpoints").is_dir()
    assert not (out / "R").exists()

    # --overwrite with a study that starts: the earlier one is gone, the new one trained in full (not read back)
    assert main(study(good, out, "R", "--overwrite")) == 0
    captured = capsys.readouterr()
    assert "replacing the earlier study" in captured.err and "continued the study" not in captured.out
    assert json.loads((out / "study.json").read_text(encoding="utf-8"))["kinds"] == ["R"]
    assert not (out / "V").exists()
    assert (out / "R" / "seed0" / "study_result.json").is_file()
    assert "| Random (R) |" in (out / "results.md").read_text(encoding="utf-8")

    # --overwrite of the same study trains it again instead of reading its run back
    # (the finished run's record is marked first: a run read back would keep the mark, one trained again cannot;
    # comparing two wall times instead fails whenever both runs happen to take the same rounded time)
    result = out / "R" / "seed0" / "study_result.json"
    marked = json.loads(result.read_text(encoding="utf-8"))
    marked["wall_seconds"] = -1.0
    result.write_text(json.dumps(marked), encoding="utf-8")
    assert main(study(good, out, "R", "--overwrite")) == 0
    capsys.readouterr()
    after = json.loads(result.read_text(encoding="utf-8"))
    assert after["wall_seconds"] > 0
