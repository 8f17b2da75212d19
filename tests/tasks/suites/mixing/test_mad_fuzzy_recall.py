"""MAD fuzzy in-context recall: seeded, front-padded to the exact length, key and value motifs of 1 .. max tokens,
every answer the matching token of the value motif an earlier pair gave the same key motif."""

from __future__ import annotations

from typing import Any

import pytest

from synthformer.tasks.suites.mixing.mad_fuzzy_recall import FUZZY_RECALL
from synthformer.tasks.suites.mixing.sequences import MixingSequence, get_benchmark

from .mad_helpers import assert_refused, assert_seeded, max_id, options, well_formed


def runs(seq: MixingSequence, keys: int, filler: int) -> tuple[int, list[tuple[str, int, tuple[int, ...]]]]:
    """The filler count at the front, then the maximal runs ``(kind, start, tokens)`` of key / value tokens."""
    tokens = seq.tokens
    pad = next(i for i, t in enumerate(tokens) if t != filler)
    assert filler not in tokens[pad:]  # filler only at the front
    out: list[tuple[str, int, tuple[int, ...]]] = []
    for i in range(pad, len(tokens)):
        kind = "key" if tokens[i] < keys else "value"
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1], (*out[-1][2], tokens[i]))
        else:
            out.append((kind, i, (tokens[i],)))
    return pad, out


def expected_answers(seq: MixingSequence, keys: int, filler: int) -> dict[int, int]:
    """Position -> token of every answer: each token of a value run whose key run appeared as a key before, equal
    to the token at the same place of the value run that followed it then."""
    _, found = runs(seq, keys, filler)
    assert [kind for kind, _, _ in found] == ["key", "value"] * (len(found) // 2) and len(found) % 2 == 0
    seen: dict[tuple[int, ...], tuple[int, ...]] = {}
    out: dict[int, int] = {}
    for (_, _, key), (_, start, value) in zip(found[::2], found[1::2], strict=True):
        if key in seen:
            assert len(seen[key]) == len(value)
            out.update({start + i: seen[key][i] for i in range(len(value))})
        seen[key] = value
    return out


@pytest.mark.parametrize("seq_len", [11, 15, 64, 128, 256])
def test_every_answer_is_recoverable_from_the_earlier_pairs(seq_len: int) -> None:
    opts = options(FUZZY_RECALL, seq_len=seq_len)
    keys, filler = 7, 15
    for seq in well_formed(FUZZY_RECALL, opts):
        truth = expected_answers(seq, keys, filler)
        assert list(seq.answers) == sorted(truth)
        assert all(seq.tokens[a] == truth[a] for a in seq.answers)
        assert seq.answers[-1] == seq_len  # the final pair asks a key motif seen before


def test_registered_with_mads_defaults() -> None:
    assert get_benchmark("fuzzy_recall") is FUZZY_RECALL
    assert {k: FUZZY_RECALL.option_defaults[k] for k in ("vocab_size", "seq_len", "k_motif_size", "v_motif_size")} \
        == {"vocab_size": 16, "seq_len": 128, "k_motif_size": 3, "v_motif_size": 3}


def test_seeded() -> None:
    assert_seeded(FUZZY_RECALL, options(FUZZY_RECALL))


def motif_lengths(opts: dict[str, Any]) -> tuple[set[int], set[int]]:
    keys = (opts["vocab_size"] - 1) // 2
    lengths: tuple[set[int], set[int]] = (set(), set())
    for seq in well_formed(FUZZY_RECALL, opts, n=60):
        for kind, _, tokens in runs(seq, keys, opts["vocab_size"] - 1)[1]:
            lengths[kind == "value"].add(len(tokens))
            assert len(set(tokens)) == len(tokens)  # a motif's tokens are distinct
    return lengths


def test_motif_sizes_bound_the_runs() -> None:
    assert motif_lengths(options(FUZZY_RECALL)) == ({1, 2, 3}, {1, 2, 3})
    assert motif_lengths(options(FUZZY_RECALL, k_motif_size=1, v_motif_size=4)) == ({1}, {1, 2, 3, 4})


def test_vocab_size_sets_the_id_range() -> None:
    small = well_formed(FUZZY_RECALL, options(FUZZY_RECALL), n=50)
    large = well_formed(FUZZY_RECALL, options(FUZZY_RECALL, vocab_size=64), n=50)
    assert max_id(small) == 15 and max_id(large) == 63  # the filler is the last id
    assert FUZZY_RECALL.vocabulary(options(FUZZY_RECALL, vocab_size=8, k_motif_size=2))[-1] == "_"


def test_padding_is_what_the_pairs_leave() -> None:
    opts = options(FUZZY_RECALL)
    pads = [runs(seq, 7, 15)[0] for seq in FUZZY_RECALL.make(200, 1, opts)]
    # the pairs stop when one more of the longest (6 tokens) could crowd out the final query (up to 6)
    assert max(pads) <= 10 and min(pads) == 0


def test_the_context_free_guess_is_the_most_frequent_answer() -> None:
    opts = options(FUZZY_RECALL)
    train, valid = FUZZY_RECALL.make(200, 0, opts), FUZZY_RECALL.make(200, 1, opts)
    assert 0.1 < FUZZY_RECALL.context_free(train, valid, opts) < 0.2  # about 1 / 8 value tokens


@pytest.mark.parametrize("name,value,expected,others", [
    ("seq_len", 10, "seq_len must be at least 11", {}),
    ("seq_len", 14, "seq_len must be at least 15", {"k_motif_size": 4, "v_motif_size": 4}),
    ("k_motif_size", 4, "expected at most 3", {"vocab_size": 8}),
    ("v_motif_size", 5, "expected at most 4", {"vocab_size": 8}),
    ("k_motif_size", 0, "expected an integer >= 1", {}),
    ("vocab_size", 2, "expected an integer in [3, 65536]", {}),
    ("num_valid", 1.5, "expected an integer >= 0", {}),
])
def test_bad_options_are_refused(name: str, value: Any, expected: str, others: dict[str, Any]) -> None:
    assert_refused(FUZZY_RECALL, name, value, expected, **others)
