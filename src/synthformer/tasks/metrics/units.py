"""Scores in the units the task types report: perplexity and bits per character or byte from a mean loss in nats,
and accuracy over the targets that count."""

from __future__ import annotations

import math
from typing import Any

import torch

__all__ = ["accuracy", "bits_per_byte", "bits_per_character", "perplexity"]


def perplexity(mean_nats: float) -> float:
    """``exp(mean cross-entropy in nats per token)``; ``inf`` instead of an overflow error."""
    try:
        return math.exp(mean_nats)
    except OverflowError:
        return math.inf


def _bits_per_unit(mean_nats: float, num_tokens: int | None, num_units: int | None) -> float:
    if (num_tokens is None) != (num_units is None):
        raise ValueError("give both num_tokens and the number of characters/bytes, or neither")
    total_nats = mean_nats * (num_tokens if num_tokens is not None else 1)
    units = num_units if num_units is not None else 1
    if units <= 0:
        raise ValueError(f"the number of characters/bytes must be > 0, got {units}")
    return total_nats / units / math.log(2)


def bits_per_character(mean_nats: float, num_tokens: int | None = None, num_chars: int | None = None) -> float:
    """Bits per character from a mean loss in nats per token.

    For a character-level model (one token per character) pass only ``mean_nats``. For a subword model pass
    the number of tokens scored and the number of characters of the same text, so the total information
    ``mean_nats * num_tokens`` is spread over the characters.
    """
    return _bits_per_unit(mean_nats, num_tokens, num_chars)


def bits_per_byte(mean_nats: float, num_tokens: int | None = None, num_bytes: int | None = None) -> float:
    """Bits per byte (UTF-8) from a mean loss in nats per token; see :func:`bits_per_character`."""
    return _bits_per_unit(mean_nats, num_tokens, num_bytes)


def accuracy(predictions: Any, targets: Any, ignore_index: int | None = -100) -> float:
    """Fraction of correct predictions, ignoring targets equal to ``ignore_index``.

    ``predictions`` may be class ids with the shape of ``targets``, or scores/logits with one more (last)
    dimension, in which case the arg-max is taken.
    """
    pred = torch.as_tensor(predictions)
    tgt = torch.as_tensor(targets)
    if pred.ndim == tgt.ndim + 1:
        pred = pred.argmax(dim=-1)
    if pred.shape != tgt.shape:
        raise ValueError(f"predictions {tuple(pred.shape)} and targets {tuple(tgt.shape)} do not match")
    keep = tgt != ignore_index if ignore_index is not None else torch.ones_like(tgt, dtype=torch.bool)
    n = int(keep.sum())
    if n == 0:
        return math.nan
    return float(((pred == tgt) & keep).sum()) / n
