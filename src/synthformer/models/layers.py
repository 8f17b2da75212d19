"""Building blocks of the task models: embeddings, the feed-forward networks, cross-attention and the layer.

Shapes use B (batch), L (sequence length), T (new positions in decoding), S (source length), d (``d_model``),
H (heads), d_h (``d // H``), V (vocabulary).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from synthformer.attention import build_mixer
from synthformer.attention.masking import masked_softmax

from .cache import LayerCache

__all__ = ["ConvReluFFN", "CrossAttention", "Embeddings", "ReluFFN", "TransformerBlock", "build_ffn"]


def sinusoidal_table(max_len: int, d_model: int) -> Tensor:
    """(max_len, d) fixed positions of Vaswani et al.: sin on even channels, cos on odd ones."""
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]  # (L, 1)
    inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos * inv_freq)  # (L, ceil(d/2))
    table[:, 1::2] = torch.cos(pos * inv_freq[: d_model // 2])  # (L, floor(d/2))
    return table.float()


class Embeddings(nn.Module):
    """Token embedding scaled by ``sqrt(d)`` plus absolute positions, then dropout.

    The ``sqrt(d)`` scale (Vaswani et al.) lets the embedding matrix be initialized with std ``d^-1/2``, the scale
    that suits it as a tied output projection, while the scaled input stays O(1) next to the positions.

    Args:
        vocab_size: V.
        d_model: d.
        max_len: positions available.
        positions: ``"sinusoidal"`` (a fixed buffer, not saved) or ``"learned"``.
        dropout: dropout on the sum.

    Shapes: ``forward(ids (B, T), start=0) -> (B, T, d)``; the tokens sit at positions ``start .. start+T-1``.
    """

    def __init__(self, vocab_size: int, d_model: int, max_len: int, positions: str, dropout: float) -> None:
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.token = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.token.weight, std=d_model**-0.5)
        self.scale = math.sqrt(d_model)
        self.learned = positions == "learned"
        if self.learned:
            self.position = nn.Embedding(max_len, d_model)
            nn.init.normal_(self.position.weight, std=0.02)
        else:
            # a function of the shape only: recomputed on load rather than stored in checkpoints
            self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, ids: Tensor, start: int = 0) -> Tensor:
        t = ids.shape[1]
        if start + t > self.max_len:
            raise ValueError(f"sequence length {start + t} exceeds max_len {self.max_len} of the model")
        x = self.token(ids) * self.scale  # (B, T, d)
        if self.learned:
            pos = self.position.weight[start : start + t]  # (T, d)
        else:
            pos = self.table[start : start + t].to(x.dtype)  # (T, d)
        return self.dropout(x + pos)


class ReluFFN(nn.Module):
    """Position-wise ``linear -> ReLU -> linear``. ``forward(x (B, L, d)) -> (B, L, d)``; no decoding state."""

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        return self.fc2(F.relu(self.fc1(x)))

    def step(self, x: Tensor, padding_mask: Tensor | None, cache: None) -> tuple[Tensor, None]:
        """Decoding: position-wise, so the same as :meth:`forward`."""
        return self.forward(x), None

    def init_cache(self, batch_size: int, device=None, dtype=None) -> None:
        """Position-wise: nothing to remember between decoding steps."""
        return None


class ConvReluFFN(nn.Module):
    """``conv_relu`` feed-forward network (the paper's LM setting, Tensor2Tensor's ``conv_relu_conv`` with a
    width-1 second layer): a width-``kernel_size`` convolution over positions d -> d_ff, ReLU, a linear d_ff -> d.

    Args:
        d_model: d.
        d_ff: hidden width.
        kernel_size: K, taps of the convolution over positions.
        causal: left padding by ``K - 1`` (output t reads inputs t-K+1 .. t: decoders) instead of centred
            padding (``(K - 1) // 2`` left, ``K // 2`` right: encoders).

    Padded positions (``padding_mask`` True) are zeroed before the convolution, so a real position never reads the
    content of a padding token (the same as the zero padding beyond the sequence ends).

    Shapes: ``forward(x (B, L, d), padding_mask (B, L) | None) -> (B, L, d)``; in decoding
    ``step(x (B, T, d), padding_mask (B, S + T) | None, cache (B, K - 1, d)) -> (y (B, T, d), cache)``.
    """

    def __init__(self, d_model: int, d_ff: int, kernel_size: int, causal: bool) -> None:
        super().__init__()
        self.d_model, self.kernel_size, self.causal = d_model, kernel_size, causal
        self.conv = nn.Conv1d(d_model, d_ff, kernel_size)
        self.fc2 = nn.Linear(d_ff, d_model)
        self.pad = (kernel_size - 1, 0) if causal else ((kernel_size - 1) // 2, kernel_size // 2)

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        if padding_mask is not None:
            x = x.masked_fill(padding_mask[..., None], 0.0)
        h = F.pad(x.transpose(1, 2), self.pad)  # (B, L, d) -> (B, d, pad_left + L + pad_right)
        h = self.conv(h).transpose(1, 2)  # (B, d_ff, L) -> (B, L, d_ff)
        return self.fc2(F.relu(h))

    def step(self, x: Tensor, padding_mask: Tensor | None, cache: Tensor) -> tuple[Tensor, Tensor]:
        """Decoding: x (B, T, d) the new positions, padding_mask (B, S + T) | None, cache (B, K - 1, d) the
        last inputs; returns (y (B, T, d), the updated cache)."""
        if not self.causal:
            raise ValueError("incremental decoding needs a causal conv_relu FFN")
        if padding_mask is not None:
            x = x.masked_fill(padding_mask[:, -x.shape[1] :, None], 0.0)  # the mask covers every position so far
        window = torch.cat([cache, x], dim=1)  # (B, K - 1 + T, d): the cached inputs stand in for the left padding
        h = self.conv(window.transpose(1, 2)).transpose(1, 2)  # (B, d, K - 1 + T) -> (B, d_ff, T) -> (B, T, d_ff)
        new_cache = window[:, window.shape[1] - (self.kernel_size - 1) :]  # (B, K - 1, d)
        return self.fc2(F.relu(h)), new_cache

    def init_cache(self, batch_size: int, device=None, dtype=None) -> Tensor:
        """(B, K - 1, d) zeros: exactly the left padding of the full causal forward."""
        weight = self.conv.weight
        return torch.zeros(
            batch_size,
            self.kernel_size - 1,
            self.d_model,
            device=device if device is not None else weight.device,
            dtype=dtype if dtype is not None else weight.dtype,
        )


def build_ffn(kind: str, d_model: int, d_ff: int, kernel_size: int, causal: bool) -> nn.Module:
    """The feed-forward network named ``kind`` (``"relu"`` or ``"conv_relu"``)."""
    if kind == "relu":
        return ReluFFN(d_model, d_ff)
    if kind == "conv_relu":
        return ConvReluFFN(d_model, d_ff, kernel_size, causal)
    raise ValueError(f"ffn must be 'relu' or 'conv_relu', got {kind!r}")


class CrossAttention(nn.Module):
    """Multi-head attention of the decoder over the encoder memory.

    ``kind="V"`` is the Transformer's dot-product attention (the paper's setting) and runs through
    ``F.scaled_dot_product_attention``. ``"R"`` and ``"D"`` are synthetic variants over source positions (the
    paper's section 5 reports that synthetic cross-attention did not work; offered to reproduce that):
    ``R`` is a trained (H, max_len, max_len) alignment (row = target position, column = source position, cropped
    to (T, S)); ``D`` lets each target token predict its logits over the source positions,
    ``W2 relu(W1 y_i + b1) + b2`` per head with W2 cropped to the first S outputs. The values
    ``G(memory)`` and the output projection are shared by all three.

    The memory's keys and values depend on the source only, so in decoding they are computed once
    (:meth:`memory_kv`) and kept in the layer cache.

    Shapes: ``forward(x (B, T, d), k (B, H, S, d_h) | None, v (B, H, S, d_h), memory_padding_mask (B, S) | None,
    start=0) -> (B, T, d)``; ``start`` is the position of ``x[:, 0]`` (used by ``R``).
    """

    def __init__(self, d_model: int, n_heads: int, max_len: int, kind: str = "V", dropout: float = 0.0) -> None:
        super().__init__()
        if kind not in ("V", "R", "D"):
            raise ValueError(f"cross-attention kind must be one of 'V', 'R', 'D', got {kind!r}")
        self.kind, self.n_heads, self.head_dim, self.dropout = kind, n_heads, d_model // n_heads, dropout
        self.max_len = max_len
        self.value = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)
        if kind == "V":
            self.query = nn.Linear(d_model, d_model)
            self.key = nn.Linear(d_model, d_model)
        elif kind == "R":
            self.R = nn.Parameter(torch.randn(n_heads, max_len, max_len))  # (H, target pos, source pos)
        else:  # "D"
            self.w1 = nn.Linear(d_model, d_model)  # split into H hidden vectors of width d_h
            bound = 1.0 / math.sqrt(self.head_dim)
            self.W2 = nn.Parameter(torch.empty(n_heads, max_len, self.head_dim).uniform_(-bound, bound))
            self.b2 = nn.Parameter(torch.empty(n_heads, max_len).uniform_(-bound, bound))

    def _heads(self, t: Tensor) -> Tensor:
        b, length, _ = t.shape
        return t.view(b, length, self.n_heads, self.head_dim).transpose(1, 2)  # (B, L, d) -> (B, H, L, d_h)

    def memory_kv(self, memory: Tensor) -> tuple[Tensor | None, Tensor]:
        """Keys (``V`` only, else None) and values of the memory: (B, S, d) -> (B, H, S, d_h) each."""
        if memory.shape[1] > self.max_len:
            raise ValueError(f"source length {memory.shape[1]} exceeds max_len {self.max_len}")
        k = self._heads(self.key(memory)) if self.kind == "V" else None
        return k, self._heads(self.value(memory))

    def forward(
        self,
        x: Tensor,
        k: Tensor | None,
        v: Tensor,
        memory_padding_mask: Tensor | None = None,
        start: int = 0,
    ) -> Tensor:
        b, t, d = x.shape
        s = v.shape[2]
        drop = self.dropout if self.training else 0.0
        if self.kind == "V":
            q = self._heads(self.query(x))  # (B, H, T, d_h)
            mask = None
            if memory_padding_mask is not None:
                # additive float mask (B, 1, 1, S): keeps SDPA on its fused CPU kernel; half of the most negative
                # float cannot overflow to -inf when added to a logit
                mask = torch.zeros(b, 1, 1, s, dtype=q.dtype, device=q.device).masked_fill(
                    memory_padding_mask[:, None, None, :], torch.finfo(q.dtype).min / 2
                )
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=drop)  # (B, H, T, d_h)
        else:
            if start + t > self.max_len:
                raise ValueError(f"target length {start + t} exceeds max_len {self.max_len}")
            if self.kind == "R":
                logits = self.R[None, :, start : start + t, :s]  # (1, H, T, S): row = target position
            else:
                hidden = F.relu(self._heads(self.w1(x)))  # (B, H, T, d_h), row i from target token i alone
                logits = hidden @ self.W2[:, :s].transpose(-1, -2) + self.b2[:, None, :s]  # (B, H, T, S)
            mask = None if memory_padding_mask is None else memory_padding_mask[:, None, None, :]  # (B, 1, 1, S)
            probs = F.dropout(masked_softmax(logits, mask), drop, self.training)  # (B|1, H, T, S)
            y = probs @ v  # (B|1, H, T, S) @ (B, H, S, d_h) -> (B, H, T, d_h)
        return self.out(y.transpose(1, 2).reshape(b, t, d))  # (B, H, T, d_h) -> (B, T, H, d_h) -> (B, T, d)


class TransformerBlock(nn.Module):
    """One Transformer layer: self-attention (any token mixer), optional cross-attention, feed-forward network;
    each sublayer wrapped in a residual connection with dropout and LayerNorm (pre or post).

    Pre-norm: ``x = x + drop(f(LN(x)))``; post-norm: ``x = LN(x + drop(f(x)))``.

    Args:
        d_model, n_heads, max_len: width, heads and longest sequence.
        kind: the self-attention token mixer, any name :func:`synthformer.attention.build_mixer` accepts.
        causal: decoder layer (causal self-attention, causal conv FFN, decoding cache available).
        d_ff, ffn, ffn_kernel_size: the feed-forward network (see :class:`ConvReluFFN`).
        dropout: residual dropout.
        attention_dropout: passed to the mixers as their ``dropout``.
        norm: ``"pre"`` or ``"post"``.
        cross_kind: None for no cross-attention, else its kind (``"V"``, ``"R"``, ``"D"``).
        kind_options: options for the self-attention mixer.

    Shapes: ``forward(x (B, L, d), padding_mask (B, L) | None, memory_kv, memory_padding_mask (B, S) | None,
    cache=None) -> (B, L, d)``; with a :class:`LayerCache` x holds T new positions and the call returns
    ``(y (B, T, d), cache)``.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        max_len: int,
        kind: str,
        causal: bool,
        d_ff: int,
        ffn: str = "relu",
        ffn_kernel_size: int = 3,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        norm: str = "pre",
        cross_kind: str | None = None,
        kind_options: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.pre_norm = norm == "pre"
        self.causal = causal
        self.self_attn = build_mixer(kind, d_model, n_heads, max_len, causal, attention_dropout, **(kind_options or {}))
        self.norm_self = nn.LayerNorm(d_model)
        self.cross_attn = None
        if cross_kind is not None:
            self.cross_attn = CrossAttention(d_model, n_heads, max_len, cross_kind, attention_dropout)
            self.norm_cross = nn.LayerNorm(d_model)
        self.ffn = build_ffn(ffn, d_model, d_ff, ffn_kernel_size, causal)
        self.norm_ffn = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def _residual(self, x: Tensor, norm: nn.LayerNorm, sublayer) -> Tensor:
        if self.pre_norm:
            return x + self.dropout(sublayer(norm(x)))
        return norm(x + self.dropout(sublayer(x)))

    def forward(
        self,
        x: Tensor,
        padding_mask: Tensor | None = None,
        memory_kv: tuple[Tensor | None, Tensor] | None = None,
        memory_padding_mask: Tensor | None = None,
        cache: LayerCache | None = None,
        start: int = 0,
    ) -> Any:
        """Run the layer. ``memory_kv`` are the cross-attention keys/values of the memory (from
        :meth:`CrossAttention.memory_kv`); in decoding they come from ``cache`` instead, and ``start`` is the
        position of ``x[:, 0]``."""
        if cache is None:
            x = self._residual(x, self.norm_self, lambda h: self.self_attn(h, key_padding_mask=padding_mask))
        else:
            box: dict[str, Any] = {}

            def attend(h: Tensor) -> Tensor:
                y, box["cache"] = self.self_attn(h, key_padding_mask=padding_mask, cache=cache.self_attn)
                return y

            x = self._residual(x, self.norm_self, attend)
            cache.self_attn = box["cache"]
            memory_kv = (cache.cross_k, cache.cross_v) if cache.cross_v is not None else memory_kv
        if self.cross_attn is not None:
            if memory_kv is None:
                raise ValueError("this layer has cross-attention: pass the memory's keys and values")
            k, v = memory_kv
            x = self._residual(x, self.norm_cross, lambda h: self.cross_attn(h, k, v, memory_padding_mask, start))
        if cache is None:
            return self._residual(x, self.norm_ffn, lambda h: self.ffn(h, padding_mask))

        def feed(h: Tensor) -> Tensor:
            y, cache.ffn = self.ffn.step(h, padding_mask, cache.ffn)
            return y

        return self._residual(x, self.norm_ffn, feed), cache

    def init_cache(
        self, batch_size: int, device=None, dtype=None, memory_kv: tuple[Tensor | None, Tensor] | None = None
    ) -> LayerCache:
        """An empty decoding cache for this (causal) layer; ``memory_kv`` is stored for the cross-attention."""
        if not self.causal:
            raise ValueError("incremental decoding needs a causal (decoder) layer")
        k, v = memory_kv if memory_kv is not None else (None, None)
        return LayerCache(
            self_attn=self.self_attn.init_cache(batch_size, device=device, dtype=dtype),
            ffn=self.ffn.init_cache(batch_size, device=device, dtype=dtype),
            cross_k=k,
            cross_v=v,
        )
