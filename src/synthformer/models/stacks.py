"""The encoder and decoder stacks shared by the task models.

A stack owns its layers and, for pre-norm, the final norm (pre-norm leaves the residual stream
un-normalized, so the stack output needs one last norm; post-norm layers already end with one).
Embeddings and output heads belong to the models, which decide what is shared or tied.

What the layers are made of comes from the variant's parts (:class:`~.variant_parts.VariantParts`, given by
the model or resolved from the config by :func:`~.variants.parts_of`): the norm, the feed-forward
networks, the options of every attention, dropout after the final norm, and a relative position bias (T5's, with
``position_bias="t5"``), which the stack owns, computes once per forward (or decoding step) and passes as the
same (1, H, T, S) tensor to every layer.
"""

from __future__ import annotations

import logging

from torch import Tensor, nn

from .cache import DecoderCache
from .config import ModelConfig
from .layers import TransformerBlock
from .positions import extend_positions, step_positions
from .registry import MixerFactory
from .variant_parts import VariantParts
from .variants import parts_of

__all__ = ["Decoder", "Encoder"]

logger = logging.getLogger(__name__)


def _blocks(config: ModelConfig, stack: str, causal: bool, cross_kind: str | None,
            mixer_factory: MixerFactory | None, parts: VariantParts) -> nn.ModuleList:
    kinds, options = config.layer_kinds(stack), config.layer_options(stack)
    return nn.ModuleList(
        TransformerBlock(
            d_model=config.d_model,
            n_heads=config.n_heads,
            max_len=config.max_len,
            kind=kind,
            causal=causal,
            d_ff=config.d_ff,
            ffn=config.ffn,
            ffn_kernel_size=config.ffn_kernel_size,
            dropout=config.dropout,
            attention_dropout=config.attention_dropout,
            norm=config.norm,
            cross_kind=cross_kind,
            kind_options=opts,
            mixer_factory=mixer_factory,
            parts=parts,
            head_dim=config.attention_head_dim,
        )
        for kind, opts in zip(kinds, options, strict=True)
    )


def _stack_end(stack: nn.Module, config: ModelConfig, parts: VariantParts, bidirectional: bool) -> None:
    """Give ``stack`` what follows and goes alongside its layers: the final norm, the output dropout and the
    relative position bias (each a no-op or None when the parts have none)."""
    stack.final_norm = parts.final_norm(config.d_model, config.norm)
    stack.final_dropout = nn.Dropout(config.dropout) if parts.stack_dropout else nn.Identity()
    stack.relative_bias = None if parts.position_bias is None else parts.position_bias(config, bidirectional)


class Encoder(nn.Module):
    """Bidirectional stack of ``config.n_layers`` layers with ``config.encoder_kind`` self-attention.

    ``parts``: the variant's parts; None resolves them from ``config`` (:func:`~.variants.parts_of`).

    Shapes: ``forward(x (B, L, d) embedded input, padding_mask (B, L) bool | None) -> (B, L, d)``.
    """

    def __init__(self, config: ModelConfig, mixer_factory: MixerFactory | None = None,
                 parts: VariantParts | None = None) -> None:
        super().__init__()
        parts = parts if parts is not None else parts_of(config)
        self.layers = _blocks(config, "encoder", False, None, mixer_factory, parts)
        _stack_end(self, config, parts, bidirectional=True)

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        length = x.shape[1]
        bias = None if self.relative_bias is None else self.relative_bias(length, length)  # (1, H, L, L)
        for layer in self.layers:
            x = layer(x, padding_mask=padding_mask, position_bias=bias)
        return self.final_dropout(self.final_norm(x))


