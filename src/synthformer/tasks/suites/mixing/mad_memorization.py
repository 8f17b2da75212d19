"""``mixing:memorization``: MAD's memorization (Poli et al. 2024; written here from the paper's and MAD-Lab's
descriptions, no code taken).

One fixed map from keys to values (the "facts") for the whole benchmark, drawn from ``map_seed`` and not from the
split seed, so train, valid and test share it. A sequence is keys, each followed by its value; every value is an
answer. The value depends on the key alone, so it cannot be read from the context: the model has to hold the map
in its weights. With ``seq_len = 6``::

    k17 v3  k2 v90  k40 v7  k5
        ^^     ^^^      ^^   answers: the fixed map's value of the key just read

Layout: ``seq_len`` (even) is the model's input length, as in the rest of this suite: a sequence is ``seq_len / 2``
pairs and one more key (``seq_len + 1`` tokens; the model reads the pairs, and the last key is only the target of
the last input, never an answer). The keys of a sequence are distinct, so no value can be copied from an earlier
pair of the same key (with repeats, recall in context would answer part of them and the benchmark would no longer
measure memorization alone).

Evaluation: MAD scores memorization on the facts it trained on (its test sequences are drawn from the same map).
Here valid and test are new sequences, drawn with their own seeds, of the same facts: they ask what the model
memorized, in other orders and company. With MAD's defaults (256 training sequences of 16 pairs over 128 keys)
every fact is in the training split about 32 times.

Vocabulary (``vocab_size`` ids): keys ``k0 .. k<K-1>`` with ``K = vocab_size // 2`` and values ``v0 .. v<V-1>``
(the rest); the map sends the keys to ``K`` distinct values. MAD spends one id on an "insert" token its layout
needs (the value is the target at that token's position); the causal layout here puts the value itself there.

Trivial baseline: the best context-free guess, the most frequent training value (about ``1 / K``). A guess that
knows the key is no baseline: the key is context, and knowing its value is the task.
"""

from __future__ import annotations

import functools
import random
from typing import Any

from .mad_options import MAX_VOCAB, check_counts, check_even, check_int, context_free_unigram, option_error
from .sequences import MixingBenchmark, MixingSequence, register_benchmark

__all__ = ["MEMORIZATION", "memorization_map", "memorization_sequences", "memorization_vocabulary"]

NAME = "memorization"
#: MAD's memorization setting: 256 training sequences; its evaluation size (1,280) for valid and test.
DEFAULTS: dict[str, Any] = {"vocab_size": 256, "seq_len": 32, "num_train": 256, "num_valid": 1_280,
                            "num_test": 1_280, "seed": 0, "map_seed": 12345}


def _keys(opts: dict[str, Any]) -> int:
    return int(opts["vocab_size"]) // 2


def _check(opts: dict[str, Any]) -> dict[str, Any]:
    check_int(NAME, opts, "vocab_size", 4, MAX_VOCAB)
    seq_len = check_even(NAME, opts, "seq_len", 2, "the sequence is whole key-value pairs of two tokens")
    check_int(NAME, opts, "map_seed", 0)
    keys = _keys(opts)
    if seq_len // 2 + 1 > keys:
        raise option_error(NAME, "seq_len", f"a sequence has seq_len / 2 + 1 distinct keys and vocab_size "
                                            f"{opts['vocab_size']} gives {keys}; expected seq_len at most "
                                            f"{2 * (keys - 1)}, got {seq_len}")
    check_counts(NAME, opts)
    return dict(opts)


def memorization_vocabulary(opts: dict[str, Any]) -> list[str]:
    """The keys ``k*`` then the values ``v*``."""
    keys = _keys(opts)
    return [*(f"k{i}" for i in range(keys)), *(f"v{i}" for i in range(int(opts["vocab_size"]) - keys))]


@functools.lru_cache(maxsize=16)
def _map(vocab_size: int, map_seed: int) -> tuple[int, ...]:
    keys = vocab_size // 2
    return tuple(keys + v for v in random.Random(map_seed).sample(range(vocab_size - keys), keys))


def memorization_map(opts: dict[str, Any]) -> dict[int, int]:
    """The benchmark's facts: key id -> value id (the same for every split; only ``map_seed`` and
    ``vocab_size`` decide it)."""
    return dict(enumerate(_map(int(opts["vocab_size"]), int(opts["map_seed"]))))


def memorization_sequences(n: int, seed: int, opts: dict[str, Any]) -> list[MixingSequence]:
    """``n`` sequences of ``seq_len + 1`` tokens (see the module docstring), reproducibly for ``seed``."""
    facts = _map(int(opts["vocab_size"]), int(opts["map_seed"]))
    pairs = int(opts["seq_len"]) // 2
    rng = random.Random(seed)
    out: list[MixingSequence] = []
    for _ in range(n):
        keys = rng.sample(range(len(facts)), pairs + 1)
        tokens = [token for key in keys[:-1] for token in (key, facts[key])] + [keys[-1]]
        out.append(MixingSequence(tuple(tokens), tuple(range(1, 2 * pairs, 2))))
    return out


MEMORIZATION = register_benchmark(MixingBenchmark(
    name=NAME, summary="MAD memorization: the values of a fixed key-value map, learned from the training sequences",
    option_defaults=DEFAULTS, check=_check, vocabulary=memorization_vocabulary, make=memorization_sequences,
    length=lambda opts: int(opts["seq_len"]) + 1, context_free=context_free_unigram))
