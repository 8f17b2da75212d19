"""MAD selective copying: seeded, data tokens among blanks, a copy signal, the data tokens in their order as the
answers; each option changes what it says; bad options refused."""

from __future__ import annotations

from typing import Any

import pytest

from synthformer.tasks.suites.mixing.mad_copying import SELECTIVE_COPY
from synthformer.tasks.suites.mixing.sequences import MixingSequence, get_benchmark

from .mad_helpers import assert_refused, assert_seeded, max_id, options, well_formed


def solve(seq: MixingSequence, position: int, vocab_size: int) -> int:
    """The token at ``position`` (after the signal) from the tokens before it: the next data token of the region
    that has not been copied yet."""
    blank, signal = vocab_size - 2, vocab_size - 1
    tokens = seq.tokens[:position]
    at = tokens.index(signal)
    data = [t for t in tokens[:at] if t != blank]
    return data[position - at - 1]


@pytest.mark.parametrize("seq_len,copies", [(3, 1), (10, 3), (64, 16), (256, 16), (256, 96)])
def test_every_answer_is_the_next_data_token_in_order(seq_len: int, copies: int) -> None:
    opts = options(SELECTIVE_COPY, seq_len=seq_len, num_tokens_to_copy=copies)
    for seq in well_formed(SELECTIVE_COPY, opts):
        signal = seq.tokens.index(15)
        assert signal == seq_len - copies and seq.tokens.count(15) == 1
        assert list(seq.answers) == list(range(signal + 1, signal + 1 + copies))
        assert all(seq.tokens[a] == solve(seq, a, 16) for a in seq.answers)
        region = seq.tokens[:signal]
        assert 14 in region and len([t for t in region if t != 14]) == copies  # blanks and the data tokens


def test_registered_with_mads_defaults() -> None:
    assert get_benchmark("selective_copy") is SELECTIVE_COPY
    assert {k: SELECTIVE_COPY.option_defaults[k] for k in ("vocab_size", "seq_len", "num_tokens_to_copy")} == {
        "vocab_size": 16, "seq_len": 256, "num_tokens_to_copy": 16}


def test_seeded() -> None:
    assert_seeded(SELECTIVE_COPY, options(SELECTIVE_COPY))


def test_the_data_tokens_sit_anywhere_in_the_region() -> None:
    opts = options(SELECTIVE_COPY, seq_len=40, num_tokens_to_copy=4)
    places = {i for seq in SELECTIVE_COPY.make(300, 0, opts) for i, t in enumerate(seq.tokens[:36]) if t != 14}
    assert places == set(range(36))


def test_num_tokens_to_copy_is_the_answer_count() -> None:
    for copies in (16, 32, 64):
        seqs = well_formed(SELECTIVE_COPY, options(SELECTIVE_COPY, num_tokens_to_copy=copies), n=5)
        assert {len(s.answers) for s in seqs} == {copies}


def test_vocab_size_sets_the_id_range() -> None:
    opts = options(SELECTIVE_COPY, vocab_size=64)
    seqs = well_formed(SELECTIVE_COPY, opts)
    assert max_id(seqs) == 63 and {t for s in seqs for t in s.answer_tokens} <= set(range(62))
    assert SELECTIVE_COPY.vocabulary(options(SELECTIVE_COPY, vocab_size=4)) == ["t0", "t1", "_", "copy"]


def test_the_context_free_guess_is_the_most_frequent_data_token() -> None:
    opts = options(SELECTIVE_COPY)
    train, valid = SELECTIVE_COPY.make(200, 0, opts), SELECTIVE_COPY.make(200, 1, opts)
    assert SELECTIVE_COPY.context_free(train, valid, opts) == pytest.approx(1 / 14, abs=0.015)


@pytest.mark.parametrize("name,value,expected,others", [
    ("seq_len", 32, "need seq_len >= 33", {}),
    ("seq_len", 64, "need seq_len >= 65", {"num_tokens_to_copy": 32}),
    ("num_tokens_to_copy", 0, "expected an integer >= 1", {}),
    ("vocab_size", 2, "expected an integer in [3, 65536]", {}),
    ("seed", -2, "expected an integer >= 0", {}),
])
def test_bad_options_are_refused(name: str, value: Any, expected: str, others: dict[str, Any]) -> None:
    assert_refused(SELECTIVE_COPY, name, value, expected, **others)
