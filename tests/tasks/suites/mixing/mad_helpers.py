"""Checks every MAD benchmark's sequences pass: seeded, exactly ``length(opts)`` long, ids in the vocabulary."""

from __future__ import annotations

from typing import Any

import pytest

from synthformer.common.config import ConfigError
from synthformer.tasks.suites.mixing.sequences import MixingBenchmark, MixingSequence


def options(bench: MixingBenchmark, **changes: Any) -> dict[str, Any]:
    """The benchmark's checked options: its defaults with ``changes``."""
    return bench.check({**bench.option_defaults, **changes})


def well_formed(bench: MixingBenchmark, opts: dict[str, Any], n: int = 40, seed: int = 3) -> list[MixingSequence]:
    """``n`` sequences, each checked: ``length(opts)`` tokens, ids in the ``vocab_size`` ids of the vocabulary."""
    vocabulary = bench.vocabulary(opts)
    assert len(vocabulary) == opts["vocab_size"] == len(set(vocabulary))
    seqs = bench.make(n, seed, opts)
    assert len(seqs) == n
    for seq in seqs:
        assert len(seq.tokens) == bench.length(opts) == opts["seq_len"] + 1
        assert all(0 <= t < len(vocabulary) for t in seq.tokens)
        assert seq.answers and seq.answers[0] >= 1
    return seqs


def assert_seeded(bench: MixingBenchmark, opts: dict[str, Any]) -> None:
    """The same seed draws the same sequences; another seed other ones."""
    assert bench.make(20, 5, opts) == bench.make(20, 5, opts)
    assert bench.make(20, 5, opts) != bench.make(20, 6, opts)


def assert_refused(bench: MixingBenchmark, name: str, value: Any, expected: str, **others: Any) -> None:
    """``check`` refuses ``name: value`` (with ``others`` set too), naming the option, the value and ``expected``."""
    with pytest.raises(ConfigError, match=rf"task\.generator_options\.{name}: ") as err:
        options(bench, **others, **{name: value})
    assert repr(value) in str(err.value) or str(value) in str(err.value)
    assert expected in str(err.value) and f"mixing:{bench.name}" in str(err.value)


def max_id(seqs: list[MixingSequence]) -> int:
    return max(max(s.tokens) for s in seqs)
