"""``mixing:fuzzy_recall``: MAD's fuzzy in-context recall (Poli et al. 2024; written here from the paper's and
MAD-Lab's descriptions, no code taken), multi-query as MAD runs it.

Recall where keys and values are *motifs*: runs of 1 .. ``k_motif_size`` adjacent key tokens and 1 ..
``v_motif_size`` adjacent value tokens (the tokens of a motif distinct, its length uniform, MAD's defaults 3 and
3). Each sequence has its own dictionary from key motifs to value motifs; the sequence is key-value pairs from it,
and every token of a value motif whose key motif already appeared earlier is an answer. Key and value tokens come
from disjoint vocabularies, so where a motif ends is visible (a key is a maximal run of key tokens). With
``seq_len = 15``::

    _ _ _ _  k2 k5 v0  k1 v3 v7  k2 k5 v0  k1 v3 v7
                                       ^^     ^^ ^^   answers: the value motifs of key motifs seen before

Layout: ``seq_len`` is the model's input length, as in the rest of this suite: a sequence has ``seq_len + 1``
tokens. Pairs are drawn while one more of the longest size would still leave room for a final query (a pair whose
key motif appeared before, so every sequence has an answer, as in MAD); the sequence then starts with as many
filler tokens ``_`` as make it exactly ``seq_len + 1`` long (MAD pads at the front too; the filler is never an
answer). ``seq_len`` must hold two pairs of the longest size: ``seq_len >= 2 (k_motif_size + v_motif_size) - 1``.

One choice differs from MAD: every split draws its key motifs as training does (MAD's test set asks keys of the
longest size only), so that valid and test measure the task the model was trained on.

Vocabulary (``vocab_size`` ids): keys ``k0 .. k<K-1>`` with ``K = (vocab_size - 1) // 2``, values ``v0 ..
v<V-1>`` with ``V = vocab_size - 1 - K``, then the filler ``_`` (MAD's default 16: 7 key and 8 value tokens).

Trivial baseline: the best context-free guess, the most frequent training answer token (about ``1 / V``).
"""

from __future__ import annotations

import random
from typing import Any

from .mad_options import MAX_VOCAB, SPLIT_DEFAULTS, check_counts, check_int, context_free_unigram, option_error
from .sequences import MixingBenchmark, MixingSequence, register_benchmark

__all__ = ["FUZZY_RECALL", "fuzzy_recall_sequences", "fuzzy_recall_vocabulary"]

NAME = "fuzzy_recall"
DEFAULTS: dict[str, Any] = {"vocab_size": 16, "seq_len": 128, "k_motif_size": 3, "v_motif_size": 3,
                            **SPLIT_DEFAULTS}


def _sizes(opts: dict[str, Any]) -> tuple[int, int]:
    """(key tokens, value tokens); the filler is the last id."""
    data = int(opts["vocab_size"]) - 1
    return data // 2, data - data // 2


def _check(opts: dict[str, Any]) -> dict[str, Any]:
    check_int(NAME, opts, "vocab_size", 3, MAX_VOCAB)
    k_max = check_int(NAME, opts, "k_motif_size", 1)
    v_max = check_int(NAME, opts, "v_motif_size", 1)
    keys, values = _sizes(opts)
    if k_max > keys:
        raise option_error(NAME, "k_motif_size", f"a key motif has distinct tokens and vocab_size "
                                                 f"{opts['vocab_size']} gives {keys} key tokens; expected at most "
                                                 f"{keys}, got {k_max}")
    if v_max > values:
        raise option_error(NAME, "v_motif_size", f"a value motif has distinct tokens and vocab_size "
                                                 f"{opts['vocab_size']} gives {values} value tokens; expected at "
                                                 f"most {values}, got {v_max}")
    least = 2 * (k_max + v_max) - 1
    seq_len = check_int(NAME, opts, "seq_len", 1)
    if seq_len < least:
        raise option_error(NAME, "seq_len", f"two pairs of the longest motifs take {least + 1} tokens, so seq_len "
                                            f"must be at least {least}, got {seq_len}")
    check_counts(NAME, opts)
    return dict(opts)


def fuzzy_recall_vocabulary(opts: dict[str, Any]) -> list[str]:
    """The key tokens ``k*``, the value tokens ``v*``, then the filler ``_``."""
    keys, values = _sizes(opts)
    return [*(f"k{i}" for i in range(keys)), *(f"v{i}" for i in range(values)), "_"]


def _motif(rng: random.Random, first: int, count: int, longest: int) -> tuple[int, ...]:
    """1 .. ``longest`` distinct tokens of ids ``first .. first + count - 1``, in a random order."""
    return tuple(first + t for t in rng.sample(range(count), rng.randint(1, longest)))


def fuzzy_recall_sequences(n: int, seed: int, opts: dict[str, Any]) -> list[MixingSequence]:
    """``n`` sequences of ``seq_len + 1`` tokens (see the module docstring), reproducibly for ``seed``."""
    keys, values = _sizes(opts)
    k_max, v_max = int(opts["k_motif_size"]), int(opts["v_motif_size"])
    total, filler = int(opts["seq_len"]) + 1, keys + values
    room = total - (k_max + v_max)  # what the pairs before the final query may take
    rng = random.Random(seed)
    out: list[MixingSequence] = []
    for _ in range(n):
        table: dict[tuple[int, ...], tuple[int, ...]] = {}  # the pairs shown so far, in order of appearance
        tokens: list[int] = []
        answers: list[int] = []
        final = False
        while True:
            if final:
                key = rng.choice(list(table))
            else:
                key = _motif(rng, 0, keys, k_max)
            value = table.get(key) or _motif(rng, keys, values, v_max)
            if not final and len(tokens) + len(key) + len(value) > room:
                final = True
                continue
            start = len(tokens) + len(key)
            if key in table:
                answers += range(start, start + len(value))
            table[key] = value
            tokens += [*key, *value]
            if final:
                break
        pad = total - len(tokens)
        out.append(MixingSequence(tuple([filler] * pad + tokens), tuple(a + pad for a in answers)))
    return out


FUZZY_RECALL = register_benchmark(MixingBenchmark(
    name=NAME, summary="MAD fuzzy in-context recall: recall of value motifs after key motifs of 1 to 3 tokens",
    option_defaults=DEFAULTS, check=_check, vocabulary=fuzzy_recall_vocabulary, make=fuzzy_recall_sequences,
    length=lambda opts: int(opts["seq_len"]) + 1, context_free=context_free_unigram))
