"""Baseline token mixers that are not synthetic attention: LightConv, DynamicConv (Wu et al., 2019) and
Linformer (Wang et al., 2020).

Each satisfies :class:`synthformer.attention.TokenMixer` (the contract, in
:mod:`synthformer.attention.contract`) and registers itself by name with
:func:`synthformer.attention.register` when this package is imported (``import synthformer`` does), so
``synthformer.attention.build_mixer("LightConv", ...)`` builds it like any attention kind.
"""

from __future__ import annotations

# isort: off
# Importing a mixer's module registers it; this order (the papers' order) is the order of available_mixers().
from .lightconv import LightConv
from .dynamicconv import DynamicConv
from .linformer import Linformer

# isort: on
from ._conv import ConvCache, band_matrix, choose_impl, depthwise_conv_band, depthwise_conv_unfold

__all__ = [
    "ConvCache",
    "DynamicConv",
    "LightConv",
    "Linformer",
    "band_matrix",
    "choose_impl",
    "depthwise_conv_band",
    "depthwise_conv_unfold",
]
