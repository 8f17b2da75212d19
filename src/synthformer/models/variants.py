"""The built-in model variants, each a composition of parts (:class:`~.variant_parts.VariantParts`).

* ``"transformer"``: Vaswani et al.'s layer as the paper trains it: LayerNorm (pre or post), the ReLU or the
  paper's ``conv_relu`` feed-forward network, biases and ``1/sqrt(d_h)`` in attention, embeddings scaled by
  ``sqrt(d)``.
* ``"t5"``: T5's layer as Hugging Face's ``T5ForConditionalGeneration`` computes it (:mod:`.t5` has the parts).

:func:`parts_of` turns a config into its parts: the only place that reads a variant's name (and the
``position_bias`` setting's); ``tests/test_layering_variants.py`` checks that no other module compares one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from torch import nn

from .layers import ConvReluFFN, ReluFFN
from .t5 import RelativePositionBias, RMSNorm, T5FeedForward, init_t5_
from .variant_parts import DEFAULT_VARIANT, VariantParts, get_variant, register_variant

__all__ = ["POSITION_BIASES", "T5", "TRANSFORMER", "parts_of"]


def relu_ffn(d_model: int, d_ff: int, kernel_size: int, causal: bool, dropout: float) -> nn.Module:
    """``linear -> ReLU -> linear`` with biases; the residual dropout around it is the layer's."""
    return ReluFFN(d_model, d_ff)


def conv_relu_ffn(d_model: int, d_ff: int, kernel_size: int, causal: bool, dropout: float) -> nn.Module:
    """The paper's LM feed-forward network: a convolution over positions, causal in decoders."""
    return ConvReluFFN(d_model, d_ff, kernel_size, causal)


def t5_relu_ffn(d_model: int, d_ff: int, kernel_size: int, causal: bool, dropout: float) -> nn.Module:
    """T5 v1.0's: no biases, and dropout on the hidden layer too."""
    return T5FeedForward(d_model, d_ff, gated=False, dropout=dropout)


def t5_gated_gelu_ffn(d_model: int, d_ff: int, kernel_size: int, causal: bool, dropout: float) -> nn.Module:
    """T5 v1.1's gated-GELU, no biases, dropout on the hidden layer."""
    return T5FeedForward(d_model, d_ff, gated=True, dropout=dropout)


def init_t5(model: nn.Module, config: Any) -> None:
    """T5's initialisation of the built encoder-decoder: its ``1/sqrt(d_h)`` lives in Q's initial scale."""
    init_t5_(model, config.d_model, config.d_ff, config.n_heads)


def t5_relative_bias(config: Any, bidirectional: bool) -> RelativePositionBias:
    """T5's bucketed relative position bias for one stack of ``config``: a (buckets, H) table."""
    return RelativePositionBias(config.n_heads, config.relative_attention_num_buckets,
                                config.relative_attention_max_distance, bidirectional)


#: The values of the ``position_bias`` setting: a factory ``(config, bidirectional) -> module`` or None. A
#: setting apart from the variant (T5's bias suits every variant and every attention kind), resolved with it.
POSITION_BIASES: dict[str, Callable[[Any, bool], nn.Module] | None] = {"none": None, "t5": t5_relative_bias}


def parts_of(config: Any) -> VariantParts:
    """The parts ``config`` builds: its ``variant`` (the Transformer's when it has no such setting, as the LM and
    the classifiers) with the position bias its ``position_bias`` names (none when it has no such setting)."""
    parts = get_variant(getattr(config, "variant", DEFAULT_VARIANT))
    return dataclasses.replace(parts, position_bias=POSITION_BIASES[getattr(config, "position_bias", "none")])


TRANSFORMER = register_variant(VariantParts(
    name="transformer",
    title="the Transformer",
    norm=nn.LayerNorm,
    ffns={"relu": relu_ffn, "conv_relu": conv_relu_ffn},
))

T5 = register_variant(VariantParts(
    name="t5",
    title="T5",
    # RMS norm without bias (eps 1e-6); a pre-norm layer only
    norm=RMSNorm,
    ffns={"relu": t5_relu_ffn, "gated-gelu": t5_gated_gelu_ffn},
    # positions come from the relative position bias alone (the position_bias setting)
    requires={"norm": ("pre",), "positions": ("none",)},
    # no biases in any projection; the dot product unscaled, as its initialisation assumes
    attention_options={"bias": False, "scaled": False},
    # the embedding is N(0, 1) already, so scaling it by sqrt(d) would blow the residual stream up
    scale_embeddings=False,
    # T5 drops out each stack's output after the final norm as well
    stack_dropout=True,
    init=init_t5,
))
