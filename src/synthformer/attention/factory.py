"""``build_mixer``: any registered token mixer by name, synthetic attention kinds and whole mixers alike.

Names are looked up in the one registry (:mod:`.registry`); this module imports nothing from the packages
above attention. The baselines of :mod:`synthformer.mixers` register themselves when that package is imported,
which ``import synthformer`` (and so any import of a synthformer module) does.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from .registry import get_mixer, is_whole_mixer, parse_kind, registered_kinds, registered_mixers
from .shell import SynthesizerAttention

__all__ = ["available_mixers", "build_mixer", "resolve_mixer"]


def available_mixers() -> list[str]:
    """Every name ``build_mixer`` accepts as a single part: attention kinds, then the whole token mixers."""
    return registered_kinds() + registered_mixers()


def resolve_mixer(kind: str, **options: Any) -> tuple[type[nn.Module], dict[str, Any]]:
    """The token-mixer class that ``kind`` names and the options to give it.

    A whole token mixer (``"LightConv"``) is its registered class with ``options`` unchanged; an attention kind or
    mixture (``"R+V"``) is :class:`SynthesizerAttention` with ``kind`` added to the options. Either way
    ``cls(d_model, n_heads, max_len, causal=..., dropout=..., **opts)`` builds the mixer and
    ``cls.num_params(d_model, n_heads, max_len, **opts)`` counts its trainable parameters.

    Raises:
        ValueError: an unknown name (the message lists the kinds and the whole mixers) or a malformed mixture.
    """
    if is_whole_mixer(kind):
        return get_mixer(kind), dict(options)
    parse_kind(kind)  # fail here, with the list of valid names, rather than inside the shell
    return SynthesizerAttention, {"kind": kind, **options}


def build_mixer(
    kind: str,
    d_model: int,
    n_heads: int,
    max_len: int,
    causal: bool = False,
    dropout: float = 0.0,
    **options: Any,
) -> nn.Module:
    """Build the token mixer named ``kind`` (see :class:`synthformer.attention.contract.TokenMixer`).

    ``kind`` is a synthetic attention kind or mixture (``"R+V"``) or a whole token mixer (``"LightConv"``,
    ``"DynamicConv"``, ``"Linformer"``), any case, aliases included. Unknown names raise ``ValueError`` listing
    the valid ones; unknown options raise ``TypeError`` listing the valid ones.

    Returns:
        a module mapping (B, L, d_model) to (B, L, d_model).
    """
    cls, opts = resolve_mixer(kind, **options)
    return cls(d_model, n_heads, max_len, causal=causal, dropout=dropout, **opts)
