"""The parts of T5's architecture (Raffel et al. 2020) that the encoder-decoder's ``variant="t5"`` uses.

The semantics are those of Hugging Face's ``T5ForConditionalGeneration`` (``transformers/models/t5/
modeling_t5.py``, itself a port of Mesh TensorFlow's ``transformer_layers.py``), which was read for them and which
the parity tests (``tests/hf/test_t5_parity.py``) compare against; the code here is written anew:

* :class:`RMSNorm`: T5's layer norm, a root-mean-square norm with a gain and no bias, no mean subtraction,
  ``eps = 1e-6``, its variance accumulated in fp32.
* :func:`relative_position_bucket` and :class:`RelativePositionBias`: one learned scalar per (bucket, head) added
  to the self-attention logits; a stack computes it once and shares it with all its layers.
* :class:`T5FeedForward`: ``wo(dropout(act(wi x)))`` (v1.0, ReLU) or ``wo(dropout(gelu_new(wi_0 x) * wi_1 x))``
  (v1.1, gated-GELU), no biases.
* :func:`init_t5_`: T5's initialisation (Hugging Face's ``_init_weights`` with ``initializer_factor`` 1.0).

Shapes: B batch, T queries, S keys, d ``d_model``, H heads, d_h ``d // H`` (the config's ``head_dim``, T5's
``d_kv``, when set).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .layers import PositionWiseFFN

__all__ = ["RMSNorm", "RelativePositionBias", "T5FeedForward", "init_t5_", "relative_position_bucket"]

#: T5's layer-norm epsilon (``layer_norm_epsilon`` of every released T5 config).
T5_NORM_EPS = 1e-6


class RMSNorm(nn.Module):
    """``weight * x / sqrt(mean(x^2) + eps)`` over the last axis (T5LayerNorm): no bias, no mean subtraction.

    The mean of squares is taken in fp32 whatever the input's dtype (half-precision squares overflow); the result
    is cast back to the weight's dtype when that is half precision, as T5 does.

    Shapes: ``forward(x (..., d)) -> (..., d)``.
    """

    def __init__(self, d_model: int, eps: float = T5_NORM_EPS) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        variance = x.float().pow(2).mean(-1, keepdim=True)  # (..., 1), in fp32
        x = x * torch.rsqrt(variance + self.eps)
        if self.weight.dtype in (torch.float16, torch.bfloat16):
            x = x.to(self.weight.dtype)
        return self.weight * x

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"


def relative_position_bucket(relative_position: Tensor, bidirectional: bool, num_buckets: int,
                             max_distance: int) -> Tensor:
    """T5's bucket of each relative position ``key - query`` (an integer tensor), in ``[0, num_buckets)``.

    Bidirectional (encoder): half the buckets for keys after the query, half for the rest. Causal (decoder): only
    keys at or before the query have a distance (later keys, masked anyway, share bucket 0). Within a direction,
    distances below half its buckets get a bucket each; larger ones share log-spaced buckets up to
    ``max_distance``, beyond which all share the last. The float expression is evaluated in the same order as
    Mesh TensorFlow's and Hugging Face's, so that the truncation to an integer lands in the same bucket.
    """
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)  # keys before the query: positive distances
    max_exact = num_buckets // 2
    log_ratio = torch.log(distance.float() / max_exact) / math.log(max_distance / max_exact)
    far = max_exact + (log_ratio * (num_buckets - max_exact)).long()  # garbage where distance < max_exact: unused
    far = far.clamp(max=num_buckets - 1)
    return buckets + torch.where(distance < max_exact, distance, far)


class RelativePositionBias(nn.Module):
    """T5's relative position bias of one stack: a learned (num_buckets, H) table looked up by bucket.

    The stack calls it once per forward (or decoding step) and passes the result to every layer's self-attention
    (T5 computes it in the first layer and shares it; storing it with the stack is the same function and makes the
    sharing visible). Cross-attention has none.

    Args:
        n_heads: H.
        num_buckets: ``relative_attention_num_buckets`` (32 in T5).
        max_distance: ``relative_attention_max_distance`` (128 in T5).
        bidirectional: True in the encoder, False in the (causal) decoder.

    Shapes: ``forward(queries T, keys S, start) -> (1, H, T, S)`` for the queries at positions ``start ..
    start+T-1`` over the keys ``0 .. S-1``.
    """

    def __init__(self, n_heads: int, num_buckets: int, max_distance: int, bidirectional: bool) -> None:
        super().__init__()
        self.num_buckets, self.max_distance, self.bidirectional = num_buckets, max_distance, bidirectional
        self.embedding = nn.Embedding(num_buckets, n_heads)

    def forward(self, queries: int, keys: int, start: int = 0) -> Tensor:
        device = self.embedding.weight.device
        query_pos = torch.arange(start, start + queries, device=device)[:, None]  # (T, 1)
        key_pos = torch.arange(keys, device=device)[None, :]  # (1, S)
        bucket = relative_position_bucket(key_pos - query_pos, self.bidirectional, self.num_buckets,
                                          self.max_distance)  # (T, S)
        return self.embedding(bucket).permute(2, 0, 1).unsqueeze(0)  # (T, S, H) -> (1, H, T, S)

    def extra_repr(self) -> str:
        return (f"buckets={self.num_buckets}, max_distance={self.max_distance}, "
                f"bidirectional={self.bidirectional}")


def gelu_new(x: Tensor) -> Tensor:
    """GELU's tanh approximation, ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (Hendrycks and Gimpel),
    evaluated term by term as Mesh TensorFlow and Hugging Face's ``gelu_new`` do: ``F.gelu(approximate="tanh")``
    is the same function but rounds differently (about 1e-6 at the logits of a tiny model)."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class T5FeedForward(PositionWiseFFN):
    """T5's feed-forward network, no biases: ReLU (v1.0, ``wi``, ``wo``) or gated-GELU (v1.1, ``wi_0``, ``wi_1``,
    ``wo``; GELU's tanh approximation, ``gelu_new``), with dropout on the hidden layer.

    Shapes: ``forward(x (B, L, d), padding_mask ignored) -> (B, L, d)``; position-wise, so decoding needs no state.
    """

    def __init__(self, d_model: int, d_ff: int, gated: bool, dropout: float) -> None:
        super().__init__()
        self.gated = gated
        if gated:
            self.wi_0 = nn.Linear(d_model, d_ff, bias=False)
            self.wi_1 = nn.Linear(d_model, d_ff, bias=False)
        else:
            self.wi = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        if self.gated:
            h = gelu_new(self.wi_0(x)) * self.wi_1(x)  # (B, L, d_ff)
        else:
            h = F.relu(self.wi(x))  # (B, L, d_ff)
        return self.wo(self.dropout(h))


