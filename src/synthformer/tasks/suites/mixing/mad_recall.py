"""``mixing:recall`` and ``mixing:noisy_recall``: MAD's in-context recall and noisy in-context recall (Poli et al.
2024; written here from the paper's and MAD-Lab's descriptions, no code taken), multi-query as MAD runs them.

Each sequence has its own random dictionary from keys to values (keys and values from disjoint halves of the
vocabulary; a key's value is drawn when the key first appears, so values may repeat across keys). The sequence is
key-value pairs drawn from that dictionary, keys uniformly with repeats; every value whose key already appeared
earlier in the sequence is an answer (the first value of a key cannot be known). With ``seq_len = 12``::

    k3 v1  k0 v6  k3 v1  k5 v2  k0 v6  k3 v1  k7
                     ^^            ^^     ^^     answers: the values of keys seen before

Layout: ``seq_len`` (even) is the model's input length, as in the rest of this suite; a sequence is
``seq_len / 2`` two-token *slots* and the first token of one more (``seq_len + 1`` tokens): the model reads the
``seq_len / 2`` whole slots, and the last token, a key, is only the target of the last input (never an answer).
As in MAD, the last whole slot asks a key shown before (so every sequence has an answer) and one earlier slot is
always a pair.

Noisy recall: a slot is, with probability ``frac_noise``, two noise tokens (drawn with replacement from a noise
vocabulary of ``noise_vocab_size`` ids of its own) instead of a pair, so noise sits between the pairs in a variable
pattern and the key-value structure has gaps the model must skip (MAD: ``vocab_size`` 32 of which 16 noise,
``frac_noise`` 0.2; the forced pair and the final query are never noise)::

    k3 v1  n9 n2  k0 v6  k3 v1  n4 n4  k0 v6  k7

Vocabulary (``vocab_size`` ids in all): keys ``k0 .. k<K-1>`` then values ``v0 .. v<V-1>`` (``K + V = vocab_size -
noise_vocab_size``, ``K`` the smaller half when odd), then the noise ``n0 .. n<noise_vocab_size-1>``.

Trivial baseline: the best context-free guess, the most frequent training value (about ``1 / V``).
"""

from __future__ import annotations

import random
from typing import Any

from .mad_options import (
    MAX_VOCAB,
    SPLIT_DEFAULTS,
    check_counts,
    check_even,
    check_fraction,
    check_int,
    context_free_unigram,
    option_error,
)
from .sequences import MixingBenchmark, MixingSequence, register_benchmark

__all__ = ["NOISY_RECALL", "RECALL", "recall_sequences", "recall_vocabulary"]

RECALL_DEFAULTS: dict[str, Any] = {"vocab_size": 16, "seq_len": 128, **SPLIT_DEFAULTS}
NOISY_DEFAULTS: dict[str, Any] = {"vocab_size": 32, "noise_vocab_size": 16, "frac_noise": 0.2, "seq_len": 128,
                                  **SPLIT_DEFAULTS}


def _sizes(opts: dict[str, Any]) -> tuple[int, int, int]:
    """(keys, values, noise ids) of the vocabulary of ``opts``."""
    noise = int(opts.get("noise_vocab_size", 0))
    data = int(opts["vocab_size"]) - noise
    return data // 2, data - data // 2, noise


def _check(name: str, opts: dict[str, Any]) -> dict[str, Any]:
    noisy = "noise_vocab_size" in opts
    vocab = check_int(name, opts, "vocab_size", 2, MAX_VOCAB)
    check_even(name, opts, "seq_len", 4, "the sequence is whole key-value slots of two tokens, at least two")
    if noisy:
        noise = check_int(name, opts, "noise_vocab_size", 0)
        frac = check_fraction(name, opts, "frac_noise")
        if noise > vocab - 2:
            raise option_error(name, "noise_vocab_size", f"{noise} noise ids leave fewer than 2 of vocab_size "
                                                         f"{vocab} for the keys and values; expected at most "
                                                         f"{vocab - 2}")
        if frac > 0 and noise == 0:
            raise option_error(name, "noise_vocab_size", f"frac_noise {frac} needs noise ids; expected >= 1, got 0")
    check_counts(name, opts)
    return dict(opts)


def recall_vocabulary(opts: dict[str, Any]) -> list[str]:
    """The keys ``k*``, the values ``v*``, then the noise ``n*`` (see the module docstring)."""
    keys, values, noise = _sizes(opts)
    return [*(f"k{i}" for i in range(keys)), *(f"v{i}" for i in range(values)), *(f"n{i}" for i in range(noise))]


def recall_sequences(n: int, seed: int, opts: dict[str, Any]) -> list[MixingSequence]:
    """``n`` sequences of ``seq_len + 1`` tokens (see the module docstring), reproducibly for ``seed``."""
    keys, values, noise = _sizes(opts)
    frac = float(opts.get("frac_noise", 0.0))
    slots = int(opts["seq_len"]) // 2  # whole slots; then one more key (or noise) token
    rng = random.Random(seed)
    out: list[MixingSequence] = []
    for _ in range(n):
        table: dict[int, int] = {}
        tokens: list[int] = []
        answers: list[int] = []
        forced = rng.randrange(slots - 1)  # a slot before the final query that is always a pair
        for slot in range(slots + 1):
            if slot not in (forced, slots - 1) and frac > 0 and rng.random() < frac:
                tokens += [keys + values + rng.randrange(noise) for _ in range(2)]
            elif slot == slots:  # the extra token: a key without its value
                tokens.append(rng.randrange(keys))
            else:
                key = rng.choice(sorted(table)) if slot == slots - 1 else rng.randrange(keys)
                if key in table:
                    answers.append(len(tokens) + 1)
                else:
                    table[key] = keys + rng.randrange(values)
                tokens += [key, table[key]]
        tokens = tokens[: 2 * slots + 1]  # an extra slot of noise keeps its first token only
        out.append(MixingSequence(tuple(tokens), tuple(answers)))
    return out


def _benchmark(name: str, summary: str, defaults: dict[str, Any]) -> MixingBenchmark:
    return MixingBenchmark(
        name=name, summary=summary, option_defaults=defaults, check=lambda opts: _check(name, opts),
        vocabulary=recall_vocabulary, make=recall_sequences, length=lambda opts: int(opts["seq_len"]) + 1,
        context_free=context_free_unigram)


RECALL = register_benchmark(_benchmark(
    "recall", "MAD in-context recall: the values of keys seen before, each sequence its own dictionary",
    RECALL_DEFAULTS))
NOISY_RECALL = register_benchmark(_benchmark(
    "noisy_recall", "MAD noisy in-context recall: recall with noise tokens of their own vocabulary between the pairs",
    NOISY_DEFAULTS))
