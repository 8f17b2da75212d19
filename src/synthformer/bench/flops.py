"""Multiply-adds of one attention layer of each kind, counted from the shapes and the kind's definition.

The benchmarks print, beside a kind's measured time ratio to ``V``, its *FLOP ratio* to ``V`` (the time ratio it
would have at ``V``'s efficiency) and the efficiency (FLOP ratio / time ratio), so that an expensive kind (the
appendix ``Conv``, with ``H l d f`` weights per token) is not mistaken for a slow implementation.

What is counted: the multiply-adds of the matrix products of one forward pass of ``SynthesizerAttention`` over
B sequences of L tokens, bidirectional (every kind materializes or multiplies the full L x L matrix): the value
and output projections (``2 d^2`` per token), ``P @ V`` (``L d`` per token), and the kind's logits (one function
per kind below). Elementwise work (softmax, masks, mixture weights, biases) is not counted; the backward pass is
about twice the forward for every kind, so the ratio holds for forward+backward too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from synthformer.attention import parse_kind
from synthformer.attention.dense import factor_sizes

#: kind name -> multiply-adds of its logits for (batch, length, d_model, heads, resolved options)
LogitCount = Callable[[int, int, int, int, dict[str, Any]], int]


def dot_product_macs(batch: int, length: int, d: int, heads: int, options: dict) -> int:
    """``V``: the Q and K projections (``2 d^2`` per token) and ``Q K^T`` (``L d`` per token)."""
    return batch * length * (2 * d * d + length * d)


def random_macs(batch: int, length: int, d: int, heads: int, options: dict) -> int:
    """``R``, ``Fix``: the logits are parameters; nothing to multiply."""
    return 0


def factorized_random_macs(batch: int, length: int, d: int, heads: int, options: dict) -> int:
    """``FR``: ``R1 R2^T`` once per batch (it reads no token), ``L^2 k`` per head."""
    return heads * length * length * int(options["k"])


def dense_macs(batch: int, length: int, d: int, heads: int, options: dict) -> int:
    """``D``: ``W1`` (``d^2``) and ``W2`` (``d_h L`` per head, ``L d`` in all) per token."""
    return batch * length * (d * d + length * d)


def factorized_dense_macs(batch: int, length: int, d: int, heads: int, options: dict) -> int:
    """``FD``: ``W1`` (``d^2``), the A and B heads (``d (a + b)``) and the outer product (``L`` per head)."""
    a, b = factor_sizes(length, options["a"], options["b"])
    return batch * length * (d * d + d * (a + b) + heads * length)


def conv_macs(batch: int, length: int, d: int, heads: int, options: dict) -> int:
    """``Conv``: a width-f convolution from d to L channels per head, ``H L d f`` per token."""
    return batch * length * heads * length * d * int(options["conv_width"])


def conv_relu_conv_macs(batch: int, length: int, d: int, heads: int, options: dict) -> int:
    """``ConvReluConv``: ``f d^2`` (d -> d) and ``f d L`` (per head d_h -> L) per token."""
    f = int(options["conv_width"])
    return batch * length * (f * d * d + f * d * length)


def bottleneck_macs(batch: int, length: int, d: int, heads: int, options: dict) -> int:
    """``Bottleneck``: d -> r -> L per head, ``H r (d + L)`` per token."""
    return batch * length * heads * int(options["r"]) * (d + length)


def gated_dense_macs(batch: int, length: int, d: int, heads: int, options: dict) -> int:
    """``GLU``: the gated unit's two d x d maps (``2 d^2``) and ``W2`` (``L d``) per token."""
    return batch * length * (2 * d * d + length * d)


LOGIT_MACS: dict[str, LogitCount] = {
    "V": dot_product_macs,
    "R": random_macs,
    "Fix": random_macs,
    "FR": factorized_random_macs,
    "D": dense_macs,
    "FD": factorized_dense_macs,
    "Conv": conv_macs,
    "ConvReluConv": conv_relu_conv_macs,
    "Bottleneck": bottleneck_macs,
    "GLU": gated_dense_macs,
}


def layer_macs(kind: str, batch: int, length: int, d_model: int, heads: int, **options: Any) -> int:
    """Multiply-adds of one forward pass of a ``kind`` layer over (batch, length) tokens.

    A mixture counts each part's logits once (its weighted sum is elementwise). Options are the layer's kind
    options (``k``, ``a``, ``b``, ``r``, ``conv_width``), defaults filled from each part.

    Raises:
        KeyError: for a kind without a counting function here (a user-registered one).
    """
    core = batch * length * (2 * d_model * d_model + length * d_model)  # G(X), the output projection, P @ V
    total = core
    for part in parse_kind(kind):
        if part.name not in LOGIT_MACS:
            raise KeyError(f"no multiply-add count for attention kind {part.name!r}; add one to LOGIT_MACS")
        opts = part.resolved_options(**{k: v for k, v in options.items() if k in part.option_defaults})
        total += LOGIT_MACS[part.name](batch, length, d_model, heads, opts)
    return total


def flop_ratio(kind: str, batch: int, length: int, d_model: int, heads: int, **options: Any) -> float:
    """``layer_macs(kind) / layer_macs("V")`` at the same shapes: the time ratio at V's efficiency."""
    return layer_macs(kind, batch, length, d_model, heads, **options) / layer_macs("V", batch, length, d_model, heads)


def efficiency(flops_ratio: float, time_ratio: float) -> float:
    """FLOP ratio / time ratio: 1.0 means the kind does its arithmetic as fast as ``V`` does its own."""
    return flops_ratio / time_ratio
