"""MAD compression: the sequences, the compressor arch (shapes, causality, a tiny overfit), the task type's data,
metrics and baseline, and runs through ``synthformer train`` and ``synthformer study``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import Tensor, nn

from synthformer.cli.main import main
from synthformer.common.config import ConfigError, from_dict
from synthformer.models import ModelConfig, build_model
from synthformer.tasks import RunConfig, TaskConfig, get_task_type, load_raw_data, with_kind
from synthformer.tasks.registry import list_generators
from synthformer.tasks.suites.mixing.mad_compression import (
    DEFAULTS,
    CompressionDataset,
    check_options,
    compression_metrics,
    compression_sequences,
    compression_vocabulary,
    most_frequent_accuracy,
)
from synthformer.tasks.suites.mixing.mad_compressor import Compressor, CompressorConfig

from ...helpers import TINY_MODEL, TINY_TRAIN, write_yaml


def options(**changes: Any) -> dict[str, Any]:
    return check_options({**DEFAULTS, **changes})


def tiny(kind: str = "V", **changes: Any) -> Compressor:
    torch.manual_seed(0)
    config = CompressorConfig(**{"vocab_size": 12, "d_model": 32, "n_heads": 2, "n_layers": 1, "d_ff": 64,
                                 "max_len": 8, "dropout": 0.0, "decoder_kind": kind, **changes})
    return build_model(config)


# --------------------------------------------------------------------------- the sequences
@pytest.mark.parametrize("seq_len,vocab", [(2, 3), (8, 8), (32, 16), (64, 128)])
def test_sequences_are_random_tokens_then_the_aggregation_token(seq_len: int, vocab: int) -> None:
    opts = options(seq_len=seq_len, vocab_size=vocab)
    seqs = compression_sequences(200, 3, opts)
    assert {len(s) for s in seqs} == {seq_len}
    assert {s[-1] for s in seqs} == {vocab - 1}  # the aggregation token, last
    data = {t for s in seqs for t in s[:-1]}
    assert data <= set(range(vocab - 1)) and (len(data) > (vocab - 1) // 2)
    assert compression_vocabulary(opts)[-1] == "compress" and len(compression_vocabulary(opts)) == vocab


def test_sequences_are_seeded() -> None:
    opts = options()
    assert compression_sequences(20, 4, opts) == compression_sequences(20, 4, opts)
    assert compression_sequences(20, 4, opts) != compression_sequences(20, 5, opts)


@pytest.mark.parametrize("name,value,expected", [
    ("vocab_size", 2, "expected an integer in [3, 65536]"),
    ("seq_len", 1, "expected an integer >= 2"),
    ("num_train", "10", "expected an integer >= 0"),
])
def test_bad_options_are_refused(name: str, value: Any, expected: str) -> None:
    with pytest.raises(ConfigError, match=rf"task\.generator_options\.{name}: ") as err:
        options(**{name: value})
    assert expected in str(err.value) and repr(value) in str(err.value)


# --------------------------------------------------------------------------- the arch
def test_forward_shapes() -> None:
    model = tiny()
    ids = torch.randint(4, 12, (3, 8))
    out = model(input_ids=ids, labels=ids[:, :-1])
    assert out["logits"].shape == (3, 7, 12) and out["loss"].shape == ()
    assert model.encode(ids).shape == (3, 8, 32)
    assert model.decode(torch.zeros(3, 32), 5).shape == (3, 5, 12)
    assert "loss" not in model(input_ids=ids)


def test_the_config_checks_and_round_trips() -> None:
    config = tiny(decoder_positions="sinusoidal", decoder_layers=0).config
    assert ModelConfig.from_dict(config.to_dict()) == config
    assert tiny(decoder_positions="sinusoidal")(input_ids=torch.randint(4, 12, (2, 6)))["logits"].shape == (2, 5, 12)
    with pytest.raises(ValueError, match="decoder_positions must be one of 'learned', 'sinusoidal'"):
        tiny(decoder_positions="rope")
    with pytest.raises(ValueError, match="decoder_layers must be an integer >= 0"):
        tiny(decoder_layers=-1)


@pytest.mark.parametrize("kind", ["V", "R", "D", "R+V"])
def test_causal_and_the_code_reads_every_token(kind: str) -> None:
    model = tiny(kind).eval()
    ids = torch.randint(4, 11, (2, 8))
    with torch.no_grad():
        base = model.encode(ids)  # (B, L, d)
        for j in (0, 3, 6):
            changed = ids.clone()
            changed[:, j] = torch.where(ids[:, j] == 4, 5, 4)
            h = model.encode(changed)
            assert torch.allclose(h[:, :j], base[:, :j], atol=1e-6)  # positions before j never read it
            assert not torch.allclose(h[:, -1], base[:, -1], atol=1e-4)  # z, the state at the last, does
            assert not torch.allclose(model(input_ids=changed)["logits"], model(input_ids=ids)["logits"])


@pytest.mark.parametrize("kind", ["V", "R"])
def test_a_tiny_model_overfits_a_batch(kind: str) -> None:
    model = tiny(kind)
    g = torch.Generator().manual_seed(0)
    data = torch.randint(4, 11, (8, 5), generator=g)  # (B, n)
    ids = torch.cat([data, torch.full((8, 1), 11)], dim=1)  # (B, n + 1): the aggregation token last
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(40):
        loss = model(input_ids=ids, labels=data)["loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[0] > math.log(12) * 0.8 and losses[-1] < 0.5 * losses[0]


# --------------------------------------------------------------------------- the task type
class Oracle(nn.Module):
    """Logits that put ``scale`` on the right token (labels given at construction)."""

    def __init__(self, labels: Tensor, vocab: int, scale: float) -> None:
        super().__init__()
        self.table = {tuple(row.tolist()): row for row in labels}
        self.vocab, self.scale = vocab, scale
        self.weight = nn.Parameter(torch.zeros(1))

    def forward(self, input_ids: Tensor, labels: Tensor | None = None) -> dict[str, Tensor]:
        rows = torch.stack([self.table[tuple(r[:-1].tolist())] for r in input_ids])  # (B, n)
        return {"logits": nn.functional.one_hot(rows, self.vocab).float() * self.scale}  # (B, n, V)


def test_dataset_metrics_and_baseline() -> None:
    opts = options(seq_len=6, vocab_size=8)
    seqs = compression_sequences(40, 0, opts)
    data = CompressionDataset(seqs, offset=4)
    item = data[0]
    assert item["input_ids"].tolist() == [t + 4 for t in seqs[0]] and item["labels"].tolist() == item[
        "input_ids"].tolist()[:-1]
    perfect = compression_metrics(Oracle(data.labels, 12, 50.0), data, ["loss", "accuracy"], 16)
    assert perfect["accuracy"] == 1.0 and perfect["loss"] < 1e-3 and perfect["tokens"] == 40 * 5
    blind = compression_metrics(Oracle(data.labels, 12, 0.0), data, ["loss"], 16)
    assert blind["loss"] == pytest.approx(math.log(12), rel=1e-5) and "accuracy" not in blind
    valid = compression_sequences(200, 1, opts)
    assert most_frequent_accuracy(seqs, valid) == pytest.approx(1 / 7, abs=0.04)


def test_registered_type_generator_and_kind_setting() -> None:
    task_type = get_task_type("compression")
    assert task_type.arch == "compressor" and task_type.comparison_metric(None) == "accuracy"
    assert "compression" in list_generators()
    raw = load_raw_data(TaskConfig(type="compression", generator_options={"num_train": 4, "num_valid": 2,
                                                                           "num_test": 0}, max_len=32))
    assert set(raw.splits) == {"train", "valid"} and len(raw.splits["train"][0]) == 32
    run = from_dict(RunConfig, tiny_config())
    assert with_kind(run, "D+V").model_section["decoder_kind"] == "D+V"


def test_a_bad_option_or_short_max_len_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"generator_options\.seq_len: expected an integer >= 2, got 1"):
        load_raw_data(TaskConfig(type="compression", generator_options={"seq_len": 1}))
    with pytest.raises(ConfigError, match=r"task\.max_len: 16 .* set task\.max_len: 32"):
        load_raw_data(TaskConfig(type="compression", max_len=16))


def tiny_config() -> dict[str, Any]:
    opts = {"vocab_size": 8, "seq_len": 8, "num_train": 64, "num_valid": 16, "num_test": 16}
    return {"task": {"type": "compression", "generator_options": opts, "max_len": 8},
            "model": {**TINY_MODEL, "decoder_kind": "R+V"},
            "train": {**TINY_TRAIN, "steps": 3, "eval_every": 3, "save_every": 3}}


def test_trains_and_evaluates_through_the_cli(tmp_path: Path, capsys) -> None:
    run_dir = tmp_path / "run"
    assert main(["train", str(write_yaml(tmp_path / "c.yaml", tiny_config())), "--run-dir", str(run_dir),
                 "--no-progress", "-q"]) == 0
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in records if "eval_accuracy" in r]
    assert evals and 0.0 <= evals[-1]["eval_accuracy"] <= 1.0 and math.isfinite(evals[-1]["eval_loss"])
    assert main(["eval", str(run_dir), "--split", "test"]) == 0
    report = json.loads((run_dir / "eval_test.json").read_text())
    metrics = report.get("metrics", report)
    assert 0.0 <= metrics["accuracy"] <= 1.0 and metrics["tokens"] == 16 * 7
    capsys.readouterr()
    assert main(["generate", str(run_dir), "--prompt", "t1 t2 t3"]) == 0
    assert len(capsys.readouterr().out.split()) >= 3  # three tokens rebuilt


def test_a_study_sets_the_stacks_kind(tmp_path: Path) -> None:
    config = tiny_config()
    config["train"] = {**config["train"], "steps": 2, "eval_every": 2, "save_every": 2}
    out = tmp_path / "study"
    assert main(["study", str(write_yaml(tmp_path / "c.yaml", config)), "--kinds", "V,R", "--seeds", "1",
                 "--out", str(out), "-q"]) == 0
    configs = [json.loads(p.read_text()) for p in out.rglob("model_config.json")]
    assert {c["arch"] for c in configs} == {"compressor"} and {c["decoder_kind"] for c in configs} == {"V", "R"}
    results = json.loads((out / "results.json").read_text())
    assert results["metric"] == "accuracy" and [r["variant"] for r in results["rows"]] == ["V", "R"]
