"""Attention dropout keep masks drawn four to a random 64-bit word.

Why: on the CPU PyTorch's generator is serial, and attention dropout draws one number per entry of every
(heads, L, L) probability matrix, which profiles found the largest single operator of every synthesized kind
(docs/benchmarks.md, "Causal against bidirectional training", "Dropout masks"). Here one generator call fills 64
bits, read as four 16-bit lanes, each lane deciding one entry: a quarter of ``torch.rand``'s calls.

The choice: the drop probability is quantized to 1/65536, ``P(drop) = round(p * 65536) / 65536`` (off by at most
7.6e-6; FlashAttention's CUDA kernels quantize it to 1/256), while the kept entries are scaled by ``1 / (1 - p)``
as everywhere else in the library, so an entry's expectation is off by at most 8.5e-6 relative (p <= 0.1). A mask
is a function of the generator's state only, so a generator seeded again redraws it bitwise (``fused.keep_mask``).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["LEVELS", "drop_probability", "dropout", "keep_mask"]

#: values of one 16-bit lane: the resolution of the drop probability
LEVELS = 1 << 16
_LANES = 4  # 16-bit lanes per int64 word


def _threshold(p: float) -> int:
    """Lanes (int16, uniform over [-32768, 32767]) below this are dropped: ``round(p * LEVELS)`` of them."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability must be in [0, 1), got {p!r}")
    return -(LEVELS // 2) + round(p * LEVELS)


def drop_probability(p: float) -> float:
    """The probability with which :func:`keep_mask` really drops an entry for a requested ``p``."""
    return (_threshold(p) + LEVELS // 2) / LEVELS


def _lanes(shape: tuple[int, ...], device: torch.device, generator: torch.Generator | None) -> Tensor:
    """``shape`` uniform int16 values, four from each random int64 word."""
    n = math.prod(shape)
    words = torch.empty(-(-n // _LANES), dtype=torch.int64, device=device)  # ceil(n / 4) words
    # from = int64's minimum and to = its maximum: every bit random (to is exclusive: one value of 2^64 is never
    # drawn, a bias of 2^-64)
    words.random_(-(2**63), 2**63 - 1, generator=generator)
    return words.view(torch.int16)[:n].view(shape)  # (ceil(n/4),) int64 -> (4 ceil(n/4),) int16 -> shape


def keep_mask(shape: tuple[int, ...], p: float, device: torch.device | str,
              generator: torch.Generator | None = None) -> Tensor:
    """Bool ``shape``, True where an entry is kept (probability ``1 - drop_probability(p)``), drawn from
    ``generator`` (None: torch's default generator of ``device``).

    Raises:
        ValueError: ``p`` outside [0, 1).
    """
    threshold = _threshold(p)
    return _lanes(tuple(shape), torch.device(device), generator) >= threshold


def dropout(probs: Tensor, p: float, generator: torch.Generator | None = None) -> Tensor:
    """``F.dropout(probs, p)`` in training with the mask of :func:`keep_mask`: dropped entries zeroed, kept ones
    scaled by ``1 / (1 - p)``; differentiable in ``probs`` (autograd keeps the 1-byte mask, not a float one).
    ``p == 0`` returns ``probs`` itself."""
    if p == 0.0:
        return probs
    threshold = _threshold(p)
    dropped = _lanes(tuple(probs.shape), probs.device, generator) < threshold  # True where dropped
    # scale first, then zero in place: one new tensor instead of masked_fill's copy plus the product (a
    # product by a Python number saves nothing for the backward, masked_fill_ only the bool mask)
    return probs.mul(1.0 / (1.0 - p)).masked_fill_(dropped, 0.0)
