"""The baseline rows the docs' tables get from ``benchmarks/results/baselines.jsonl`` (``doc_tables/baselines.py`` and
the builders that call it), from tiny made-up records: each row under its table's headers, the line naming its
record, and the command when it is not recorded yet. (SuperGLUE's and LRA's: ``test_doc_tables_results.py``.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from .test_doc_tables_results import _load, _tables  # modules and the registry reading records under tmp_path

META = {"date": "2026-11-28 05:00 UTC", "commit": "abc1234", "machine": "AMD EPYC, 2 CPUs", "threads": 1,
        "shared_cpu": True}


@pytest.fixture()
def baselines(monkeypatch, tmp_path):
    return _load("doc_tables/baselines", monkeypatch, tmp_path)


def _write(tmp_path: Path, name: str, entries: list[dict]) -> None:
    with open(tmp_path / "results" / f"{name}.jsonl", "a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps({**META, **e}) + "\n" for e in entries))


def test_a_row_goes_under_its_headers_before_the_tables_caption(baselines):
    table = "| model | a | b |\n|---|---|---|\n| V | 1 | 2 |\n\ncaption"
    assert baselines.insert_row(table, {"b": "9"}, "base") == (
        "| model | a | b |\n|---|---|---|\n| V | 1 | 2 |\n| base |  | 9 |\n\ncaption")


def test_the_imdb_table_ends_with_the_majority_row_and_names_its_record(baselines, monkeypatch, tmp_path):
    _load("doc_tables/results", monkeypatch, tmp_path)
    imdb = _tables(monkeypatch, tmp_path)["imdb"]
    _write(tmp_path, "imdb", [{"table": "imdb", "row": "V", "parameters": 10, "steps": 100, "train_s": 50.0,
                               "test": {"accuracy": 0.8}, "valid": {"eval_accuracy": 0.9}}])
    assert imdb().endswith(
        "Baseline not recorded yet: `python benchmarks/studies/baselines.py --tables imdb`.")
    _write(tmp_path, "baselines", [{"table": "imdb", "row": "majority", "test": {"accuracy": 0.5},
                                    "valid": {"accuracy": 0.4928}}])
    lines = imdb().splitlines()
    assert lines[3] == "| majority class (no model) | - | 50.00% | 49.28% | - | - | - |"
    assert "Baseline record: `results/baselines.jsonl` (1 row; 2026-11-28 05:00 UTC; commit abc1234;" in lines[-1]


def test_the_pretraining_table_gets_both_losses_per_tokenizer(baselines, monkeypatch, tmp_path):
    _load("doc_tables/t5", monkeypatch, tmp_path)
    pretrain = _tables(monkeypatch, tmp_path)["t5arch-pretrain"]
    model = {"table": "t5arch_pretrain", "parameters": 5, "steps": 10, "train_s": 60.0}
    valid = {"log_perplexity": 4.9, "noise_density": 0.15, "mean_span_length": 3.0}
    _write(tmp_path, "t5arch_pretrain", [  # V scored another tokenizer's tokens; the earlier setting the same
        {**model, "row": "V", "valid": {**valid, "tokens": 22057}, "command": "synthformer train configs/x.yaml"},
        {**model, "row": "transformer-V", "valid": {**valid, "tokens": 21700},
         "command": "synthformer train configs/y.yaml --run-dir r"}])
    common = {"table": "t5arch_pretrain", "config": "configs/x.yaml", "sentinel_share": 0.3}
    _write(tmp_path, "baselines", [
        {**common, "row": "sentinels", "overrides": ["a=b"], "valid": {"log_perplexity": 4.7444, "tokens": 22155}},
        {**common, "row": "unigram", "overrides": ["a=b"], "valid": {"log_perplexity": 6.0140, "tokens": 22155}},
        {**common, "row": "transformer-V-unigram", "config": "configs/y.yaml", "overrides": [],
         "valid": {"log_perplexity": 6.2143, "tokens": 21700}}])
    text = pretrain()
    lines = text.splitlines()
    # the rows in the table's order (unigram first), each loss to three decimals like the models'
    assert lines[4:7] == ["| unigram of the targets (no model) | - | 6.014 | - | - | - | - | - |",
                          "| sentinels given, unigram otherwise (no model) | - | 4.744 | - | - | - | - | - |",
                          "| unigram of the targets, the earlier setting's BPE | - | 6.214 | - | - | - | - | - |"]
    assert "probability 1 on every sentinel and `</s>` (30% of the target tokens)" in text
    assert ("`configs/x.yaml a=b` (22,155 valid target tokens; its rows scored 22,057: another tokenizer than the "
            "current code's); `configs/y.yaml` (21,700 valid target tokens, as its rows)") in text
    assert lines[-1].startswith("Baselines, in nats") and "Baseline record: `results/baselines.jsonl` (3 rows;" in text


def test_the_glue_majority_row_comes_from_the_record(baselines, monkeypatch, tmp_path):
    _load("doc_tables/t5", monkeypatch, tmp_path)
    glue = _tables(monkeypatch, tmp_path)["t5arch-glue"]
    _write(tmp_path, "t5arch_glue", [{"table": "t5arch_glue", "row": "V", "train_s": 120.0, "valid": {
        "glue_average": 40.0, "rte_accuracy": 60.0, "rte_invalid": 3, "sst2_accuracy": 70.0}}])
    _write(tmp_path, "baselines", [{"table": "t5arch_glue", "row": "majority", "valid": {
        "glue_average": 51.8, "rte_accuracy": 52.7, "sst2_accuracy": 50.9}}])
    lines = glue().splitlines()
    assert lines[0] == "| model | GLUE avg | SST-2 | RTE | invalid | of them unspellable | training time |"
    # V's answers not counted for unknown pieces ("-"); the majority row answers label strings only (0)
    assert lines[2:4] == ["| T5 (V) | 40.0 | 70.0 | 60.0 | 3 | - | 2.0 min |",
                          "| majority label | 51.8 | 50.9 | 52.7 | 0 | 0 | - |"]
    assert "Baseline record: `results/baselines.jsonl` (1 row;" in lines[-3]
    assert lines[-1].startswith('"of them unspellable": answers holding a piece the vocabulary could not spell')


#: One row of a study's results.json (the shape ``synthformer study`` writes).
_ROW = {"variant": "V", "label": "Vanilla (V)", "seeds": 3, "valid": [0.98, 0.99, 1.0], "valid_mean": 0.99,
        "valid_std": 0.01, "test": [0.97, 0.98, 0.99], "test_mean": 0.98, "test_std": 0.01, "valid_loss_mean": 0.1,
        "parameters": 100, "steps_per_second": 5.0, "wall_seconds": 3.0, "reference": None, "diff": None,
        "p_value": None, "significant": None}


def _study(tmp_path: Path, name: str, metric: str) -> None:
    folder = tmp_path / "docs" / "figures" / f"study-{name}"
    folder.mkdir(parents=True)
    row = {**_ROW, "seeds": 1, "valid": [2.5], "valid_mean": 2.5, "valid_std": None, "test": [3.0],
           "test_mean": 3.0, "test_std": None}
    (folder / "results.json").write_text(json.dumps({"metric": metric, "rows": [row]}), encoding="utf-8")
    (folder / "provenance.json").write_text(json.dumps({
        "date": "2026-11-25", "results_committed": "2026-11-25 12:00 UTC", "commit": "f263a76 x",
        "machine": "AMD EPYC", "threads": 1, "shared_cpu": True}), encoding="utf-8")


def test_the_studies_get_the_unigram_and_the_copied_source(baselines, monkeypatch, tmp_path):
    builders = _load("doc_tables/results", monkeypatch, tmp_path)
    monkeypatch.setattr(builders, "FIGURES", tmp_path / "docs" / "figures")
    _study(tmp_path, "shk", "bits_per_character")
    _study(tmp_path, "t8", "bleu")
    _write(tmp_path, "baselines", [
        {"table": "study_shk", "row": "unigram", "valid": {"bits_per_character": 4.829146}},
        {"table": "multi30k", "row": "copy-source", "valid": {"bleu": 0.1236, "examples": 200},
         "test": {"bleu": 0.482, "examples": 1000}}])
    shk = builders.study_table("shk").splitlines()
    assert shk[0].startswith("| model | seeds | valid bits/char |")
    assert shk[3] == "| unigram (no model) |  | 4.8291 |" + "  |" * (shk[0].count("|") - 4) and shk[4] == ""
    assert shk[-1].startswith("Baseline: the training text's add-one unigram, on the whole validation split. "
                              "Baseline record: `results/baselines.jsonl` (1 row;")
    t8 = builders.study_table("t8").splitlines()
    header = [c.strip() for c in t8[0].strip("|").split("|")]
    row = [c.strip() for c in t8[3].strip("|").split("|")]
    assert dict(zip(header, row, strict=True))["valid BLEU"] == "0.12" and row[header.index("test BLEU")] == "0.48"
    assert row[0] == "source copied (no model)"
    assert "(the first 200 validation sentences, as the runs validate, and the whole test set)" in t8[-1]


def test_a_probe_table_gets_a_majority_row_per_length(baselines, monkeypatch, tmp_path):
    builders = _load("doc_tables/results", monkeypatch, tmp_path)
    rows = [_ROW]
    _write(tmp_path, "probe", [{"table": "probe", "row": f"pair-{n}", "task": "pair", "length": n, "rows": rows,
                                "metric": "accuracy", "runs_done": 1, "runs_total": 1} for n in (16, 32)])
    _write(tmp_path, "baselines", [{"table": "probe", "row": f"pair-{n}-majority", "chance": 0.5,
                                    "valid": {"accuracy": acc}, "test": {"accuracy": 0.488}}
                                   for n, acc in ((16, 0.498), (32, 0.5))])
    lines = builders.probe_table("pair").splitlines()
    assert lines[4] == "| majority class (no model), max_len=16 |  | 49.80% | 48.80% |  |  |  |  |  |"
    assert lines[5].startswith("| majority class (no model), max_len=32 |  | 50.00% | 48.80% |")
    assert lines[-1].startswith("Baseline: the most frequent training label (chance 50.00%). Baseline record:")


def test_table3_gets_lead3_and_the_most_frequent_reply_with_differences_to_v(baselines, monkeypatch, tmp_path):
    builders = _load("doc_tables/results", monkeypatch, tmp_path)
    table3 = sys.modules["studies.table3"]
    record = tmp_path / "t3.jsonl"
    record.write_text("".join(json.dumps({"dataset": d, "kind": "V", "metrics": m}) + "\n" for d, m in (
        ("samsum", {"rouge1": 27.0, "rouge2": 7.0, "rougeL": 23.0, "rougeLsum": 25.0}),
        ("personachat", {"bleu_1": 14.0, "bleu_4": 1.8, "rouge_l": 14.8, "meteor": 6.4, "cider": 15.0}))),
        encoding="utf-8")
    monkeypatch.setattr(table3, "DEFAULT_RECORD", record)
    monkeypatch.setattr(table3, "CONFIGS", {"samsum": "x", "personachat": "y"})
    monkeypatch.setattr(table3, "KINDS", ("V",))
    _write(tmp_path, "baselines", [
        {"table": "table3", "row": "samsum-lead3", "test": {"rouge1": 31.0, "rouge2": 8.5, "rougeL": 24.0,
                                                              "rougeLsum": 29.0}},
        {"table": "table3", "row": "personachat-frequent-reply", "reply": "do you have a job ?", "reply_count": 3,
         "train_replies": 6315, "test": {"bleu_1": 7.5, "bleu_4": 0.6, "rouge_l": 11.9, "meteor": 4.8,
                                         "cider": 9.0}}])
    text = builders.table3_results()
    assert "| Lead-3 (no model) | 31.00 (+4.00) | 8.50 (+1.50) | 24.00 (+1.00) | 29.00 (+4.00) |" in text
    assert ("| Most frequent training reply (no model) | 7.50 (-6.50) | 0.60 (-1.20) | 11.90 (-2.90) | "
            "4.80 (-1.60) | 9.00 (-6.00) |") in text
    assert 'personachat: "do you have a job ?" (3 of 6,315 training replies)' in text
    assert "Baseline record: `results/baselines.jsonl` (2 rows;" in text.splitlines()[-1]
