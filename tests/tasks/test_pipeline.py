"""The glue end to end (in process): config -> data -> tokenizer -> model -> trainer -> run dir -> eval / generate."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from synthformer.common.config import from_dict
from synthformer.data import load_tokenizer
from synthformer.tasks import (
    RunConfig,
    evaluate_run,
    generate_texts,
    load_run,
    majority_baseline,
    prepare_data,
    train_run,
    unigram_bits_per_token,
)
from synthformer.train import RunError

from .helpers import classification_config, lm_config, seq2seq_config


def test_lm_run_end_to_end(tmp_path: Path) -> None:
    run = from_dict(RunConfig, lm_config(tmp_path, eval_steps=0))  # evaluate the whole valid split
    result = train_run(run, tmp_path / "run")
    run_dir = tmp_path / "run"
    for name in ("config.yaml", "metrics.jsonl", "synthformer_tokenizer.json", "model_config.json"):
        assert (run_dir / name).is_file(), name
    m = result.metrics
    # a character LM: bits per character is the loss in bits
    assert m["eval_bits_per_character"] == pytest.approx(m["eval_loss"] / math.log(2))
    assert m["eval_perplexity"] == pytest.approx(math.exp(m["eval_loss"]))
    assert result.steps == 6 and result.tokens_seen == 6 * 8 * 16
    # the saved model config has the tokenizer's vocabulary and the config's kind
    saved = json.loads((run_dir / "model_config.json").read_text())
    assert saved["vocab_size"] == load_tokenizer(run_dir).vocab_size and saved["decoder_kind"] == "R+V"

    loaded = load_run(run_dir)
    assert loaded.step == 6 and not loaded.model.training
    report = evaluate_run(run_dir)  # no test split: valid
    assert report.split == "valid"
    assert report.metrics["loss"] == pytest.approx(m["eval_loss"], rel=1e-5)  # same checkpoint, same numbers
    assert json.loads((run_dir / "eval_valid.json").read_text())["metrics"]["loss"] == report.metrics["loss"]

    out = generate_texts(loaded, ["def "], max_new_tokens=10, seed=1)
    assert len(out) == 1 and len(out[0].output) == 10  # a character per token
    again = generate_texts(loaded, ["def "], max_new_tokens=10, seed=1)
    assert again[0].output == out[0].output  # seeded
    greedy = generate_texts(loaded, ["def "], max_new_tokens=100, temperature=0)  # capped at the context
    assert len(greedy[0].output) == 16 - 4 + 1


def test_seq2seq_run_end_to_end(tmp_path: Path) -> None:
    cfg = seq2seq_config()
    cfg["eval"]["metrics"] = ["loss", "exact_match", "chrf", "bleu", "rouge"]
    run = from_dict(RunConfig, cfg)
    result = train_run(run, tmp_path / "run")
    assert {"eval_loss", "eval_exact_match", "eval_chrf", "eval_chrf_signature", "eval_bleu", "eval_bleu_signature",
            "eval_rouge1", "eval_rouge2", "eval_rougeL"} <= set(result.metrics)
    assert result.metrics["eval_chrf_signature"].startswith("nrefs:1")
    report = evaluate_run(tmp_path / "run", beam=2)
    assert report.split == "test" and report.metrics["beam"] == 2 and report.metrics["decoded"] == 8
    hyps = (tmp_path / "run" / "eval_test_hypotheses.txt").read_text().splitlines()
    assert len(hyps) == 8 and hyps == report.hypotheses
    loaded = load_run(tmp_path / "run")
    out = generate_texts(loaded, ["1234", "56"], beam=1)
    assert [o.input for o in out] == ["1234", "56"]
    assert all(set(o.output) <= set("0123456789+\ufffd") for o in out)


def test_classification_run_end_to_end(tmp_path: Path) -> None:
    run = from_dict(RunConfig, classification_config(tmp_path))
    result = train_run(run, tmp_path / "run")
    assert 0.0 <= result.metrics["eval_accuracy"] <= 1.0
    assert json.loads((tmp_path / "run" / "labels.json").read_text()) == ["0", "1"]
    report = evaluate_run(tmp_path / "run", "test")
    assert report.metrics["examples"] == 12
    out = generate_texts(load_run(tmp_path / "run"), ["a gorgeous movie", "a dull mess"])
    assert all(o.output in ("0", "1") and 0.5 <= o.score <= 1.0 for o in out)


def test_subword_lm_spreads_bits_over_characters(tmp_path: Path) -> None:
    cfg = lm_config(tmp_path, steps=2, eval_every=0, eval_steps=0)
    cfg["task"].update(tokenizer="bpe", vocab_size=300)
    run = from_dict(RunConfig, cfg)
    result = train_run(run, tmp_path / "run")
    data = prepare_data(run, load_tokenizer(tmp_path / "run"), splits=("valid",))
    ratio = data.chars_per_token["valid"]
    assert ratio > 1.5  # BPE merges characters
    expected = result.metrics["eval_loss"] / math.log(2) / ratio
    assert result.metrics["eval_bits_per_character"] == pytest.approx(expected, rel=1e-3)


def test_saved_config_works_from_another_directory(tmp_path: Path, monkeypatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    cfg = lm_config(work, steps=2, eval_every=0)
    cfg["task"]["train"] = "corpus.txt"  # relative to the working directory
    train_run(from_dict(RunConfig, cfg), "run")
    monkeypatch.chdir(tmp_path)
    saved = load_run(work / "run").config
    assert saved.task.train == str(work / "corpus.txt")
    assert evaluate_run(work / "run").metrics["loss"] > 0


def test_run_dir_is_never_overwritten_without_asking(tmp_path: Path) -> None:
    run = from_dict(RunConfig, lm_config(tmp_path, steps=2, eval_every=0))
    run_dir = tmp_path / "run"
    train_run(run, run_dir)
    evaluate_run(run_dir)
    before = (run_dir / "metrics.jsonl").read_text()
    with pytest.raises(RunError, match=r"already holds a run .*--resume.*--overwrite"):
        train_run(run, run_dir)
    assert (run_dir / "metrics.jsonl").read_text() == before and (run_dir / "eval_valid.json").exists()
    with pytest.raises(RunError, match="contradict"):
        train_run(run, run_dir, resume=True, overwrite=True)
    train_run(run, run_dir, overwrite=True)
    assert not (run_dir / "eval_valid.json").exists()  # the old run's evaluation is gone with it


def test_resume_continues_and_refuses_a_different_model(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    short = from_dict(RunConfig, lm_config(tmp_path, steps=3, eval_every=0))
    train_run(short, run_dir)
    longer = from_dict(RunConfig, lm_config(tmp_path, steps=6, eval_every=0))
    result = train_run(longer, run_dir, resume=True)
    assert result.steps == 3 and load_run(run_dir).step == 6
    steps = [json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert steps == sorted(steps) and steps[-1] == 6
    wider = lm_config(tmp_path, steps=9)
    wider["model"]["d_model"] = 32
    with pytest.raises(RunError, match=r"with a changed config: model\.d_model: 16 -> 32; .* may change on resume"):
        train_run(from_dict(RunConfig, wider), run_dir, resume=True)
    other_lr = lm_config(tmp_path, steps=9, lr=0.1)
    with pytest.raises(RunError, match=r"with a changed config: train\.lr: 0\.003 -> 0\.1; "):
        train_run(from_dict(RunConfig, other_lr), run_dir, resume=True)
    assert load_run(run_dir).step == 6  # refused before anything was trained or written
    sharded = lm_config(tmp_path, steps=7, eval_every=0)
    sharded["train"]["distributed"] = "fsdp"  # the same checkpoint files: a run may switch (one process here)
    assert train_run(from_dict(RunConfig, sharded), run_dir, resume=True).steps == 1


def test_load_run_errors(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="run directory not found"):
        load_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunError, match="not a synthformer run directory"):
        load_run(tmp_path / "empty")


def test_baselines() -> None:
    # uniform over 2 of 4 ids with add-one smoothing: p = 3/8 for each seen id
    train = torch.tensor([0, 1] * 2)
    assert unigram_bits_per_token(train, torch.tensor([0, 1]), 4) == pytest.approx(-math.log2(3 / 8))
    assert majority_baseline(["a", "a", "b"], ["a", "b", "b", "b"]) == pytest.approx(0.25)
