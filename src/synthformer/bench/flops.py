"""Multiply-adds of one attention layer of each kind, counted from the shapes and the kind's definition.

The benchmarks print, beside a kind's measured time ratio to ``V``, its *FLOP ratio* to ``V`` (the time ratio it
would have at ``V``'s efficiency) and the efficiency (FLOP ratio / time ratio), so that an expensive kind (the
appendix ``Conv``, with ``H l d f`` weights per token) is not mistaken for a slow implementation.

What is counted: the multiply-adds of the matrix products of one forward pass of ``SynthesizerAttention`` over
B sequences of L tokens, bidirectional (every kind materializes or multiplies the full L x L matrix): the value
and output projections (``2 d^2`` per token), ``P @ V`` (``L d`` per token), and the kind's logits (declared by
the kind's class). Elementwise work (softmax, masks, mixture weights, biases) is not counted; the backward pass is
about twice the forward for every kind, so the ratio holds for forward+backward too.

Causal layers (``causal=True``) need only the query-key pairs with the key at or before the query: ``L (L + 1) / 2``
pairs per sequence instead of ``L^2``, so every product over pairs (``Q K^T``, ``P @ V``, ``R1 R2^T``, the rows of
``D``'s ``W2`` a token needs, ``FD``'s outer product) is counted over those pairs only: the work a causal layer
cannot avoid, the limit an implementation that computes the full matrix and masks it falls short of.
Each kind declares its own count (``SynthesizingFunction.macs``, in the kind's module), and so does a whole token
mixer that has one (``layer_macs``: Linformer); :func:`classifier_macs` adds the feed-forward networks and the
classifier head for a whole model.
"""

from __future__ import annotations

from typing import Any

from synthformer.attention import SynthesizingFunction, get_mixer, inner_width, is_whole_mixer, parse_kind
from synthformer.models import ClassifierConfig


def query_key_pairs(length: int, causal: bool = False) -> int:
    """Query-key pairs of one sequence: every pair (``L^2``), or, causal, those with the key at or before the query
    (``L (L + 1) / 2``)."""
    return length * (length + 1) // 2 if causal else length * length


def _declared(cls: type, method: str, owner: type | None = None) -> bool:
    """Whether ``cls`` declares its own ``method`` (a class of its own, not the base's default that raises)."""
    found = getattr(cls, method, None)
    if found is None:
        return False
    return owner is None or getattr(found, "__func__", None) is not getattr(owner, method).__func__


def layer_macs(
    kind: str, batch: int, length: int, d_model: int, heads: int, causal: bool = False, **options: Any
) -> int:
    """Multiply-adds of one forward pass of a ``kind`` layer over (batch, length) tokens.

    A mixture counts each part's logits once (its weighted sum is elementwise), each part's count declared by its
    class (``SynthesizingFunction.macs``). Options are the layer's kind options (``k``, ``a``, ``b``, ``r``,
    ``conv_width``), defaults filled from each part, and its ``head_dim`` (the values and the projections' inner
    width are then ``heads * head_dim``; every part is given it). ``causal`` counts the pairwise products over the
    pairs a causal layer needs (:func:`query_key_pairs`). ``kind`` may also be a whole token mixer that declares
    ``layer_macs`` (Linformer).

    Raises:
        KeyError: for a kind that declares no count (a user-registered one), naming what to add.
        ValueError: for a whole mixer that declares none (LightConv, DynamicConv), naming what to add; ``causal``
            for a mixer that cannot be causal (Linformer).
    """
    if is_whole_mixer(kind):
        cls = get_mixer(kind)
        if not _declared(cls, "layer_macs"):
            # a ValueError, as for any name that is not a kind: callers (bench.lra) read it as "no count"
            raise ValueError(f"no multiply-add count for token mixer {cls.__name__!r}: add a classmethod "
                           "layer_macs(batch, length, d_model, heads, options, causal) -> int to its class")
        opts = {**cls.option_defaults, **{k: v for k, v in options.items() if k in cls.option_defaults}}
        return cls.layer_macs(batch, length, d_model, heads, opts, causal)
    pairs = query_key_pairs(length, causal)
    head_dim = options.get("head_dim")
    inner = inner_width(d_model, heads, head_dim)
    total = batch * (length * 2 * d_model * inner + pairs * inner)  # G(X), the output projection, P @ V
    width = {} if head_dim is None else {"head_dim": head_dim}
    for part in parse_kind(kind):
        if not _declared(part, "macs", SynthesizingFunction):
            raise KeyError(f"no multiply-add count for attention kind {part.name!r}: add a classmethod "
                           f"macs(batch, length, d_model, heads, options, pairs) -> int to {part.__name__}")
        opts = part.resolved_options(**{k: v for k, v in options.items() if k in part.option_defaults}, **width)
        total += part.macs(batch, length, d_model, heads, opts, pairs)
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
