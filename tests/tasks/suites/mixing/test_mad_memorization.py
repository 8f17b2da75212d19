"""MAD memorization: one map for every split (from map_seed, not the split seed), distinct keys in a sequence,
every value the map's; the answers of valid and test are what the training split taught."""

from __future__ import annotations

from typing import Any

import pytest

from synthformer.tasks.suites.mixing.mad_memorization import MEMORIZATION, memorization_map
from synthformer.tasks.suites.mixing.sequences import MixingSequence, get_benchmark

from .mad_helpers import assert_refused, assert_seeded, max_id, options, well_formed


def learn(train: list[MixingSequence]) -> dict[int, int]:
    """The facts a training split shows: the token after each key, checked to be the same every time."""
    facts: dict[int, int] = {}
    for seq in train:
        for a in seq.answers:
            assert facts.setdefault(seq.tokens[a - 1], seq.tokens[a]) == seq.tokens[a]
    return facts


@pytest.mark.parametrize("seq_len", [2, 6, 32, 64])
def test_valid_and_test_answers_are_the_facts_of_the_training_split(seq_len: int) -> None:
    opts = options(MEMORIZATION, seq_len=seq_len)
    train = well_formed(MEMORIZATION, opts, n=256, seed=0)
    facts = learn(train)
    for split_seed in (1, 2):
        for seq in well_formed(MEMORIZATION, opts, n=100, seed=split_seed):
            assert list(seq.answers) == list(range(1, seq_len, 2))  # every value, and only the values
            keys = seq.tokens[::2]
            assert len(set(keys)) == len(keys) and all(k < 128 for k in keys)  # distinct keys, first half
            for a in seq.answers:
                key = seq.tokens[a - 1]
                if key in facts:  # with 256 training sequences, every fact but a rare one is known
                    assert seq.tokens[a] == facts[key]
                assert seq.tokens[a] == memorization_map(opts)[key]
    if seq_len >= 32:
        assert len(facts) == 128  # MAD's setting shows every fact in training


def test_the_map_comes_from_map_seed_alone() -> None:
    opts = options(MEMORIZATION)
    facts = memorization_map(opts)
    assert sorted(facts) == list(range(128)) and len(set(facts.values())) == 128  # one value per key, distinct
    assert all(128 <= v < 256 for v in facts.values())
    assert memorization_map(options(MEMORIZATION, seed=7)) == facts
    assert memorization_map(options(MEMORIZATION, map_seed=1)) != facts
    other = MEMORIZATION.make(50, 0, options(MEMORIZATION, map_seed=1))
    assert learn(other) != learn(MEMORIZATION.make(50, 0, opts))


def test_registered_with_mads_defaults() -> None:
    assert get_benchmark("memorization") is MEMORIZATION
    assert {k: MEMORIZATION.option_defaults[k] for k in ("vocab_size", "seq_len", "num_train")} == {
        "vocab_size": 256, "seq_len": 32, "num_train": 256}


def test_seeded() -> None:
    assert_seeded(MEMORIZATION, options(MEMORIZATION))


def test_vocab_size_sets_the_id_range() -> None:
    small = well_formed(MEMORIZATION, options(MEMORIZATION, vocab_size=64), n=100)
    large = well_formed(MEMORIZATION, options(MEMORIZATION, vocab_size=1024), n=100)
    assert max_id(small) < 64 < max_id(large) < 1024
    assert MEMORIZATION.vocabulary(options(MEMORIZATION, vocab_size=5, seq_len=2)) == ["k0", "k1", "v0", "v1", "v2"]


def test_the_context_free_guess_is_the_most_frequent_value() -> None:
    opts = options(MEMORIZATION)
    train, valid = MEMORIZATION.make(256, 0, opts), MEMORIZATION.make(200, 1, opts)
    assert MEMORIZATION.context_free(train, valid, opts) < 0.03  # about 1 / 128


@pytest.mark.parametrize("name,value,expected,others", [
    ("seq_len", 7, "expected an even number", {}),
    ("seq_len", 256, "expected seq_len at most 254", {}),
    ("seq_len", 8, "expected seq_len at most 6", {"vocab_size": 8}),
    ("map_seed", -1, "expected an integer >= 0", {}),
    ("vocab_size", 3, "expected an integer in [4, 65536]", {}),
])
def test_bad_options_are_refused(name: str, value: Any, expected: str, others: dict[str, Any]) -> None:
    assert_refused(MEMORIZATION, name, value, expected, **others)
