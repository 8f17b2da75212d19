"""``build_mixer``: any token mixer by name, synthetic attention kinds and the non-attention baselines alike."""

from __future__ import annotations

from typing import Any

from torch import nn

from .registry import parse_kind, registered_kinds
from .shell import SynthesizerAttention


def _baselines() -> dict[str, type[nn.Module]]:
    # imported lazily: the baselines live in synthformer.mixers, which itself builds on the attention package
    from synthformer import mixers

    return dict(getattr(mixers, "TOKEN_MIXERS", {}))


def available_mixers() -> list[str]:
    """Every name ``build_mixer`` accepts as a single part: attention kinds, then the baseline mixers."""
    return registered_kinds() + list(_baselines())


def build_mixer(
    kind: str,
    d_model: int,
    n_heads: int,
    max_len: int,
    causal: bool = False,
    dropout: float = 0.0,
    **options: Any,
) -> nn.Module:
    """Build the token mixer named ``kind`` with the contract of ``docs/CONTRACTS.md``.

    ``kind`` is a synthetic attention kind or mixture (``"R+V"``) or a baseline mixer (``"LightConv"``,
    ``"DynamicConv"``, ``"Linformer"``). Unknown names raise ``ValueError`` listing the valid ones.
    """
    baselines = {name.lower(): cls for name, cls in _baselines().items()}
    if isinstance(kind, str) and kind.strip().lower() in baselines:
        return baselines[kind.strip().lower()](d_model, n_heads, max_len, causal=causal, dropout=dropout, **options)
    try:
        parse_kind(kind)
    except ValueError as err:
        if baselines:
            raise ValueError(f"{err}; baseline mixers: {', '.join(_baselines())}") from None
        raise
    return SynthesizerAttention(d_model, n_heads, max_len, kind=kind, causal=causal, dropout=dropout, **options)
