"""Building blocks of the task models: embeddings, the feed-forward networks, cross-attention and the layer.

Shapes use B (batch), L (sequence length), T (new positions in decoding), S (source length), d (``d_model``),
H (heads), d_h (``d // H``, or the config's ``head_dim``), V (vocabulary).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

# the decoder's attention over the encoder memory is the attention package's cross layer (any cross-capable kind)
from synthformer.attention import SynthesizerCrossAttention as CrossAttention
from synthformer.attention import build_mixer

from .cache import LayerCache
from .variant_parts import DEFAULT_VARIANT, VariantParts, get_variant

__all__ = ["ConvReluFFN", "CrossAttention", "Embeddings", "PositionWiseFFN", "ReluFFN", "TransformerBlock"]


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
        positions: ``"sinusoidal"`` (a fixed buffer, not saved), ``"learned"`` or ``"none"`` (T5: positions come
            from the attention's relative position bias).
        dropout: dropout on the sum.
        scale: multiply the token embedding by ``sqrt(d)`` (False for T5, whose embedding is N(0, 1) already).

    Shapes: ``forward(ids (B, T), start=0, positions=None) -> (B, T, d)``; the tokens sit at positions
    ``start .. start+T-1``, or at ``positions`` (B, T) when given (left-padded rows, see
    :mod:`synthformer.models.positions`).
    """

    def __init__(self, vocab_size: int, d_model: int, max_len: int, positions: str, dropout: float,
                 scale: bool = True) -> None:
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.token = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.token.weight, std=d_model**-0.5)
        self.scale = math.sqrt(d_model) if scale else 1.0
        self.learned = positions == "learned"
        self.absolute = positions != "none"
        if self.learned:
            self.position = nn.Embedding(max_len, d_model)
            nn.init.normal_(self.position.weight, std=0.02)
        elif self.absolute:
            # a function of the shape only: recomputed on load rather than stored in checkpoints
            self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)
        self.dropout = nn.Dropout(dropout)

    @torch.no_grad()
    def reset_buffers(self) -> None:
        """Recompute the sinusoidal position table (a buffer that checkpoints do not hold: a model built without
        data, as ``transformers``' ``from_pretrained`` does, has to fill it again); nothing for learned positions."""
        if self.absolute and not self.learned:
            self.table.copy_(sinusoidal_table(self.max_len, self.d_model))

    def forward(self, ids: Tensor, start: int = 0, positions: Tensor | None = None) -> Tensor:
        t = ids.shape[1]
        if start + t > self.max_len:
            raise ValueError(f"sequence length {start + t} exceeds max_len {self.max_len} of the model")
        x = self.token(ids) * self.scale  # (B, T, d)
        if not self.absolute:
            return self.dropout(x)
        if positions is not None:
            table = self.position.weight if self.learned else self.table.to(x.dtype)  # (max_len, d)
            return self.dropout(x + table[positions])  # (B, T, d) + (B, T, d)
        if self.learned:
            pos = self.position.weight[start : start + t]  # (T, d)
        else:
            pos = self.table[start : start + t].to(x.dtype)  # (T, d)
        return self.dropout(x + pos)


class PositionWiseFFN(nn.Module):
    """Base of the feed-forward networks that read one position at a time: decoding keeps no state, and a step is
    the forward of the new positions. Subclasses define ``forward(x (B, L, d), padding_mask) -> (B, L, d)``."""

    def step(self, x: Tensor, padding_mask: Tensor | None, cache: None) -> tuple[Tensor, None]:
        """Decoding: position-wise, so the same as :meth:`forward`."""
        return self.forward(x), None

    def init_cache(self, batch_size: int, device=None, dtype=None) -> None:
        """Position-wise: nothing to remember between decoding steps."""
        return None


class ReluFFN(PositionWiseFFN):
    """Position-wise ``linear -> ReLU -> linear``. ``forward(x (B, L, d)) -> (B, L, d)``; no decoding state."""

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        return self.fc2(F.relu(self.fc1(x)))


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


