"""``mixing:selective_copy``: MAD's selective copying (Poli et al. 2024; written here from the paper's and
MAD-Lab's descriptions, no code taken).

A sequence holds ``num_tokens_to_copy`` data tokens (drawn with replacement) at random positions among blank tokens
``_``; then a copy signal, after which the data tokens are to be produced in their order of occurrence. The answers
are those output positions. With ``seq_len = 10`` and 3 tokens to copy::

    _ t4 _ _ t1 t4 _  copy  t4 t1 t4
    '--- data region ---'   ^^ ^^ ^^  answers: the data tokens, in order

Layout: ``seq_len`` is the model's input length, as in the rest of this suite: a sequence has ``seq_len + 1``
tokens, a data region of ``seq_len - num_tokens_to_copy`` tokens (the data tokens' positions a uniform choice), the
copy signal, and the ``num_tokens_to_copy`` outputs. The region keeps at least one blank (``seq_len >= 2
num_tokens_to_copy + 1``, MAD's condition), so the copy is selective.

One choice differs from MAD, forced by the suite's form (a causal language model scored at answer positions): the
outputs are teacher-forced, i.e. the model reads the outputs before the one it predicts, where MAD feeds blanks
after the copy signal. The model still has to find the data tokens among the blanks and keep their order; knowing
which it has produced already is given to it, as to any language model that copies.

Vocabulary (``vocab_size`` ids): the data tokens ``t0 .. t<vocab_size-3>``, the blank ``_`` and the signal
``copy`` (MAD's default 16: 14 data tokens).

Trivial baseline: the best context-free guess, the most frequent training data token (about ``1 / (vocab_size -
2)``).
"""

from __future__ import annotations

import random
from typing import Any

from .mad_options import MAX_VOCAB, SPLIT_DEFAULTS, check_counts, check_int, context_free_unigram, option_error
from .sequences import MixingBenchmark, MixingSequence, register_benchmark

__all__ = ["SELECTIVE_COPY", "selective_copy_sequences", "selective_copy_vocabulary"]

NAME = "selective_copy"
DEFAULTS: dict[str, Any] = {"vocab_size": 16, "seq_len": 256, "num_tokens_to_copy": 16, **SPLIT_DEFAULTS}


def _check(opts: dict[str, Any]) -> dict[str, Any]:
    check_int(NAME, opts, "vocab_size", 3, MAX_VOCAB)
    copies = check_int(NAME, opts, "num_tokens_to_copy", 1)
    seq_len = check_int(NAME, opts, "seq_len", 1)
    if seq_len < 2 * copies + 1:
        raise option_error(NAME, "seq_len", f"{copies} tokens to copy, their {copies} outputs and at least one blank "
                                            f"need seq_len >= {2 * copies + 1}, got {seq_len}")
    check_counts(NAME, opts)
    return dict(opts)


def selective_copy_vocabulary(opts: dict[str, Any]) -> list[str]:
    """The data tokens ``t*``, the blank ``_``, the copy signal ``copy``."""
    return [*(f"t{i}" for i in range(int(opts["vocab_size"]) - 2)), "_", "copy"]


def selective_copy_sequences(n: int, seed: int, opts: dict[str, Any]) -> list[MixingSequence]:
    """``n`` sequences of ``seq_len + 1`` tokens (see the module docstring), reproducibly for ``seed``."""
    data = int(opts["vocab_size"]) - 2
    blank, signal = data, data + 1
    copies = int(opts["num_tokens_to_copy"])
    region = int(opts["seq_len"]) - copies
    rng = random.Random(seed)
    out: list[MixingSequence] = []
    for _ in range(n):
        to_copy = [rng.randrange(data) for _ in range(copies)]
        tokens = [blank] * region
        for place, token in zip(sorted(rng.sample(range(region), copies)), to_copy, strict=True):
            tokens[place] = token
        tokens += [signal, *to_copy]
        out.append(MixingSequence(tuple(tokens), tuple(range(region + 1, region + 1 + copies))))
    return out


SELECTIVE_COPY = register_benchmark(MixingBenchmark(
    name=NAME, summary="MAD selective copying: the data tokens scattered among blanks, copied in order after a signal",
    option_defaults=DEFAULTS, check=_check, vocabulary=selective_copy_vocabulary, make=selective_copy_sequences,
    length=lambda opts: int(opts["seq_len"]) + 1, context_free=context_free_unigram))
