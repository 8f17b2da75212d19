"""MQAR in Zoology's form: the sequences (seeded, their layout, the answer recoverable from the context, each
difficulty option), the answer-only dataset and metrics, and a run through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import Tensor, nn

from synthformer.cli.main import main
from synthformer.common.config import ConfigError
from synthformer.models import IGNORE_INDEX
from synthformer.tasks.registry import list_generators
from synthformer.tasks.suites.mixing import AnswerDataset, answer_metrics, get_benchmark
from synthformer.tasks.suites.mixing.mqar import FILLER

from ...helpers import TINY_MODEL, TINY_TRAIN, write_yaml

MQAR = get_benchmark("mqar")


def options(**changes: Any) -> dict[str, Any]:
    return MQAR.check({**MQAR.option_defaults, "vocab_size": 64, "seq_len": 32, "num_pairs": 4, **changes})


def solve(tokens: tuple[int, ...], position: int, pairs: int) -> int:
    """The answer at ``position`` from the tokens before it: the value the context pairs with the key just read."""
    key = tokens[position - 1]
    context = tokens[: 2 * pairs]
    return context[context.index(key) + 1]


def test_registered_as_a_generator() -> None:
    assert "mixing:mqar" in list_generators()


@pytest.mark.parametrize("seq_len,pairs,queries", [(15, 4, None), (32, 4, None), (64, 8, None), (128, 16, None),
                                                   (64, 4, 28), (33, 4, 10)])
def test_every_answer_is_recoverable_from_the_context(seq_len: int, pairs: int, queries: int | None) -> None:
    opts = options(seq_len=seq_len, num_pairs=pairs, num_queries=queries)
    half = opts["vocab_size"] // 2
    for seq in MQAR.make(50, 3, opts):
        assert len(seq.tokens) == seq_len + 1 == MQAR.length(opts)
        keys, values = seq.tokens[0: 2 * pairs: 2], seq.tokens[1: 2 * pairs: 2]
        assert len(set(keys)) == pairs and all(1 <= k < half for k in keys)  # distinct keys, first half
        assert len(set(values)) == pairs and all(half <= v < 2 * half for v in values)  # distinct values
        assert len(seq.answers) == (queries or pairs) and {seq.tokens[a - 1] for a in seq.answers} <= set(keys)
        for a in seq.answers:
            assert a >= 2 * pairs + 1 and seq.tokens[a] == solve(seq.tokens, a, pairs)
        tail = [t for i, t in enumerate(seq.tokens[2 * pairs:], 2 * pairs)
                if i not in seq.answers and i + 1 not in seq.answers]
        assert set(tail) <= {FILLER}  # the rest is filler


def test_seeded() -> None:
    opts = options()
    assert MQAR.make(20, 5, opts) == MQAR.make(20, 5, opts)
    assert MQAR.make(20, 5, opts) != MQAR.make(20, 6, opts)


def test_query_positions_vary_and_keys_repeat() -> None:
    """Uniform placement: the first query is not always right after the context. Queries are drawn with
    replacement, so no value can be ruled out by the ones already answered: some sequences ask a key twice."""
    seqs = MQAR.make(200, 0, options(seq_len=64, num_pairs=4))
    assert len({seq.answers[0] for seq in seqs}) > 10
    asked = [[seq.tokens[a - 1] for a in seq.answers] for seq in seqs]
    assert sum(len(set(keys)) < len(keys) for keys in asked) > 100  # 1 - 4!/4**4 = 0.91 of them


def test_each_difficulty_option_changes_what_it_says() -> None:
    base = MQAR.make(30, 0, options())
    longer = MQAR.make(30, 0, options(seq_len=64))
    more = MQAR.make(30, 0, options(num_pairs=8))
    wider = MQAR.make(30, 0, options(vocab_size=1024))
    asked = MQAR.make(30, 0, options(num_queries=12))
    assert {len(s.tokens) for s in base} == {33} and {len(s.tokens) for s in longer} == {65}
    assert {len(s.answers) for s in base} == {4} and {len(s.answers) for s in more} == {8}
    assert {len(s.answers) for s in asked} == {12} and all(s.tokens[:8] for s in asked)
    assert max(max(s.tokens) for s in base) < 64 and max(max(s.tokens) for s in wider) >= 64
    assert len(MQAR.vocabulary(options(vocab_size=1024))) == 1024


@pytest.mark.parametrize("changes,match", [
    ({"vocab_size": 63}, "vocab_size.*even"),
    ({"vocab_size": 2}, "vocab_size.*in \\[4"),
    ({"num_pairs": 9}, "seq_len.*at least 35"),
    ({"num_queries": 13}, "4 pairs and 13 queries take 34 tokens.*at least 33, got 32"),
    ({"num_queries": 0}, "num_queries.*>= 1"),
    ({"vocab_size": 8, "num_pairs": 4}, "num_pairs.*vocab_size >= 10"),
    ({"num_pairs": 0}, "num_pairs"),
    ({"num_train": -1}, "num_train"),
])
def test_bad_options_name_the_option(changes: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        options(**changes)


def test_dataset_counts_the_answers_only() -> None:
    opts = options()
    seqs = MQAR.make(8, 0, opts)
    data = AnswerDataset(seqs, offset=4)
    item = data[3]
    tokens = torch.tensor(seqs[3].tokens) + 4
    assert torch.equal(item["input_ids"], tokens[:-1])
    counted = (item["labels"] != IGNORE_INDEX).nonzero().flatten() + 1  # label t is token t + 1
    assert counted.tolist() == list(seqs[3].answers)
    assert torch.equal(item["labels"][counted - 1], tokens[counted])


class Oracle(nn.Module):
    """Solves MQAR from the inputs: after a key seen in the context, the value it was paired with."""

    def __init__(self, pairs: int, vocab: int, offset: int) -> None:
        super().__init__()
        self.pairs, self.vocab, self.offset = pairs, vocab, offset
        self.anchor = nn.Parameter(torch.zeros(()))  # gives the module a device

    def forward(self, input_ids: Tensor, labels: Tensor | None = None) -> dict[str, Tensor]:
        logits = torch.zeros(*input_ids.shape, self.vocab)  # (B, L, V)
        for b, row in enumerate(input_ids.tolist()):
            context = row[: 2 * self.pairs]
            for t in range(2 * self.pairs, len(row)):
                if row[t] in context[0::2]:
                    logits[b, t, context[context.index(row[t]) + 1]] = 20.0
        return {"logits": logits}


def test_metrics_of_an_oracle_and_of_a_constant_guess() -> None:
    opts = options()
    data = AnswerDataset(MQAR.make(40, 0, opts), offset=4)
    vocab = opts["vocab_size"] + 4
    perfect = answer_metrics(Oracle(4, vocab, 4), data, ["loss", "accuracy", "sequence_accuracy"], 16)
    assert perfect["accuracy"] == 1.0 and perfect["sequence_accuracy"] == 1.0 and perfect["answers"] == 160
    assert perfect["loss"] < 1e-3
    blind = answer_metrics(Oracle(0, vocab, 4), data, ["accuracy", "loss"], 16)  # logits all zero: uniform
    assert blind["loss"] == pytest.approx(torch.log(torch.tensor(float(vocab))).item(), rel=1e-5)


def tiny_config(**options_: Any) -> dict[str, Any]:
    opts = {"vocab_size": 32, "seq_len": 15, "num_pairs": 3, "num_train": 64, "num_valid": 16, "num_test": 16,
            **options_}
    return {"task": {"type": "token_mixing", "generator": "mixing:mqar", "generator_options": opts,
                     "max_len": opts["seq_len"]},
            "model": {**TINY_MODEL, "decoder_kind": "D"}, "train": TINY_TRAIN}


def test_trains_end_to_end_through_the_cli(tmp_path: Path, capsys) -> None:
    run_dir = tmp_path / "run"
    assert main(["train", str(write_yaml(tmp_path / "mqar.yaml", tiny_config())), "--run-dir", str(run_dir),
                 "-q"]) == 0
    assert main(["eval", str(run_dir), "--split", "test"]) == 0
    report = json.loads((run_dir / "eval_test.json").read_text())
    metrics = report.get("metrics", report)
    assert 0.0 <= metrics["accuracy"] <= 1.0 and metrics["answers"] == 16 * 3
    assert "sequence_accuracy" in capsys.readouterr().out


def test_a_max_len_shorter_than_the_sequences_is_refused(tmp_path: Path, capsys) -> None:
    config = tiny_config()
    config["task"]["max_len"] = 10
    assert main(["train", str(write_yaml(tmp_path / "mqar.yaml", config)), "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "task.max_len: 10" in err and "set task.max_len: 15" in err
    assert not (tmp_path / "r").exists()


def test_a_data_file_is_refused(tmp_path: Path, capsys) -> None:
    config = tiny_config()
    config["task"]["train"] = str(tmp_path / "text.txt")
    del config["task"]["generator"], config["task"]["generator_options"]
    assert main(["train", str(write_yaml(tmp_path / "bad.yaml", config)), "--run-dir", str(tmp_path / "r")]) == 2
    assert "task.train: token_mixing reads no files; give task.generator: mixing:<" in capsys.readouterr().err


def test_a_generator_of_another_task_type_is_refused(tmp_path: Path, capsys) -> None:
    config = tiny_config()
    config["task"]["generator"] = "listops"
    config["task"].pop("generator_options")
    assert main(["train", str(write_yaml(tmp_path / "bad.yaml", config)), "--run-dir", str(tmp_path / "r")]) == 2
    assert "'listops' makes a 'classification' task, but type is 'token_mixing'" in capsys.readouterr().err
