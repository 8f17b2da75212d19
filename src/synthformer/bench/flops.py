"""Multiply-adds of one attention layer of each kind, counted from the shapes and the kind's definition.

The benchmarks print, beside a kind's measured time ratio to ``V``, its *FLOP ratio* to ``V`` (the time ratio it
would have at ``V``'s efficiency) and the efficiency (FLOP ratio / time ratio), so that an expensive kind (the
appendix ``Conv``, with ``H l d f`` weights per token) is not mistaken for a slow implementation.

What is counted: the multiply-adds of the matrix products of one forward pass of ``SynthesizerAttention`` over
B sequences of L tokens, bidirectional (every kind materializes or multiplies the full L x L matrix): the value
and output projections (``2 d^2`` per token), ``P @ V`` (``L d`` per token), and the kind's logits (one function
per kind below). Elementwise work (softmax, masks, mixture weights, biases) is not counted; the backward pass is
about twice the forward for every kind, so the ratio holds for forward+backward too.

Causal layers (``causal=True``) need only the query-key pairs with the key at or before the query: ``L (L + 1) / 2``
pairs per sequence instead of ``L^2``, so every product over pairs (``Q K^T``, ``P @ V``, ``R1 R2^T``, the rows of
``D``'s ``W2`` a token needs, ``FD``'s outer product) is counted over those pairs only: the work a causal layer
cannot avoid, the limit an implementation that computes the full matrix and masks it falls short of.
Whole token mixers that are not attention kinds have their own count (:data:`MIXER_MACS`: Linformer), and
:func:`classifier_macs` adds the feed-forward networks and the classifier head for a whole model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from synthformer.attention import parse_kind, resolve_mixer
from synthformer.attention.dense import factor_sizes
from synthformer.models import ClassifierConfig

#: kind name -> multiply-adds of its logits for (batch, length, d_model, heads, resolved options, pairs), where
#: ``pairs`` is the query-key pairs per sequence: ``L^2`` bidirectional, ``L (L + 1) / 2`` causal
LogitCount = Callable[[int, int, int, int, dict[str, Any], int], int]


def query_key_pairs(length: int, causal: bool = False) -> int:
    """Query-key pairs of one sequence: every pair (``L^2``), or, causal, those with the key at or before the query
    (``L (L + 1) / 2``)."""
    return length * (length + 1) // 2 if causal else length * length


def dot_product_macs(batch: int, length: int, d: int, heads: int, options: dict, pairs: int) -> int:
    """``V``: the Q and K projections (``2 d^2`` per token) and ``Q K^T`` (``d`` per pair)."""
    return batch * (length * 2 * d * d + pairs * d)


def random_macs(batch: int, length: int, d: int, heads: int, options: dict, pairs: int) -> int:
    """``R``, ``Fix``: the logits are parameters; nothing to multiply."""
    return 0


def factorized_random_macs(batch: int, length: int, d: int, heads: int, options: dict, pairs: int) -> int:
    """``FR``: ``R1 R2^T`` once per batch (it reads no token), ``k`` per pair and head."""
    return heads * pairs * int(options["k"])


def dense_macs(batch: int, length: int, d: int, heads: int, options: dict, pairs: int) -> int:
    """``D``: ``W1`` (``d^2`` per token) and ``W2`` (``d_h`` per pair and head, ``d`` in all)."""
    return batch * (length * d * d + pairs * d)


def factorized_dense_macs(batch: int, length: int, d: int, heads: int, options: dict, pairs: int) -> int:
    """``FD``: ``W1`` (``d^2``) and the A and B heads (``d (a + b)``) per token, the outer product (1 per pair and
    head)."""
    a, b = factor_sizes(length, options["a"], options["b"])
    return batch * (length * (d * d + d * (a + b)) + heads * pairs)


def conv_macs(batch: int, length: int, d: int, heads: int, options: dict, pairs: int) -> int:
    """``Conv``: a width-f convolution from d to L channels per head, ``H d f`` per pair."""
    return batch * heads * pairs * d * int(options["conv_width"])


def conv_relu_conv_macs(batch: int, length: int, d: int, heads: int, options: dict, pairs: int) -> int:
    """``ConvReluConv``: ``f d^2`` (d -> d) per token and ``f d`` (per head d_h -> L) per pair."""
    f = int(options["conv_width"])
    return batch * (length * f * d * d + f * d * pairs)


def bottleneck_macs(batch: int, length: int, d: int, heads: int, options: dict, pairs: int) -> int:
    """``Bottleneck``: d -> r -> L per head, ``H r d`` per token and ``H r`` per pair."""
    return batch * heads * int(options["r"]) * (length * d + pairs)


def gated_dense_macs(batch: int, length: int, d: int, heads: int, options: dict, pairs: int) -> int:
    """``GLU``: the gated unit's two d x d maps (``2 d^2`` per token) and ``W2`` (``d`` per pair)."""
    return batch * (length * 2 * d * d + pairs * d)


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


