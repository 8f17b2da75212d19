"""Shared helpers for the baseline-mixer tests: tiny float64 modules and inputs."""

from __future__ import annotations

import torch
from torch import nn

from synthformer.mixers import DynamicConv, LightConv, Linformer

D_MODEL, HEADS, MAX_LEN = 8, 2, 12
CONV_CLASSES = [LightConv, DynamicConv]
ALL_CLASSES = [LightConv, DynamicConv, Linformer]


def build(
    cls: type[nn.Module],
    causal: bool = False,
    dtype: torch.dtype = torch.float64,
    seed: int = 0,
    d_model: int = D_MODEL,
    n_heads: int = HEADS,
    max_len: int = MAX_LEN,
    **options,
) -> nn.Module:
    """A mixer in eval mode with non-zero biases (zero-initialized biases would hide bias bugs)."""
    torch.manual_seed(seed)
    m = cls(d_model, n_heads, max_len, causal=causal, **options).to(dtype).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("bias"):
                p.normal_(0.0, 0.3)
    return m


def inputs(
    batch: int = 3, length: int = 9, d_model: int = D_MODEL, dtype: torch.dtype = torch.float64, seed: int = 1
) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, length, d_model, generator=g, dtype=dtype)


def padding(batch: int, length: int) -> torch.Tensor:
    """(B, L) bool, True = padding: sample 0 unpadded, sample b >= 1 right-padded by b + 1 positions (at least
    one real position kept), and sample 2 also padded at position 1 (a hole, not only a tail)."""
    mask = torch.zeros(batch, length, dtype=torch.bool)
    for b in range(1, batch):
        mask[b, max(1, length - b - 1) :] = True
    if batch > 2 and length > 3:
        mask[2, 1] = True
    return mask
