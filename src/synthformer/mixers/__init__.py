"""Baseline token mixers that are not synthetic attention: LightConv, DynamicConv (Wu et al., 2019) and
Linformer (Wang et al., 2020).

All follow the token-mixer contract of ``docs/CONTRACTS.md``:
``Cls(d_model, n_heads, max_len, causal=False, dropout=0.0, **options)``,
``forward(x (B, L, d_model), key_padding_mask=None, cache=None) -> (B, L, d_model)`` (or ``(y, cache)`` with a
cache), ``init_cache(batch_size, device=None, dtype=None)``, and ``num_params_formula(d_model, n_heads, max_len,
**options)``. ``TOKEN_MIXERS`` maps each kind's name to its class.
"""

from __future__ import annotations

from torch import nn

from ._conv import ConvCache, band_matrix, choose_impl, depthwise_conv_band, depthwise_conv_unfold
from .dynamicconv import DynamicConv
from .lightconv import LightConv
from .linformer import Linformer

TOKEN_MIXERS: dict[str, type[nn.Module]] = {
    "LightConv": LightConv,
    "DynamicConv": DynamicConv,
    "Linformer": Linformer,
}

__all__ = [
    "TOKEN_MIXERS",
    "ConvCache",
    "DynamicConv",
    "LightConv",
    "Linformer",
    "band_matrix",
    "choose_impl",
    "depthwise_conv_band",
    "depthwise_conv_unfold",
]
