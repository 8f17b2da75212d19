"""The matching probes of issue 34 (``matching:pair|control``, ``mqar:recall|control``): every label checked by an
independent brute-force rule on the generators' own examples, determinism by seed, option errors, and each task
trained end to end through the CLI."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from synthformer.cli.main import main
from synthformer.common.config import ConfigError, from_dict
from synthformer.tasks import RunConfig, load_raw_data
from synthformer.tasks.suites.probes.matching import MatchingGenerator
from synthformer.tasks.suites.probes.recall import RecallGenerator
from tests.tasks.helpers import TINY_MODEL, TINY_TRAIN, write_yaml

pytestmark = pytest.mark.usefixtures("restore_logging")


def _load(generator: str, max_len: int = 32, **options: Any) -> Any:
    task = from_dict(RunConfig, {"task": {"type": "classification", "generator": generator, "max_len": max_len,
                                          "generator_options": {"num_valid": 20, "num_test": 20, **options}}}).task
    return load_raw_data(task)


def _segments(text: str) -> tuple[list[int], list[int]]:
    """A and B of a matching input, as symbol numbers (parsed from the text, not from the generator's objects)."""
    a, b = text.split(" | ")
    return [int(t[1:]) for t in a.split()], [int(t[1:]) for t in b.split()]


def _brute_pair(text: str) -> str:
    # every symbol occurrence of A is matched, one to one, with an equal symbol of B
    a, b = _segments(text)
    unmatched = list(b)
    for s in a:
        if s not in unmatched:
            return "mismatch"
        unmatched.remove(s)
    return "match"


def _brute_majority(text: str, vocab: int) -> str:
    a, _ = _segments(text)
    low = [s for s in a if s < vocab / 2]
    high = [s for s in a if s >= vocab / 2]
    if len(low) == len(high):
        return "low" if a[0] < vocab / 2 else "high"
    return "low" if len(low) > len(high) else "high"


def _brute_recall(text: str, control: bool) -> str:
    tokens = text.split()
    assert tokens[-2] == "?" and len(tokens) % 2 == 0
    pairs = list(zip(tokens[:-2:2], tokens[1:-2:2], strict=True))
    if control:
        return pairs[0][1]
    found = [value for key, value in pairs if key == tokens[-1]]
    assert len(found) == 1  # keys are distinct within a context and the queried one is among them
    return found[0]


@pytest.mark.parametrize("vocab, max_len, replaced", [(16, 15, 1), (40, 64, 3)])
def test_pair_and_control_labels_by_brute_force(vocab: int, max_len: int, replaced: int) -> None:
    options = dict(num_train=400, vocab=vocab, num_replaced=replaced, seed=3)
    pair, control = _load("matching:pair", max_len, **options), _load("matching:control", max_len, **options)
    length = (max_len - 1) // 2
    for split in ("train", "valid", "test"):
        texts = [text for text, _ in pair.splits[split]]
        assert texts == [text for text, _ in control.splits[split]]  # the control reads the very same inputs
        for (text, label), (_, control_label) in zip(pair.splits[split], control.splits[split], strict=True):
            a, b = _segments(text)
            assert len(a) == len(b) == length and len(set(a)) == length and max(a + b) < vocab
            assert label == _brute_pair(text)
            assert len(set(b) - set(a)) == (0 if label == "match" else replaced)
            assert control_label == _brute_majority(text, vocab)
    counts = Counter(label for _, label in pair.splits["train"])
    assert 150 < counts["match"] < 250  # balanced: a constant guess stays near chance
    assert set(Counter(label for _, label in control.splits["train"])) == {"low", "high"}
    assert pair.label_set == ["match", "mismatch"] and control.label_set == ["high", "low"]


def test_pair_mismatch_from_present_symbols_keeps_the_symbol_set() -> None:
    # replace_with=present: a mismatch copies other symbols of A into B, so no count of distinct symbols (what max
    # pooling over symbol features reads) tells the labels apart
    pair = _load("matching:pair", 21, num_train=300, vocab=12, num_replaced=3, replace_with="present", seed=4)
    labels = Counter()
    for split in ("train", "valid", "test"):
        for text, label in pair.splits[split]:
            a, b = _segments(text)
            assert label == _brute_pair(text) and len(set(a)) == len(a) == len(b) == 10
            assert set(b) <= set(a)  # the sequence holds A's symbols and no others, under both labels
            assert len(set(a) - set(b)) == (0 if label == "match" else 3)
            labels[label] += 1
    assert 120 < labels["match"] < 220 and labels["mismatch"] > 120


def test_recall_and_control_labels_by_brute_force() -> None:
    options = dict(num_train=300, num_keys=24, num_values=6, queries=3, seed=5)
    recall, control = _load("mqar:recall", 22, **options), _load("mqar:control", 22, **options)
    for split in ("train", "valid", "test"):
        assert [t for t, _ in recall.splits[split]] == [t for t, _ in control.splits[split]]
        for (text, label), (_, control_label) in zip(recall.splits[split], control.splits[split], strict=True):
            assert len(text.split()) == 22  # (22 - 2) // 2 = 10 pairs, "?" and the query
            assert label == _brute_recall(text, control=False)
            assert control_label == _brute_recall(text, control=True)
    train = recall.splits["train"]
    assert len(train) == 300 and recall.label_set == [f"v{i}" for i in range(6)]
    # multi-query: each context is asked `queries` distinct keys, in consecutive examples
    contexts = [text.rsplit(" ? ", 1) for text, _ in train[:3]]
    assert len({c for c, _ in contexts}) == 1 and len({q for _, q in contexts}) == 3
    assert len(Counter(label for _, label in train)) == 6


@pytest.mark.parametrize("generator", ["matching:pair", "mqar:recall"])
def test_probes_are_deterministic_by_seed(generator: str) -> None:
    first, again = _load(generator, num_train=50, seed=1), _load(generator, num_train=50, seed=1)
    other = _load(generator, num_train=50, seed=2)
    assert first.splits == again.splits
    assert first.splits["train"] != other.splits["train"]
    assert first.splits["train"][:20] != first.splits["valid"]  # splits are different draws


@pytest.mark.parametrize("generator, options, match", [
    ("matching:pair", dict(vocab=15), r"vocab: 15 symbols cannot give 15 distinct symbols plus 1"),
    ("matching:pair", dict(vocab=300), r"generator_options\.vocab: expected an integer in \[2, 256\].*got 300"),
    ("matching:control", dict(length=0), r"generator_options\.length: expected an integer >= 1.*got 0"),
    ("matching:pair", dict(replace_with="fresh"), r"replace_with: expected one of absent, present, got 'fresh'"),
    ("matching:pair", dict(replace_with="present", length=4, num_replaced=4), r"num_replaced: 4 .* < length = 4"),
    ("mqar:recall", dict(num_keys=10), r"num_keys: 10 keys cannot give 15 distinct"),
    ("mqar:recall", dict(num_pairs=2, queries=3), r"queries: 3 distinct queries need as many pairs"),
    ("mqar:control", dict(num_values="8"), r"num_values: expected an integer in \[2, 256\].*got '8'"),
])
def test_bad_options_name_the_value(generator: str, options: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        _load(generator, num_train=4, **options)


def test_fixed_vocabularies_cover_every_setting() -> None:
    pair_tok, recall_tok = MatchingGenerator().tokenizer(), RecallGenerator().tokenizer()
    assert pair_tok.encode("t0 t255 | t7") == [pair_tok.token_to_id(t) for t in ("t0", "t255", "|", "t7")]
    assert pair_tok.unk_id not in pair_tok.encode("t255 |") and recall_tok.unk_id not in recall_tok.encode(
        "k255 v255 ? k0")


@pytest.mark.parametrize("generator", ["matching:pair", "matching:control", "mqar:recall"])  # the study's three
def test_each_probe_trains_end_to_end_through_the_cli(generator: str, tmp_path: Path, capsys) -> None:
    options = {"num_train": 64, "num_valid": 16, "num_test": 16, "seed": 0}
    options |= {"vocab": 32} if generator.startswith("matching") else {"num_keys": 16, "num_values": 4}
    config = {"task": {"type": "classification", "generator": generator, "generator_options": options, "max_len": 17},
              "model": {**TINY_MODEL, "encoder_kind": "D"}, "train": TINY_TRAIN}
    run_dir = tmp_path / "run"
    assert main(["train", str(write_yaml(tmp_path / "probe.yaml", config)), "--run-dir", str(run_dir), "-q"]) == 0
    assert main(["eval", str(run_dir), "--split", "test"]) == 0
    out = capsys.readouterr().out
    assert "accuracy" in out and (run_dir / "eval_test.json").is_file()
