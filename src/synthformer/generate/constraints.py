"""Constraints on the next token that summarization decoders usually offer: a minimum output length and n-gram
repetition blocking (fairseq's ``--min-len`` and ``--no-repeat-ngram-size``, Hugging Face's ``min_length`` and
``no_repeat_ngram_size``).

Both edit the next-token log-probabilities of a search step in place, setting banned tokens to ``-inf``:

* ``min_length`` m: ``<eos>`` is banned while fewer than m tokens have been generated, so every output has at
  least m tokens before its ``<eos>`` (a search that reaches ``max_new_tokens`` first stops there).
* ``no_repeat_ngram_size`` n: a token that would complete an n-gram already present in the row's generated
  tokens is banned, so no n-gram occurs twice in an output (``<bos>`` is not part of any n-gram).
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["apply_constraints", "banned_ngram_tokens", "check_constraints"]


def check_constraints(min_length: int, no_repeat_ngram_size: int, max_new_tokens: int) -> None:
    """Raise ``ValueError`` naming the bad value: both must be integers >= 0 and ``min_length < max_new_tokens``
    (the output needs room for its ``<eos>``)."""
    for name, value in (("min_length", min_length), ("no_repeat_ngram_size", no_repeat_ngram_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    if min_length and min_length >= max_new_tokens:
        raise ValueError(f"min_length {min_length} leaves no room for <eos> within max_new_tokens "
                         f"{max_new_tokens}; expected min_length < max_new_tokens")


def banned_ngram_tokens(generated: list[int], n: int) -> set[int]:
    """The tokens that would repeat an n-gram of ``generated`` if appended to it.

    Example: ``banned_ngram_tokens([5, 6, 7, 5], 2) == {6}`` (``5 6`` occurred; ``5`` is the last token).
    """
    if n < 1 or len(generated) < n - 1:
        return set()
    if n == 1:
        return set(generated)
    tail = generated[len(generated) - n + 1 :]
    return {generated[i + n - 1] for i in range(len(generated) - n + 1) if generated[i : i + n - 1] == tail}


def apply_constraints(logp: Tensor, tokens: Tensor, step: int, eos_id: int, min_length: int,
                      no_repeat_ngram_size: int) -> Tensor:
    """Ban what the constraints forbid at this step, in place, and return ``logp``.

    Args:
        logp: (N, V) next-token log-probabilities.
        tokens: (N, 1 + step) the rows' prefixes, ``<bos>`` first.
        step: tokens generated so far (0 at the first step).
        eos_id: the end token.
        min_length: ban ``<eos>`` while ``step < min_length`` (0: never).
        no_repeat_ngram_size: ban tokens that would repeat an n-gram of this size (0: none).
    """
    if step < min_length:
        logp[:, eos_id] = float("-inf")
    if no_repeat_ngram_size and step >= no_repeat_ngram_size - 1:
        rows: list[int] = []
        cols: list[int] = []
        # a Python loop over rows: a handful of rows of at most a few hundred tokens per step
        for row, generated in enumerate(tokens[:, 1:].tolist()):
            for token in banned_ngram_tokens(generated, no_repeat_ngram_size):
                rows.append(row)
                cols.append(token)
        if rows:
            logp[torch.tensor(rows, device=logp.device), torch.tensor(cols, device=logp.device)] = float("-inf")
    return logp
