"""The SuperGLUE mixture of ``text_to_text``: eval-only diagnostics, GLUE + SuperGLUE as one mixture, a prepared
corpus, and training, evaluation and decoding end to end through the CLI on tiny data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synthformer.cli.main import main
from synthformer.common.config import ConfigError, from_dict
from synthformer.data.prepared import PreparedCorpus
from synthformer.tasks import RunConfig, TaskConfig, prepare_data
from synthformer.tasks.prepared import prepare_corpus

from .helpers import superglue_dir, t2t_config, write_yaml

ALL = ["boolq", "cb", "wic", "multirc", "record", "wsc", "super_glue_rte", "axb", "axg"]  # all but COPA


def test_superglue_mixture_trains_on_tasks_with_a_training_split(tmp_path: Path) -> None:
    cfg = t2t_config(tmp_path, train=str(superglue_dir(tmp_path)), options={"tasks": ALL, "mixing_cap": 3})
    data = prepare_data(from_dict(RunConfig, cfg))
    sizes = data.raw.info["train_sizes"]
    # MultiRC: 3 options x 2 paragraphs; ReCoRD: one per answer; WSC: only the 2 correct referents of 4
    assert sizes == {"boolq": 4, "cb": 3, "wic": 2, "multirc": 6, "record": 4, "wsc": 2, "super_glue_rte": 4}
    capped = {"boolq": 3, "cb": 3, "wic": 2, "multirc": 3, "record": 3, "wsc": 2, "super_glue_rte": 3}
    assert data.raw.info["mixing_rates"] == pytest.approx({n: c / 19 for n, c in capped.items()})
    groups = data.raw.info["valid_groups"]
    assert groups.count("axb") == 2 and groups.count("axg") == 2 and groups.count("wsc") == 4  # every dev example
    record = next(e for e in data.raw.splits["valid"] if e.task == "record")
    assert record.answers == ("Paris",) and record.source.startswith("record query: @placeholder is a city.")
    # the majority reference: BoolQ, WiC, RTE 50 (ties: the first class); CB (33.3 + 16.7) / 2; MultiRC "True":
    # F1a 80, EM 2 of 4 questions -> 65; WSC "names no candidate" 50; ReCoRD none, 0; the diagnostics left out
    run = from_dict(RunConfig, cfg)
    assert run.task.task_type.baseline(run, data) == ("majority label per task", pytest.approx(290 / 7))


def test_glue_and_superglue_in_one_mixture(tmp_path: Path) -> None:
    cfg = t2t_config(tmp_path, options={"tasks": ["rte", "sst2", "cb", "multirc"], "mixing_cap": 24,
                                        "super_glue_dir": str(superglue_dir(tmp_path))})
    run = from_dict(RunConfig, cfg)
    data = prepare_data(run)
    assert data.raw.info["train_sizes"] == {"rte": 20, "sst2": 32, "cb": 3, "multirc": 6}
    assert data.raw.info["mixing_rates"] == pytest.approx({"rte": 20 / 53, "sst2": 24 / 53, "cb": 3 / 53,
                                                           "multirc": 6 / 53})
    assert run.task.task_type.comparison_metric(run.task) == "glue_average"


@pytest.mark.parametrize(("options", "message"), [
    ({"tasks": ["axb", "axg"]}, "axb, axg have no training split"),
    ({"tasks": ["cb"], "super_glue_dir": 3}, "task.options.super_glue_dir: expected the path"),
])
def test_superglue_config_errors(tmp_path: Path, options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_dict(RunConfig, t2t_config(tmp_path, train=str(tmp_path), options=options))


def test_prepare_writes_a_split_per_task_and_a_prepared_run_scores_from_the_records(tmp_path: Path) -> None:
    root = superglue_dir(tmp_path)
    tasks = ["multirc", "wsc", "super_glue_rte", "axg"]
    task = from_dict(TaskConfig, {"type": "text_to_text", "train": str(root), "options": {"tasks": tasks},
                                  "tokenizer": "char"})
    manifest = prepare_corpus(task, tmp_path / "out").manifest
    assert manifest["groups"]["train"] == {n: f"train.{n}" for n in tasks[:3]}  # AX-g: dev only
    assert manifest["groups"]["valid"] == {n: f"valid.{n}" for n in tasks}
    corpus = PreparedCorpus.open(tmp_path / "out")
    wsc = corpus.split("train.wsc")
    assert len(wsc) == 2 and corpus.tokenizer().decode(wsc.document(0, "source")) == (
        "wsc: Ann told Bea that *she* won.")
    cfg = t2t_config(tmp_path, options={"tasks": tasks}, prepared=str(tmp_path / "out"))
    del cfg["task"]["train"], cfg["task"]["tokenizer"]
    prepared = prepare_data(from_dict(RunConfig, cfg))
    memory = prepare_data(from_dict(RunConfig, t2t_config(tmp_path, train=str(root), options={"tasks": tasks})))
    valid = prepared.datasets["valid"]
    assert [(e.task, e.label, e.group) for e in valid.raw_examples] == [
        (e.task, e.label, e.group) for e in memory.raw.splits["valid"]]
    assert valid.groups == memory.raw.info["valid_groups"]


def test_superglue_trained_evaluated_and_decoded_through_the_cli(tmp_path: Path, capsys) -> None:
    cfg = t2t_config(tmp_path, train=str(superglue_dir(tmp_path)), options={"tasks": ALL})
    cfg["eval"]["train_decode_examples"] = 0  # training reports the loss only; `synthformer eval` decodes everything
    config = write_yaml(tmp_path / "sg.yaml", cfg)
    assert main(["train", str(config), "--run-dir", str(tmp_path / "run"), "--no-progress", "-q"]) == 0
    assert main(["eval", str(tmp_path / "run"), "-q"]) == 0
    out = capsys.readouterr().out
    metrics = json.loads((tmp_path / "run" / "eval_valid.json").read_text())["metrics"]
    keys = ["boolq_accuracy", "cb_accuracy", "cb_f1_macro", "wic_accuracy", "multirc_f1a", "multirc_exact_match",
            "record_f1", "record_exact_match", "wsc_accuracy", "super_glue_rte_accuracy", "axb_matthews_corrcoef",
            "axg_accuracy", "axg_gender_parity", "super_glue_average", "super_glue_missing"]
    for key in keys:
        assert key in metrics and key in out, key
    assert metrics["super_glue_missing"] == "copa"
    per_task = [metrics["boolq_accuracy"], (metrics["cb_accuracy"] + metrics["cb_f1_macro"]) / 2,
                metrics["wic_accuracy"], (metrics["multirc_f1a"] + metrics["multirc_exact_match"]) / 2,
                (metrics["record_f1"] + metrics["record_exact_match"]) / 2, metrics["wsc_accuracy"],
                metrics["super_glue_rte_accuracy"]]  # the diagnostics stay out of the average
    assert metrics["super_glue_average"] == pytest.approx(sum(per_task) / 7)
    hypotheses = (tmp_path / "run" / "eval_valid_hypotheses.txt").read_text(encoding="utf-8").splitlines()
    assert len(hypotheses) == 4 + 3 + 2 + 6 + 4 + 4 + 4 + 2 + 2  # every dev example decoded (ReCoRD: per query)
    assert main(["generate", str(tmp_path / "run"), "--prompt", "wsc: Ann told Bea that *she* won.",
                 "--max-new-tokens", "4", "-q"]) == 0
    assert capsys.readouterr().out.count("\n") == 1  # one answer line (6 steps may not teach it a word yet)
