"""``benchmarks/studies/baselines.py`` on tiny made-up data: each kind it records reads its config through the task
pipeline and appends one entry per row with the records' metadata; a recorded spec is skipped, ``--rerun``
computes it again; span corruption scores the tokens of the config's own tokenizer, or of a run directory's."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from .scripts import load_script


@pytest.fixture()
def script(monkeypatch):
    return load_script("studies/baselines", monkeypatch)


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _classification(tmp_path: Path) -> Path:
    """A tiny classifier config: training labels pos x3, neg x2; valid pos, neg, neg, neg; test pos, pos, neg."""
    train = _jsonl(tmp_path / "train.jsonl", [{"text": f"w{i}", "label": lab}
                                              for i, lab in enumerate(["pos", "neg", "pos", "neg", "pos"])])
    valid = _jsonl(tmp_path / "valid.jsonl", [{"text": "v", "label": lab} for lab in ["pos", "neg", "neg", "neg"]])
    test = _jsonl(tmp_path / "test.jsonl", [{"text": "t", "label": lab} for lab in ["pos", "pos", "neg"]])
    config = tmp_path / "cls.yaml"
    config.write_text(f"task:\n  type: classification\n  train: {train}\n  valid: {valid}\n  test: {test}\n"
                      "  tokenizer: word\n  max_len: 8\ntrain:\n  batch_size: 2\n", encoding="utf-8")
    return config


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_majority_baseline_is_recorded_once_with_its_metadata(script, tmp_path, monkeypatch):
    config = _classification(tmp_path)
    monkeypatch.setattr(script, "specs", lambda: [script.Spec("toy", "toy_table", ("majority",), "majority",
                                                              str(config))])
    record = tmp_path / "baselines.jsonl"
    assert script.main(["--record", str(record)]) == 0
    [entry] = _lines(record)
    assert (entry["table"], entry["row"], entry["kind"], entry["label"], entry["tied"]) == (
        "toy_table", "majority", "majority", "pos", ["pos"])
    assert entry["valid"] == {"accuracy": 0.25, "examples": 4} and entry["chance"] == 0.5
    assert entry["test"]["accuracy"] == pytest.approx(2 / 3) and entry["train_examples"] == 5
    assert entry["command"] == "python benchmarks/studies/baselines.py --specs toy"
    assert {"date", "machine", "commit", "threads", "shared_cpu", "load_1min", "wall_s"} <= set(entry)
    assert script.main(["--record", str(record)]) == 0  # recorded: skipped
    assert len(_lines(record)) == 1
    assert script.main(["--record", str(record), "--rerun", "--shared-cpu"]) == 0
    assert len(_lines(record)) == 2 and _lines(record)[1]["shared_cpu"] is True


def test_a_tie_keeps_every_tied_labels_accuracy(script, tmp_path, monkeypatch):
    config = _classification(tmp_path)
    _jsonl(tmp_path / "train.jsonl", [{"text": "x", "label": lab} for lab in ["neg", "pos", "pos", "neg"]])
    monkeypatch.setattr(script, "specs", lambda: [script.Spec("toy", "t", ("majority",), "majority", str(config))])
    record = tmp_path / "b.jsonl"
    script.main(["--record", str(record)])
    [entry] = _lines(record)
    assert (entry["label"], entry["tied"]) == ("neg", ["neg", "pos"])
    assert entry["valid"]["tied_accuracy"] == {"neg": 0.75, "pos": 0.25}


def test_the_periodic_validation_sample_is_the_trainers(script, tmp_path, monkeypatch):
    # train.eval_steps=1 of batch 2: the evenly spaced items 0 and 2 of the 4 (pos, neg): 1 of 2 right
    config = _classification(tmp_path)
    monkeypatch.setattr(script, "specs", lambda: [script.Spec("toy", "t", ("majority",), "majority", str(config),
                                                              ("train.eval_steps=1",))])
    record = tmp_path / "b.jsonl"
    script.main(["--record", str(record)])
    assert _lines(record)[0]["valid"] == {"accuracy": 0.5, "examples": 2}


def _span_config(tmp_path: Path) -> Path:
    words = "the cat sat on the mat and the dog ran to the cat . "
    (tmp_path / "train.txt").write_text(words * 40, encoding="utf-8")
    (tmp_path / "valid.txt").write_text(words * 6, encoding="utf-8")
    config = tmp_path / "span.yaml"
    config.write_text(f"task:\n  type: span_corruption\n  train: {tmp_path / 'train.txt'}\n"
                      f"  valid: {tmp_path / 'valid.txt'}\n  tokenizer: char\n  max_len: 16\n"
                      "  options: {num_sentinels: 8}\n", encoding="utf-8")
    return config


def test_span_corruption_records_both_losses_on_the_configs_tokens(script, tmp_path, monkeypatch):
    config = _span_config(tmp_path)
    spec = script.Spec("span", "pre", ("unigram", "sentinels"), "span_corruption", str(config))
    monkeypatch.setattr(script, "specs", lambda: [spec])
    record = tmp_path / "b.jsonl"
    script.main(["--record", str(record)])
    unigram, sentinels = _lines(record)
    assert (unigram["row"], sentinels["row"]) == ("unigram", "sentinels")
    assert unigram["tokenizer"] == "built from the config" and unigram["tokenizer_kind"] == "char"
    # knowing where the sentinels go can only help: the sentinels' share of the targets costs nothing
    assert 0 < sentinels["valid"]["log_perplexity"] < unigram["valid"]["log_perplexity"] < math.log(40)
    # the same numbers as the library's on the pipeline's own datasets: estimated on train, scored on valid
    from synthformer.tasks.metrics.baselines import span_corruption_baselines, target_tokens
    from synthformer.tasks.run.config import load_run_config
    from synthformer.tasks.run.data import prepare_data

    data = prepare_data(load_run_config(config))
    tok, valid = data.tokenizer, target_tokens(data.datasets["valid"])
    expected = span_corruption_baselines(target_tokens(data.datasets["train"]), valid, tok.vocab_size,
                                         tok.sentinel_ids, tok.eos_id)
    assert unigram["valid"] == {"log_perplexity": pytest.approx(expected.unigram), "tokens": valid.numel()}
    assert sentinels["valid"]["log_perplexity"] == pytest.approx(expected.sentinels)
    assert unigram["sentinel_share"] == pytest.approx(expected.sentinel_share)


def test_span_corruption_takes_a_run_directorys_tokenizer_and_config(script, tmp_path, monkeypatch):
    from synthformer.tasks.run.config import load_run_config
    from synthformer.tasks.run.data import prepare_data
    from synthformer.train import RunDir

    config = _span_config(tmp_path)
    run = load_run_config(config)
    tokenizer = prepare_data(run, splits=("train",)).tokenizer
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(config.read_text(encoding="utf-8"), encoding="utf-8")
    tokenizer.save(RunDir(run_dir).tokenizer_path)
    spec = script.Spec("span", "pre", ("unigram", "sentinels"), "span_corruption", "unused.yaml")
    monkeypatch.setattr(script, "specs", lambda: [spec])
    record = tmp_path / "b.jsonl"
    script.main(["--record", str(record), "--from-run", f"span={run_dir}"])
    entry = _lines(record)[0]
    assert entry["tokenizer"] == str(RunDir(run_dir).tokenizer_path)
    assert (entry["config"], entry["overrides"]) == (str(run_dir / "config.yaml"), [])
    assert entry["command"] == f"python benchmarks/studies/baselines.py --specs span --from-run span={run_dir}"


def test_an_unknown_spec_is_refused(script, capsys):
    with pytest.raises(SystemExit):
        script.main(["--specs", "nope"])
    assert "unknown specs ['nope']" in capsys.readouterr().err


def test_every_shipped_spec_names_a_kind_and_a_config_that_exist(script):
    every = script.specs()
    assert len({s.key for s in every}) == len(every)
    for s in every:
        assert s.kind in script.KINDS and (script.ROOT / s.config).is_file(), s
    tables = {s.table for s in every}
    assert tables == {"imdb", "t5arch_pretrain", "t5arch_glue", "t5arch_superglue", "lra", "lra_cpu", "study_shk",
                      "multi30k", "table3", "probe"}
