"""Which ``transformers`` models can be synthesized, and where their self-attention modules are.

Every family listed here calls its attention through ``transformers``' ``AttentionInterface`` (the function named
by ``config._attn_implementation``), which is what :mod:`.backend` replaces. A family is the module names of its
self-attention layers (cross-attention is left as it is) and the attributes that give a layer's head count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from torch import nn

from synthformer.common import ConfigError

__all__ = ["FAMILIES", "Family", "SelfAttention", "family_of", "max_positions", "self_attention_modules",
           "sliding_window", "supported_model_types"]


@dataclass(frozen=True)
class Family:
    """A family of ``transformers`` models.

    Attributes:
        model_types: the ``config.model_type`` values it covers.
        pattern: regular expression matched (``re.search``) against module names: the self-attention modules.
    """

    model_types: tuple[str, ...]
    pattern: str


FAMILIES: tuple[Family, ...] = (
    Family(("llama", "mistral", "qwen2"), r"(^|\.)layers\.\d+\.self_attn$"),
    Family(("gpt2",), r"(^|\.)h\.\d+\.attn$"),
    Family(("bert",), r"(^|\.)layer\.\d+\.attention\.self$"),
    Family(("t5",), r"(^|\.)(encoder|decoder)\.block\.\d+\.layer\.0\.SelfAttention$"),
    Family(("bart",), r"(^|\.)(encoder|decoder)\.layers\.\d+\.self_attn$"),
)


def supported_model_types() -> list[str]:
    """Every ``model_type`` :func:`synthformer.hf.synthesize.synthesize` accepts."""
    return [t for f in FAMILIES for t in f.model_types]


def family_of(config: Any) -> Family:
    """The family of a ``transformers`` config; :class:`ConfigError` naming the type for any other."""
    model_type = getattr(config, "model_type", None)
    for family in FAMILIES:
        if model_type in family.model_types:
            return family
    raise ConfigError(f"model_type={model_type!r} cannot be synthesized: expected one of "
                      f"{', '.join(supported_model_types())}")


@dataclass(frozen=True)
class SelfAttention:
    """One self-attention module of a model: its name, the module, its query heads and whether it is causal."""

    name: str
    module: nn.Module
    heads: int
    causal: bool


def _heads(module: nn.Module) -> int:
    for attr in ("num_heads", "n_heads", "num_attention_heads"):
        value = getattr(module, attr, None)
        if isinstance(value, int):
            return value
    return int(module.config.num_attention_heads)  # Llama, Mistral, Qwen2 keep it on their config only


def self_attention_modules(model: nn.Module) -> list[SelfAttention]:
    """The self-attention modules of ``model`` in module order (an encoder-decoder's encoder first)."""
    family = family_of(model.config)
    found = [SelfAttention(name, m, _heads(m), bool(getattr(m, "is_causal", False)))
             for name, m in model.named_modules() if re.search(family.pattern, name)]
    if not found:
        raise ConfigError(f"no self-attention module of a {model.config.model_type!r} model found in "
                          f"{type(model).__name__} (modules matching {family.pattern!r})")
    return found


def max_positions(config: Any) -> int | None:
    """The longest input the model's own position scheme allows (``max_position_embeddings``, GPT-2's
    ``n_positions``), or None when it has no limit (T5's relative positions)."""
    model_type = getattr(config, "model_type", None)  # Hugging Face's architecture name, not a synthformer variant
    if model_type == "t5":
        return None
    value = getattr(config, "max_position_embeddings", None)
    return int(value) if value is not None else None


def sliding_window(config: Any) -> int | None:
    """The attention window of a model that limits it (Mistral's ``sliding_window``, Qwen2's when
    ``use_sliding_window``), else None."""
    if getattr(config, "model_type", None) == "qwen2" and not getattr(config, "use_sliding_window", False):
        return None
    value = getattr(config, "sliding_window", None)
    return int(value) if value else None
