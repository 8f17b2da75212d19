"""A run directory's extra files (what others keep beside the run's own): written through the run, atomically,
under checked names that are not the run's."""

from __future__ import annotations

import json

import pytest

from synthformer.common import io
from synthformer.train import ExtraFiles, Run, RunDir, RunError, open_extras


@pytest.fixture
def run(tmp_path):
    with Run.open(tmp_path / "run") as opened:
        yield opened


def test_write_extra_writes_text_and_bytes_into_folders(run) -> None:
    assert run.write_extra("notes.json", '{"a": 1}\n') == run.path / "notes.json"
    assert run.write_extra("analysis/figure.png", b"\x89PNG") == run.path / "analysis" / "figure.png"
    assert (run.path / "notes.json").read_text(encoding="utf-8") == '{"a": 1}\n'
    assert (run.path / "analysis" / "figure.png").read_bytes() == b"\x89PNG"
    run.write_extra("notes.json", "replaced")
    assert (run.path / "notes.json").read_text(encoding="utf-8") == "replaced"
    with pytest.raises(TypeError, match=r"write_extra\('x.json'\): expected str or bytes, got dict"):
        run.write_extra("x.json", {"a": 1})
    assert sorted(p.name for p in run.path.iterdir()) == [".lock", "analysis", "notes.json"]  # no temporaries


def test_write_extra_is_atomic(run, monkeypatch) -> None:
    run.write_extra("result.json", "old")

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(io.os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        run.write_extra("result.json", "new")
    assert (run.path / "result.json").read_text(encoding="utf-8") == "old"
    assert not [p for p in run.path.iterdir() if p.name.startswith(io.TMP_PREFIX)]


def test_append_extra_jsonl_appends_lines_and_closes_a_torn_one(run) -> None:
    run.append_extra_jsonl("clock.jsonl", {"step": 1})
    run.append_extra_jsonl("clock.jsonl", {"step": 2})
    assert (run.path / "clock.jsonl").read_text(encoding="utf-8") == '{"step": 1}\n{"step": 2}\n'
    with open(run.path / "clock.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"step": 3')  # a kill mid-line
    run.append_extra_jsonl("deep/clock.jsonl", {"step": 0})
    run.append_extra_jsonl("clock.jsonl", {"step": 4})
    lines = (run.path / "clock.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines[-2:] == ['{"step": 3', '{"step": 4}'] and json.loads(lines[-1]) == {"step": 4}
    assert (run.path / "deep" / "clock.jsonl").read_text(encoding="utf-8") == '{"step": 0}\n'


def test_extra_dir_makes_the_folder_and_refuses_a_file(run) -> None:
    folder = run.extra_dir("analysis/study")
    assert folder == run.path / "analysis" / "study" and folder.is_dir()
    assert run.extra_dir("analysis/study") == folder  # again: the same folder, kept
    run.write_extra("notes", "x")
    with pytest.raises(ValueError, match=r"extra folder 'notes': .* exists and is not a folder"):
        run.extra_dir("notes")


@pytest.mark.parametrize("name", ["", "../x.json", "/tmp/x.json", "a/../../b", "a//b", "./a", ".hidden",
                                  "analysis/.tmp-x.png", "a\\b", "a/"])
def test_names_that_escape_the_run_or_hide_are_refused(run, name) -> None:
    with pytest.raises(ValueError, match=r"extra file name .*: expected a relative path of plain names inside the "
                                         r"run directory .* such as 'notes.json'"):
        run.write_extra(name, "x")
    with pytest.raises(ValueError, match="expected a relative path"):
        run.extra_dir(name)


@pytest.mark.parametrize("name", ["config.yaml", "metrics.jsonl", "checkpoints/step_000001", "tensorboard",
                                  "trackers/wandb", "synthformer_tokenizer.json", "model_config.json", "labels.json",
                                  "init_from.json", "eval_test.json", "eval_valid_hypotheses.txt"])
def test_names_of_the_runs_own_files_are_refused(run, name) -> None:
    first = name.split("/")[0]
    with pytest.raises(ValueError, match=rf"extra file name '{name}' collides with the run's own '{first}': the "
                                         r"run's files \(config.yaml, checkpoints, .*eval_\*.json.*\) are written by "
                                         "the run itself"):
        run.append_extra_jsonl(name, {})
    assert not (run.path / name).exists()
    assert RunDir.is_run_name(first)


def test_names_beside_the_runs_own_are_extra_files(run) -> None:
    for name in ("study_result.json", "eval.json", "evaluation_test.json", "config.yaml.bak", "analysis/config.yaml"):
        assert not RunDir.is_run_name(name.split("/")[0])
        run.write_extra(name, "x")
    run.remove_extra("eval.json")
    run.remove_extra("eval.json")  # gone already: nothing to do
    assert not (run.path / "eval.json").exists() and (run.path / "study_result.json").is_file()
    with pytest.raises(ValueError, match="collides with the run's own 'metrics.jsonl'"):
        run.remove_extra("metrics.jsonl")


def test_extra_files_are_no_earlier_run_and_survive_an_overwrite(tmp_path) -> None:
    with Run.open(tmp_path / "run") as run:
        run.start({"train": {"steps": 1}})
        run.append_metrics({"step": 1, "loss": 1.0})
        run.write_extra("study_result.json", "{}")
    with Run.open(tmp_path / "run", overwrite=True) as run:
        assert run.existing == ["metrics.jsonl"]
        run.start({"train": {"steps": 1}})
    assert (tmp_path / "run" / "study_result.json").read_text(encoding="utf-8") == "{}"
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


def test_open_extras_for_a_run_nobody_holds(tmp_path) -> None:
    with pytest.raises(RunError, match=r"run directory .*missing not found \(or not a directory\)"):
        open_extras(tmp_path / "missing")
    (tmp_path / "run").mkdir()
    extras = open_extras(tmp_path / "run")
    assert isinstance(extras, ExtraFiles) and not isinstance(extras, Run)
    assert extras.extra_dir("analysis") == tmp_path / "run" / "analysis"
    extras.write_extra("analysis/analysis.json", "{}")
    with Run.open(tmp_path / "run"):  # it took no lock: extra files are no earlier run either
        assert open_extras(RunDir(tmp_path / "run")).path == tmp_path / "run"
    assert (tmp_path / "run" / "analysis" / "analysis.json").is_file()


def test_only_the_main_process_writes(tmp_path, monkeypatch) -> None:
    (tmp_path / "run").mkdir()
    monkeypatch.setenv("RANK", "1")  # a second process of a torchrun launch
    extras = open_extras(tmp_path / "run")
    assert extras.write_extra("a.json", "x") == tmp_path / "run" / "a.json"
    assert extras.append_extra_jsonl("b.jsonl", {}) == tmp_path / "run" / "b.jsonl"
    assert extras.extra_dir("c") == tmp_path / "run" / "c"
    with Run.open(tmp_path / "run") as run:
        run.write_extra("d.json", "x")
    assert list((tmp_path / "run").iterdir()) == []
    with pytest.raises(ValueError, match="collides"):  # the names are checked on every process
        extras.write_extra("config.yaml", "x")