class Decoder(nn.Module):
    """Causal stack with ``config.decoder_kind`` self-attention and, when ``cross`` is set, cross-attention of
    kind ``config.cross_kind`` over an encoder memory.

    Full forward: ``forward(x (B, T, d), memory (B, S, d) | None, memory_padding_mask (B, S) | None,
    padding_mask (B, T) | None, positions (B, T) | None) -> (B, T, d)``.
    Decoding: ``init_cache(...)`` then ``step(x (B, T', d), cache, padding_mask (B, S' + T') | None, positions
    (B, T') | None) -> ((B, T', d), cache)`` for the next T' positions; the outputs equal those of the full
    forward at the same positions. ``positions`` are those of left-padded rows (see
    :mod:`synthformer.models.positions`); the cache keeps them for the later steps. ``parts`` as the encoder's.
    """

    def __init__(self, config: ModelConfig, cross: bool, mixer_factory: MixerFactory | None = None,
                 parts: VariantParts | None = None) -> None:
        super().__init__()
        self.cross = cross
        parts = parts if parts is not None else parts_of(config)
        cross_kind = config.cross_kind if cross else None  # only an encoder-decoder config has one
        self.layers = _blocks(config, "decoder", True, cross_kind, mixer_factory, parts)
        _stack_end(self, config, parts, bidirectional=False)

    def _bias(self, queries: int, start: int) -> Tensor | None:
        """(1, H, T, start + T) relative position bias of the queries at ``start ..``, or None."""
        return None if self.relative_bias is None else self.relative_bias(queries, start + queries, start)

    @property
    def supports_cache(self) -> bool:
        """True if every self-attention mixer can decode incrementally (has ``init_cache``)."""
        return all(callable(getattr(layer.self_attn, "init_cache", None)) for layer in self.layers)

    def memory_kv(self, memory: Tensor) -> list[tuple[Tensor | None, Tensor]]:
        """Cross-attention keys/values of ``memory`` (B, S, d) for every layer: (B, H, S, d_h) each."""
        return [layer.cross_attn.memory_kv(memory) for layer in self.layers]

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None = None,
        memory_padding_mask: Tensor | None = None,
        padding_mask: Tensor | None = None,
        positions: Tensor | None = None,
    ) -> Tensor:
        if self.cross and memory is None:
            raise ValueError("this decoder attends to an encoder memory: pass memory (B, S, d_model)")
        bias = self._bias(x.shape[1], 0)
        for layer in self.layers:
            kv = layer.cross_attn.memory_kv(memory) if self.cross else None
            x = layer(x, padding_mask=padding_mask, memory_kv=kv, memory_padding_mask=memory_padding_mask,
                      position_bias=bias, positions=positions)
        return self.final_dropout(self.final_norm(x))

    def init_cache(
        self,
        batch_size: int,
        device=None,
        dtype=None,
        memory: Tensor | None = None,
        memory_padding_mask: Tensor | None = None,
    ) -> DecoderCache:
        """An empty cache; with cross-attention the memory's keys/values are computed here, once."""
        if self.cross and memory is None:
            raise ValueError("this decoder attends to an encoder memory: pass memory (B, S, d_model)")
        kvs = self.memory_kv(memory) if self.cross else [None] * len(self.layers)
        layers = [
            layer.init_cache(batch_size, device=device, dtype=dtype, memory_kv=kv)
            for layer, kv in zip(self.layers, kvs, strict=True)
        ]
        return DecoderCache(layers=layers, length=0, memory_padding_mask=memory_padding_mask)

    def step(self, x: Tensor, cache: DecoderCache, padding_mask: Tensor | None = None,
             positions: Tensor | None = None) -> tuple[Tensor, DecoderCache]:
        """Process the next T positions: x (B, T, d) embedded at columns ``cache.length ..``; returns
        ((B, T, d), cache) with ``cache.length`` advanced by T. ``padding_mask`` (B, cache.length + T) covers every
        column so far; ``positions`` (B, T) are the new tokens' positions in left-padded rows (None: their
        columns; see :func:`~synthformer.models.positions.step_positions`)."""
        start = cache.length
        bias = self._bias(x.shape[1], start)
        b, t = x.shape[:2]
        positions = step_positions(cache.positions, positions, padding_mask, start, t, b)  # (B, T) or None
        cache.positions = extend_positions(cache.positions, positions, start, b)  # (B, S) or None
        for layer, layer_cache in zip(self.layers, cache.layers, strict=True):
            x, _ = layer(x, padding_mask=padding_mask, memory_padding_mask=cache.memory_padding_mask,
                         cache=layer_cache, start=start, position_bias=bias, positions=cache.positions)
        cache.length = start + x.shape[1]
        return self.final_dropout(self.final_norm(x)), cache