def linformer_macs(batch: int, length: int, d: int, heads: int, options: dict, causal: bool) -> int:
    """Linformer, the whole layer: the Q, K, V and output projections (``4 d^2`` per token), ``E K`` and ``F V``
    (``k d`` per token each) and attention over the k compressed positions (``Q (E K)^T`` and ``P (F V)``, ``k d``
    per token each). It cannot be causal: its length projection mixes every position into each compressed key."""
    if causal:
        raise ValueError("Linformer cannot be causal (its length projection reads every position), so it has no "
                         "causal multiply-add count")
    return batch * length * (4 * d * d + 4 * int(options["k"]) * d)


#: whole token mixers (not attention kinds) -> multiply-adds of the whole layer for (batch, length, d_model, heads,
#: resolved options, causal)
MIXER_MACS: dict[str, Callable[[int, int, int, int, dict[str, Any], bool], int]] = {"Linformer": linformer_macs}


def layer_macs(
    kind: str, batch: int, length: int, d_model: int, heads: int, causal: bool = False, **options: Any
) -> int:
    """Multiply-adds of one forward pass of a ``kind`` layer over (batch, length) tokens.

    A mixture counts each part's logits once (its weighted sum is elementwise). Options are the layer's kind
    options (``k``, ``a``, ``b``, ``r``, ``conv_width``), defaults filled from each part. ``causal`` counts the
    pairwise products over the pairs a causal layer needs (:func:`query_key_pairs`). ``kind`` may also be a
    whole token mixer of :data:`MIXER_MACS` (Linformer).

    Raises:
        KeyError: for a kind without a counting function here (a user-registered one).
        ValueError: ``causal`` for a mixer that cannot be causal (Linformer).
    """
    if kind in MIXER_MACS:
        cls, _ = resolve_mixer(kind)
        opts = {**cls.option_defaults, **{k: v for k, v in options.items() if k in cls.option_defaults}}
        return MIXER_MACS[kind](batch, length, d_model, heads, opts, causal)
    pairs = query_key_pairs(length, causal)
    total = batch * (length * 2 * d_model * d_model + pairs * d_model)  # G(X), the output projection, P @ V
    for part in parse_kind(kind):
        if part.name not in LOGIT_MACS:
            raise KeyError(f"no multiply-add count for attention kind {part.name!r}; add one to LOGIT_MACS")
        opts = part.resolved_options(**{k: v for k, v in options.items() if k in part.option_defaults})
        total += LOGIT_MACS[part.name](batch, length, d_model, heads, opts, pairs)
    return total


def classifier_macs(config: ClassifierConfig, batch: int, length: int, causal: bool = False) -> int:
    """Multiply-adds of one forward pass of the encoder classifier ``config`` over (batch, length) tokens: every
    encoder layer's token mixer (:func:`layer_macs`) and feed-forward network (``2 d d_ff`` per token; a
    ``conv_relu`` FFN ``(f + 1) d d_ff``), and the head on the pooled vector (``d h + h C`` for LRA's MLP head of
    width h, ``d C`` for a linear one). Embeddings (a lookup) and the pooling are not multiply-adds."""
    d, heads = config.d_model, config.n_heads
    ffn = (config.ffn_kernel_size + 1 if config.ffn == "conv_relu" else 2) * d * config.d_ff
    total = 0
    for kind, options in zip(config.layer_kinds("encoder"), config.layer_options("encoder"), strict=True):
        total += layer_macs(kind, batch, length, d, heads, causal=causal, **options) + batch * length * ffn
    classes = int(config.num_classes or 2)
    head = d * config.head_width + config.head_width * classes if config.head == "mlp" else d * classes
    return total + batch * head


def flop_ratio(kind: str, batch: int, length: int, d_model: int, heads: int, **options: Any) -> float:
    """``layer_macs(kind) / layer_macs("V")`` at the same shapes: the time ratio at V's efficiency."""
    return layer_macs(kind, batch, length, d_model, heads, **options) / layer_macs("V", batch, length, d_model, heads)


def efficiency(flops_ratio: float, time_ratio: float) -> float:
    """FLOP ratio / time ratio: 1.0 means the kind does its arithmetic as fast as ``V`` does its own."""
    return flops_ratio / time_ratio
