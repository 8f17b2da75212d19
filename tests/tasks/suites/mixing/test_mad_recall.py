"""MAD in-context recall and noisy recall: seeded sequences of whole slots, every answer the value an earlier pair
gave the same key, noise only from its own ids, each option doing what it says, bad options refused."""

from __future__ import annotations

from typing import Any

import pytest

from synthformer.tasks.suites.mixing.mad_recall import NOISY_RECALL, RECALL
from synthformer.tasks.suites.mixing.sequences import MixingBenchmark, MixingSequence, get_benchmark, list_benchmarks

from .mad_helpers import assert_refused, assert_seeded, max_id, options, well_formed


def expected_answers(seq: MixingSequence, keys: int, values: int) -> dict[int, int]:
    """Position -> token of every answer, from the definition: slot i is tokens 2i, 2i + 1; a slot starting with a
    key id is a pair; its value is an answer when an earlier pair had that key, and equals that pair's value."""
    seen: dict[int, int] = {}
    out: dict[int, int] = {}
    tokens = seq.tokens
    for start in range(0, len(tokens) - 1, 2):
        key, value = tokens[start], tokens[start + 1]
        if key >= keys:  # a noise slot: both tokens noise
            assert key >= keys + values and value >= keys + values
            continue
        assert keys <= value < keys + values
        if key in seen:
            out[start + 1] = seen[key]
        seen[key] = value
    return out


def test_registered() -> None:
    assert {"recall", "noisy_recall"} <= set(list_benchmarks())
    assert get_benchmark("recall") is RECALL and get_benchmark("noisy_recall") is NOISY_RECALL


def test_defaults_are_mads() -> None:
    assert {k: RECALL.option_defaults[k] for k in ("vocab_size", "seq_len", "num_train", "num_test")} == {
        "vocab_size": 16, "seq_len": 128, "num_train": 12_800, "num_test": 1_280}
    assert {k: NOISY_RECALL.option_defaults[k] for k in ("vocab_size", "noise_vocab_size", "frac_noise")} == {
        "vocab_size": 32, "noise_vocab_size": 16, "frac_noise": 0.2}


@pytest.mark.parametrize("bench", [RECALL, NOISY_RECALL], ids=lambda b: b.name)
@pytest.mark.parametrize("seq_len", [4, 12, 128, 256])
def test_every_answer_is_the_value_an_earlier_pair_gave_its_key(bench: MixingBenchmark, seq_len: int) -> None:
    opts = options(bench, seq_len=seq_len)
    data = opts["vocab_size"] - opts.get("noise_vocab_size", 0)
    keys, values = data // 2, data - data // 2
    for seq in well_formed(bench, opts):
        truth = expected_answers(seq, keys, values)
        assert list(seq.answers) == sorted(truth)  # every value of a key seen before, and only those
        assert all(seq.tokens[a] == truth[a] for a in seq.answers)
        assert seq.tokens[-1] < keys or seq.tokens[-1] >= data  # the extra token: a key (or noise), no value
        assert seq.answers[-1] == seq_len - 1  # the last whole slot asks a key shown before


def test_seeded() -> None:
    assert_seeded(RECALL, options(RECALL))
    assert_seeded(NOISY_RECALL, options(NOISY_RECALL))


def test_vocab_size_sets_the_id_range() -> None:
    small = well_formed(RECALL, options(RECALL, vocab_size=16), n=100)
    large = well_formed(RECALL, options(RECALL, vocab_size=64), n=100)
    assert max_id(small) == 15 and 32 < max_id(large) <= 63
    assert RECALL.vocabulary(options(RECALL, vocab_size=6)) == ["k0", "k1", "k2", "v0", "v1", "v2"]
    assert RECALL.vocabulary(options(RECALL, vocab_size=5)) == ["k0", "k1", "v0", "v1", "v2"]  # odd: more values


def noise_share(seqs: list[MixingSequence], first_noise: int) -> float:
    return sum(t >= first_noise for s in seqs for t in s.tokens) / sum(len(s.tokens) for s in seqs)


@pytest.mark.parametrize("frac", [0.0, 0.2, 0.6])
def test_frac_noise_is_the_noise_share(frac: float) -> None:
    opts = options(NOISY_RECALL, frac_noise=frac)
    seqs = well_formed(NOISY_RECALL, opts, n=100)
    # the forced pair and the final query are never noise: (slots - 2) of the slots can be
    slots = opts["seq_len"] // 2
    assert noise_share(seqs, 16) == pytest.approx(frac * (slots - 2) / slots, abs=0.03)
    ids = {t for s in seqs for t in s.tokens if t >= 16}
    assert ids <= set(range(16, 32)) and (len(ids) > 12 if frac else not ids)


def test_noise_vocab_size_sets_the_noise_ids() -> None:
    opts = options(NOISY_RECALL, vocab_size=20, noise_vocab_size=4)
    assert NOISY_RECALL.vocabulary(opts)[-5:] == ["v7", "n0", "n1", "n2", "n3"]
    seqs = well_formed(NOISY_RECALL, opts, n=100)
    assert {t for s in seqs for t in s.tokens if t >= 16} == {16, 17, 18, 19}


def test_the_context_free_guess_is_the_most_frequent_value() -> None:
    opts = options(RECALL)
    train, valid = RECALL.make(300, 0, opts), RECALL.make(300, 1, opts)
    assert RECALL.context_free(train, valid, opts) == pytest.approx(1 / 8, abs=0.02)


@pytest.mark.parametrize("bench,name,value,expected,others", [
    (RECALL, "seq_len", 13, "expected an even number", {}),
    (RECALL, "seq_len", 2, "expected an integer >= 4", {}),
    (RECALL, "vocab_size", 1, "expected an integer in [2, 65536]", {}),
    (RECALL, "vocab_size", "16", "expected an integer", {}),
    (RECALL, "num_train", -1, "expected an integer >= 0", {}),
    (NOISY_RECALL, "frac_noise", 1.0, "expected a number in [0, 1)", {}),
    (NOISY_RECALL, "frac_noise", True, "expected a number in [0, 1)", {}),
    (NOISY_RECALL, "noise_vocab_size", 31, "expected at most 30", {}),
    (NOISY_RECALL, "noise_vocab_size", 0, "frac_noise 0.2 needs noise ids", {}),
])
def test_bad_options_are_refused(bench: MixingBenchmark, name: str, value: Any, expected: str,
                                 others: dict[str, Any]) -> None:
    assert_refused(bench, name, value, expected, **others)


def test_noise_free_noisy_recall_is_recall() -> None:
    noisy = options(NOISY_RECALL, vocab_size=16, noise_vocab_size=0, frac_noise=0.0)
    assert NOISY_RECALL.make(10, 4, noisy) == RECALL.make(10, 4, options(RECALL))
