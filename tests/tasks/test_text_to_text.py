"""The ``text_to_text`` task type (T5-style GLUE finetuning) and the pretrain -> finetune pipeline through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synthformer.cli.main import main
from synthformer.common.config import ConfigError, from_dict
from synthformer.tasks import RunConfig, evaluate_run, generate_texts, load_run, prepare_data, train_run
from synthformer.tasks.suites.glue.text_to_text import mixture

from .helpers import LM_TEXT, glue_dir, pretrained_finetuning_yaml, t2t_config


def test_mixture_is_examples_proportional_with_a_cap() -> None:
    tasks = {"big": list(range(1000)), "mid": list(range(300)), "small": list(range(100))}
    mixed, rates = mixture(tasks, cap=400, seed=0)
    assert len(mixed) == 400 + 300 + 100
    assert rates == pytest.approx({"big": 0.5, "mid": 0.375, "small": 0.125})
    assert mixed != sorted(mixed)  # interleaved
    again, _ = mixture(tasks, cap=400, seed=0)
    assert again == mixed
    with pytest.raises(ConfigError, match="mixing_cap"):
        mixture(tasks, cap=0)


def test_text_to_text_data_and_rates(tmp_path: Path) -> None:
    run = from_dict(RunConfig, t2t_config(tmp_path, options={"tasks": ["rte", "sst2"], "mixing_cap": 24}))
    data = prepare_data(run)
    train = data.raw.splits["train"]
    assert len(train) == 20 + 32  # every example of every task ...
    assert len(data.datasets["train"]) == 20 + 24  # ... of which an epoch draws SST-2's 32 capped at 24
    assert data.raw.info["mixing_rates"] == pytest.approx({"rte": 20 / 44, "sst2": 24 / 44})
    schedule = data.datasets["train"].schedule  # SST-2's capped share shows new examples each epoch:
    epochs = [{schedule.locate(slot, epoch) for slot in range(20, 44)} for epoch in range(3)]
    assert {task for task, _ in epochs[0]} == {1} and len(epochs[0] | epochs[1]) == 32  # all 32 over two epochs
    assert epochs[0] != epochs[1] != epochs[2]
    example = next(e for e in train if e.task == "rte")
    assert example.source.startswith("rte sentence1: ") and " sentence2: " in example.source
    assert example.target in ("entailment", "not_entailment")
    assert {e.target for e in train if e.task == "sst2"} == {"negative", "positive"}
    assert len(data.raw.splits["valid"]) == 16 and not run.task.has_test_split


def test_text_to_text_run_reports_every_task(tmp_path: Path) -> None:
    result = train_run(from_dict(RunConfig, t2t_config(tmp_path)), tmp_path / "run")
    m = result.metrics
    for key in ("eval_loss", "eval_rte_accuracy", "eval_rte_invalid", "eval_sst2_accuracy", "eval_glue_average"):
        assert key in m, key
    assert 0 <= m["eval_rte_accuracy"] <= 100 and m["eval_glue_average"] == pytest.approx(
        (m["eval_rte_accuracy"] + m["eval_sst2_accuracy"]) / 2)
    report = evaluate_run(tmp_path / "run")
    assert report.split == "valid" and len(report.hypotheses) == 16
    assert (tmp_path / "run" / "eval_valid_hypotheses.txt").is_file()
    out = generate_texts(load_run(tmp_path / "run"), ["sst2 sentence: a witty movie"], max_new_tokens=12)
    assert len(out) == 1


@pytest.mark.parametrize(("task", "message"), [
    ({"options": {"tasks": ["rtee"]}}, r"task.options.tasks: unknown GLUE task 'rtee' \(did you mean 'rte'\?\)"),
    ({"options": {"tasks": []}}, "non-empty list"),
    ({"options": {"tasks": ["rte", "sst2", "rte"]}}, "rte listed more than once"),
    ({"options": {"mixing_cap": -1}}, "mixing_cap"),
])
def test_text_to_text_config_errors(tmp_path: Path, task: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_dict(RunConfig, t2t_config(tmp_path, **task))


def test_text_to_text_hf_name_must_be_glue(tmp_path: Path) -> None:
    cfg = t2t_config(tmp_path)
    del cfg["task"]["train"]
    cfg["task"]["hf_name"] = "glu"
    with pytest.raises(ConfigError, match=r"'glue' or 'super_glue'.*did you mean 'glue'"):
        from_dict(RunConfig, cfg)


@pytest.mark.usefixtures("restore_logging")
def test_pretrain_then_finetune_through_the_cli(tmp_path: Path, capsys) -> None:
    corpus = tmp_path / "corpus.txt"
    # the labels and prefixes in the pretraining text: a char vocabulary must spell them (the run checks)
    corpus.write_text(LM_TEXT + "The cat sat on the mat. A witty movie. negative positive not_entailment sst2 " * 40,
                      encoding="utf-8")
    ft = pretrained_finetuning_yaml(tmp_path, corpus, "R")
    assert main(["train", str(ft), "--run-dir", str(tmp_path / "ft"), "--no-progress", "-q"]) == 0
    record = json.loads((tmp_path / "ft" / "init_from.json").read_text())
    assert record["newly_initialised"] == [] and record["step"] == 6
    assert main(["eval", str(tmp_path / "ft"), "-q"]) == 0
    out = capsys.readouterr().out
    assert "rte_accuracy" in out and "glue_average" in out
    metrics = json.loads((tmp_path / "ft" / "eval_valid.json").read_text())["metrics"]
    assert 0 <= metrics["rte_invalid"] <= 8 and 0 <= metrics["sst2_invalid"] <= 8  # 8 dev examples each
    assert metrics["glue_average"] == pytest.approx((metrics["rte_accuracy"] + metrics["sst2_accuracy"]) / 2)
    # a finetuning config whose model disagrees with the pretrained one fails with the setting named
    assert main(["train", str(ft), "model.d_model=32", "--run-dir", str(tmp_path / "ft2"), "-q"]) != 0
    assert "model.d_model: pretrained 16, this run 32" in capsys.readouterr().err


def test_mnli_dev_sets_are_scored_separately_and_averaged_once(tmp_path: Path) -> None:
    root = glue_dir(tmp_path)
    (root / "MNLI").mkdir()
    rows = [("A man sleeps.", "A person rests.", "entailment"), ("A dog runs.", "A cat sleeps.", "contradiction"),
            ("Kids play.", "Kids play football.", "neutral")] * 4
    header = "index\tsentence1\tsentence2\tgold_label"
    for split in ("train", "dev_matched", "dev_mismatched"):
        lines = [header] + [f"{i}\t{a}\t{b}\t{c}" for i, (a, b, c) in enumerate(rows)]
        (root / "MNLI" / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = t2t_config(tmp_path, options={"tasks": ["rte", "mnli"]})
    result = train_run(from_dict(RunConfig, cfg), tmp_path / "run")
    m = result.metrics
    assert "eval_mnli_matched_accuracy" in m and "eval_mnli_mismatched_accuracy" in m
    mnli = (m["eval_mnli_matched_accuracy"] + m["eval_mnli_mismatched_accuracy"]) / 2
    assert m["eval_glue_average"] == pytest.approx((m["eval_rte_accuracy"] + mnli) / 2)


def test_superglue_only_tasks_report_their_own_average(tmp_path: Path) -> None:
    root = tmp_path / "superglue" / "BoolQ"
    root.mkdir(parents=True)
    rows = [{"passage": "The sky is blue on clear days.", "question": "is the sky blue", "label": True},
            {"passage": "Fish live in water.", "question": "do fish live on land", "label": False}] * 6
    for split in ("train", "val"):
        (root / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cfg = t2t_config(tmp_path, train=str(tmp_path / "superglue"), options={"tasks": ["boolq"]})
    run = from_dict(RunConfig, cfg)
    assert run.task.task_type.comparison_metric(run.task) == "super_glue_average"
    m = train_run(run, tmp_path / "run").metrics
    assert "eval_glue_average" not in m and m["eval_super_glue_average"] == pytest.approx(m["eval_boolq_accuracy"])


def test_compare_refuses_init_from(tmp_path: Path) -> None:
    from synthformer.tasks.compare import run_comparison

    cfg = t2t_config(tmp_path)
    cfg["init_from"] = str(tmp_path)
    with pytest.raises(ConfigError, match="init_from: compare trains every kind from scratch"):
        run_comparison(from_dict(RunConfig, cfg), ["V"], tmp_path / "cmp")


def test_majority_baseline(tmp_path: Path) -> None:
    run = from_dict(RunConfig, t2t_config(tmp_path))
    data = prepare_data(run)
    description, value = run.task.task_type.baseline(run, data)
    # RTE dev: 4 entailment / 4 not_entailment, the training majority (tie) is class 0, entailment: 50%;
    # SST-2 dev: 4 positive / 4 negative, training tie -> class 0, negative: 50%
    assert description == "majority label per task" and value == pytest.approx(50.0)


def test_hf_glue_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")
    calls = []

    def load_dataset(path: str, name: str, *, split: str, **kwargs) -> object:  # the Hub, replaced by local rows
        calls.append((path, name, split, kwargs))
        n = 12 if split == "train" else 4
        return datasets.Dataset.from_dict({"sentence1": ["A man sleeps."] * n, "sentence2": ["He rests."] * n,
                                           "label": [i % 2 for i in range(n)], "idx": list(range(n))})

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    cfg = t2t_config(tmp_path, options={"tasks": ["rte"]}, hf_name="glue", hf_options={"cache_dir": "/nowhere"})
    del cfg["task"]["train"]
    data = prepare_data(from_dict(RunConfig, cfg))
    assert calls == [("glue", "rte", "train", {"cache_dir": "/nowhere"}),
                     ("glue", "rte", "validation", {"cache_dir": "/nowhere"})]
    assert len(data.raw.splits["train"]) == 12 and len(data.raw.splits["valid"]) == 4
    assert data.raw.splits["valid"][1].target == "not_entailment"


def test_keep_best_is_checked_against_the_configured_tasks_when_the_config_is_read(tmp_path: Path) -> None:
    cfg = t2t_config(tmp_path)
    cfg["train"]["keep_best"] = "glue_average"
    run = from_dict(RunConfig, cfg)
    assert run.task.task_type.training_metric_keys(run) == [
        "loss", "rte_accuracy", "rte_invalid", "sst2_accuracy", "sst2_invalid", "glue_average"]
    cfg["train"]["keep_best"] = "mnli_accuracy"  # a task the run does not train
    with pytest.raises(ConfigError, match=r"reports no 'mnli_accuracy' \(it reports: loss, rte_accuracy"):
        from_dict(RunConfig, cfg)
    cfg["task"]["options"] = {"tasks": ["mnli", "rte"]}  # MNLI's two dev sets are scored separately
    cfg["train"]["keep_best"] = "mnli_mismatched_accuracy"
    run = from_dict(RunConfig, cfg)
    keys = run.task.task_type.training_metric_keys(run)
    assert {"mnli_matched_accuracy", "mnli_mismatched_accuracy", "rte_accuracy", "glue_average"} <= set(keys)
