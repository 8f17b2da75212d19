"""Model variants as parts: what a variant chooses of the layer, and the table of variants by name.

A variant (the encoder-decoder's ``variant`` setting: ``"transformer"``, ``"t5"``, ...) is a
:class:`VariantParts`: the norm, the feed-forward networks, the options of every attention, the embedding scale,
where dropout goes, the initialisation. The layers, stacks and models receive these parts and call them; none of
them compares a variant's name. The built-in variants are defined in :mod:`synthformer.models.variants`, whose
``parts_of`` turns a config into its parts (the one place where the name is read); a new variant is one more
:func:`register_variant` call (``docs/extending.md``, "A model variant").

Shapes: d ``d_model``, d_ff the feed-forward width.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from torch import nn

__all__ = ["FFNFactory", "VariantParts", "get_variant", "list_variants", "register_variant", "unregister_variant"]

#: The variant of a config that has no ``variant`` setting (the LM, the classifiers).
DEFAULT_VARIANT = "transformer"


class FFNFactory(Protocol):
    """Builds a feed-forward network: ``forward(x (B, L, d), padding_mask) -> (B, L, d)``, with ``step`` and
    ``init_cache`` for decoding (:class:`~synthformer.models.layers.ReluFFN` shows the interface)."""

    def __call__(self, d_model: int, d_ff: int, kernel_size: int, causal: bool, dropout: float) -> nn.Module: ...


@dataclass(frozen=True)
class VariantParts:
    """The choices one model variant makes, as the factories and flags the layers call.

    Attributes:
        name: the registered name, the config's ``variant``.
        title: how error messages name it (``"T5"``: "ffn='conv_relu' is not T5's").
        norm: ``norm(d) -> module``: around every sublayer, and ending a pre-norm stack.
        ffns: the config's ``ffn`` names it builds -> :class:`FFNFactory`; another name is a config error.
        requires: other settings the variant fixes -> the values it takes (T5: ``{"norm": ("pre",)}``).
        attention_options: options of every attention of a layer, self and cross (T5: no biases, unscaled
            logits). Whole token mixers take no such options, so a variant with any refuses them.
        scale_embeddings: token embeddings multiplied by ``sqrt(d)``.
        stack_dropout: dropout on each stack's output, after its final norm.
        init: ``init(model, config)`` on the built encoder-decoder, or None (each module's own initialisation).
        position_bias: ``(config, bidirectional) -> module`` of a stack's relative position bias, or None; set by
            ``parts_of`` from the config's ``position_bias``, not by the variant.
    """

    name: str
    title: str
    norm: Callable[[int], nn.Module]
    ffns: Mapping[str, FFNFactory]
    requires: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    attention_options: Mapping[str, Any] = field(default_factory=dict)
    scale_embeddings: bool = True
    stack_dropout: bool = False
    init: Callable[[nn.Module, Any], None] | None = None
    position_bias: Callable[[Any, bool], nn.Module] | None = None

    def final_norm(self, d_model: int, norm: str) -> nn.Module:
        """What ends a stack: the norm after pre-norm layers (the residual stream is left un-normalized); nothing
        after post-norm ones, which already end with it."""
        return self.norm(d_model) if norm == "pre" else nn.Identity()

    def make_ffn(self, name: str, d_model: int, d_ff: int, kernel_size: int, causal: bool,
                 dropout: float) -> nn.Module:
        """The feed-forward network ``name`` (a key of :attr:`ffns`); another name is a ``ValueError``."""
        if name not in self.ffns:
            raise ValueError(f"ffn must be one of {', '.join(repr(n) for n in self.ffns)} with variant "
                             f"{self.name!r}, got {name!r}")
        return self.ffns[name](d_model, d_ff, kernel_size, causal, dropout)

    def check(self, config: Any) -> str | None:
        """The first setting of ``config`` this variant cannot build, as an error message, or None."""
        for name, needed in {**self.requires, "ffn": tuple(self.ffns)}.items():
            value = getattr(config, name)
            if value in needed:
                continue
            message = (f"{name}={value!r} is not {self.title}'s: variant={self.name!r} needs {name} "
                       f"{' or '.join(repr(n) for n in needed)}")
            takers = [repr(v.name) for v in _VARIANTS.values() if value in v.ffns] if name == "ffn" else []
            if takers:  # an FFN another variant builds: naming it points at the likely fix
                message += f" (variant {' or '.join(takers)} has it)"
            return message
        return None


_VARIANTS: dict[str, VariantParts] = {}


def register_variant(parts: VariantParts) -> VariantParts:
    """Make ``parts`` the variant named ``parts.name``; a name already taken is a ``ValueError``. Returns it."""
    if not isinstance(parts, VariantParts):
        raise TypeError(f"register_variant takes a VariantParts, got {type(parts).__name__}")
    if parts.name in _VARIANTS:
        raise ValueError(f"variant {parts.name!r} is already registered")
    _VARIANTS[parts.name] = parts
    return parts


def unregister_variant(name: str) -> None:
    """Remove a registered variant (for tests that register throw-away ones)."""
    _VARIANTS.pop(name)


def list_variants() -> list[str]:
    """Names of the registered variants, in registration order."""
    return list(_VARIANTS)


def get_variant(name: str) -> VariantParts:
    """The parts registered as ``name``; an unknown name is a ``ValueError`` naming it and the registered ones."""
    if not isinstance(name, str) or name not in _VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(repr(v) for v in _VARIANTS)} (the registered "
                         f"variants), got {name!r}")
    return _VARIANTS[name]
