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

__all__ = ["available_mixers", "build_mixer", "resolve_mixer", "takes_head_dim"]


def available_mixers() -> list[str]:
    """Every name ``build_mixer`` accepts as a single part: attention kinds, then the whole token mixers."""
    return registered_kinds() + registered_mixers()


def takes_head_dim(kind: str) -> bool:
    """Whether the mixer ``kind`` names takes a ``head_dim`` (a head width other than ``d_model // n_heads``):
    an attention kind or mixture whose parts all declare ``supports_head_dim`` (every kind of the library), or a
    whole token mixer that declares the option (Linformer). LightConv and DynamicConv do not: their heads are
    groups of the ``d_model`` channels sharing one kernel, with no width of their own.

    Raises:
        ValueError: an unknown name (as :func:`resolve_mixer`).
    """
    if is_whole_mixer(kind):
        return "head_dim" in get_mixer(kind).option_defaults
    return all(part.supports_head_dim for part in parse_kind(kind))


def resolve_mixer(kind: str, **options: Any) -> tuple[type[nn.Module], dict[str, Any]]:
    """The token-mixer class that ``kind`` names and the options to give it.

    A whole token mixer (``"LightConv"``) is its registered class with ``options`` unchanged; an attention kind or
    mixture (``"R+V"``) is :class:`SynthesizerAttention` with ``kind`` added to the options. Either way
    ``cls(d_model, n_heads, max_len, causal=..., dropout=..., **opts)`` builds the mixer and
    ``cls.num_params(d_model, n_heads, max_len, **opts)`` counts its trainable parameters.

    ``head_dim=None`` (the default head width) is dropped for a whole mixer that has no such option.

    Raises:
        ValueError: an unknown name (the message lists the kinds and the whole mixers) or a malformed mixture; a
            ``head_dim`` for a whole mixer without a head width of its own (:func:`takes_head_dim`).
    """
    if is_whole_mixer(kind):
        cls = get_mixer(kind)
        if "head_dim" in options and "head_dim" not in cls.option_defaults:
            if options["head_dim"] is not None:
                raise ValueError(f"token mixer {kind!r} takes no head_dim (got head_dim={options['head_dim']!r}): "
                                 "its heads have no width of their own to set; leave head_dim unset, or use an "
                                 "attention kind or a mixer that declares the option")
            options = {k: v for k, v in options.items() if k != "head_dim"}
        return cls, dict(options)
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