@torch.no_grad()
def init_t5_(model: nn.Module, d_model: int, d_ff: int, n_heads: int) -> None:
    """T5's initialisation (Hugging Face's ``T5PreTrainedModel._init_weights``, factor 1.0) of an encoder-decoder,
    in place.

    Token embeddings and an untied output projection N(0, 1); norms 1; feed-forward inputs N(0, d^-1/2), its output
    N(0, d_ff^-1/2); attention Q N(0, (d d_h)^-1/2) (the ``1/sqrt(d_h)`` that T5 leaves out of the dot product),
    K and V N(0, d^-1/2), the output projection N(0, (H d_h)^-1/2); relative position tables N(0, d^-1/2).
    Synthesized parts of a mixture (R, D, ...) and the mixture weights keep their own initialisation. d_h is each
    attention module's own head width (``d_model // n_heads`` unless the config sets ``head_dim``), so
    ``n_heads`` is not read (it stays a parameter for the callers).
    """
    from synthformer.attention import DotProduct, SynthesizerAttention, SynthesizerCrossAttention

    for module in model.modules():
        if isinstance(module, RMSNorm):
            module.weight.fill_(1.0)
        elif isinstance(module, RelativePositionBias):
            module.embedding.weight.normal_(0.0, d_model**-0.5)
        elif isinstance(module, T5FeedForward):
            for wi in (module.wi_0, module.wi_1) if module.gated else (module.wi,):
                wi.weight.normal_(0.0, d_model**-0.5)
            module.wo.weight.normal_(0.0, d_ff**-0.5)
        elif isinstance(module, (SynthesizerAttention, SynthesizerCrossAttention)):
            module.value.weight.normal_(0.0, d_model**-0.5)
            module.out.weight.normal_(0.0, (module.n_heads * module.head_dim) ** -0.5)
        elif isinstance(module, DotProduct):
            q, k = (module.query.weight, module.key.weight) if module.cross else module.qk.weight.chunk(2)
            q.normal_(0.0, (d_model * module.head_dim) ** -0.5)  # chunks are views: this fills the fused qk in place
            k.normal_(0.0, d_model**-0.5)
    tables = {id(e.token.weight): e.token.weight for e in (model.src_embed, model.tgt_embed)}  # one when shared
    for weight in tables.values():
        weight.normal_(0.0, 1.0)
    if id(model.lm_head.weight) not in tables:  # untied (T5 v1.1's own lm_head)
        model.lm_head.weight.normal_(0.0, 1.0)