class TransformerBlock(nn.Module):
    """One Transformer layer: self-attention (any token mixer), optional cross-attention, feed-forward network;
    each sublayer wrapped in a residual connection with dropout and the variant's norm N (pre or post).

    Pre-norm: ``x = x + drop(f(N(x)))``; post-norm: ``x = N(x + drop(f(x)))``.

    Args:
        d_model, n_heads, max_len: width, heads and longest sequence.
        kind: the self-attention token mixer, any name :func:`synthformer.attention.build_mixer` accepts.
        causal: decoder layer (causal self-attention, causal conv FFN, decoding cache available).
        d_ff, ffn, ffn_kernel_size: the feed-forward network, ``ffn`` one of ``parts.ffns``.
        dropout: residual dropout (and whatever dropout the variant's feed-forward network has).
        attention_dropout: passed to the mixers as their ``dropout``.
        norm: ``"pre"`` or ``"post"``.
        cross_kind: None for no cross-attention, else its kind: any cross-capable kind
            (:func:`synthformer.attention.cross_kinds`; ``"V"`` in the paper).
        kind_options: options for the self-attention mixer.
        mixer_factory: builds the self-attention mixer from ``kind`` (``build_mixer``'s signature; default
            :func:`synthformer.attention.build_mixer`): the architecture's builder hands it down.
        parts: the variant's parts (:class:`~synthformer.models.variant_parts.VariantParts`): the norm, the
            feed-forward networks and the options of every attention; None: the Transformer's.
        head_dim: the head width of the self- and cross-attention (their ``head_dim`` option, under
            ``kind_options``, which may set the self-attention's own); None: ``d_model // n_heads``.

    Shapes: ``forward(x (B, L, d), padding_mask (B, L) | None, memory_kv, memory_padding_mask (B, S) | None,
    cache=None, start=0, position_bias (1, H, L, L) | None) -> (B, L, d)``; with a :class:`LayerCache` x holds T
    new positions and the call returns ``(y (B, T, d), cache)``. ``position_bias`` is added to the self-attention
    logits (the stack's relative position bias).
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
        mixer_factory: Callable[..., nn.Module] | None = None,
        parts: VariantParts | None = None,
        head_dim: int | None = None,
    ) -> None:
        super().__init__()
        parts = parts if parts is not None else get_variant(DEFAULT_VARIANT)
        self.pre_norm = norm == "pre"  # a variant that needs pre-norm says so in parts.requires (the config checks)
        self.causal = causal
        factory = mixer_factory if mixer_factory is not None else build_mixer
        # given only where it changes the width: d_model // n_heads builds every mixer as without it
        width = {} if head_dim is None or head_dim * n_heads == d_model else {"head_dim": head_dim}
        self.self_attn = factory(kind, d_model, n_heads, max_len, causal, attention_dropout,
                                 **{**width, **parts.attention_options, **(kind_options or {})})
        self.norm_self = parts.norm(d_model)
        self.cross_attn = None
        if cross_kind is not None:
            self.cross_attn = CrossAttention(d_model, n_heads, max_len, cross_kind, attention_dropout,
                                             **width, **parts.attention_options)
            self.norm_cross = parts.norm(d_model)
        self.ffn = parts.make_ffn(ffn, d_model, d_ff, ffn_kernel_size, causal, dropout)
        self.norm_ffn = parts.norm(d_model)
        self.dropout = nn.Dropout(dropout)

    def _residual(self, x: Tensor, norm: nn.Module, sublayer) -> Tensor:
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
        position_bias: Tensor | None = None,
        positions: Tensor | None = None,
    ) -> Any:
        """Run the layer. ``memory_kv`` are the cross-attention keys/values of the memory (from
        :meth:`CrossAttention.memory_kv`); in decoding they come from ``cache`` instead, and ``start`` is the
        position of ``x[:, 0]``. ``positions`` (B, start + L) | None: the position of every key column of a
        left-padded batch (see :mod:`synthformer.models.positions`)."""
        # only attention takes a position bias (the config rejects it with whole token mixers)
        biased = {} if position_bias is None else {"position_bias": position_bias}
        if positions is not None and getattr(self.self_attn, "takes_positions", False):
            # The mixers that do not take positions read none: LightConv and DynamicConv zero padded inputs, so
            # left padding is their zero padding at the start (Linformer, which reads the length axis, is
            # encoder-only).
            biased["positions"] = positions
        if cache is None:
            x = self._residual(x, self.norm_self, lambda h: self.self_attn(h, key_padding_mask=padding_mask, **biased))
        else:
            box: dict[str, Any] = {}

            def attend(h: Tensor) -> Tensor:
                y, box["cache"] = self.self_attn(h, key_padding_mask=padding_mask, cache=cache.self_attn, **biased)
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
