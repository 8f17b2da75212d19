"""The encoder and decoder stacks shared by the task models.

A stack owns its layers and, for pre-norm, the final LayerNorm (pre-norm leaves the residual stream
un-normalized, so the stack output needs one last LayerNorm; post-norm layers already end with one).
Embeddings and output heads belong to the models, which decide what is shared or tied.
"""

from __future__ import annotations

import logging

from torch import Tensor, nn

from .cache import DecoderCache
from .config import ModelConfig
from .layers import TransformerBlock
from .registry import MixerFactory

__all__ = ["Decoder", "Encoder"]

logger = logging.getLogger(__name__)


def _blocks(config: ModelConfig, stack: str, causal: bool, cross_kind: str | None,
            mixer_factory: MixerFactory | None) -> nn.ModuleList:
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
        )
        for kind, opts in zip(kinds, options, strict=True)
    )


class Encoder(nn.Module):
    """Bidirectional stack of ``config.n_layers`` layers with ``config.encoder_kind`` self-attention.

    Shapes: ``forward(x (B, L, d) embedded input, padding_mask (B, L) bool | None) -> (B, L, d)``.
    """

    def __init__(self, config: ModelConfig, mixer_factory: MixerFactory | None = None) -> None:
        super().__init__()
        self.layers = _blocks(config, "encoder", causal=False, cross_kind=None, mixer_factory=mixer_factory)
        self.final_norm = nn.LayerNorm(config.d_model) if config.norm == "pre" else nn.Identity()

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        for layer in self.layers:
            x = layer(x, padding_mask=padding_mask)
        return self.final_norm(x)


class Decoder(nn.Module):
    """Causal stack with ``config.decoder_kind`` self-attention and, when ``cross`` is set, cross-attention of
    kind ``config.cross_kind`` over an encoder memory.

    Full forward: ``forward(x (B, T, d), memory (B, S, d) | None, memory_padding_mask (B, S) | None,
    padding_mask (B, T) | None) -> (B, T, d)``.
    Decoding: ``init_cache(...)`` then ``step(x (B, T', d), cache) -> ((B, T', d), cache)`` for the next T'
    positions; the outputs equal those of the full forward at the same positions.
    """

    def __init__(self, config: ModelConfig, cross: bool, mixer_factory: MixerFactory | None = None) -> None:
        super().__init__()
        self.cross = cross
        cross_kind = config.cross_kind if cross else None  # only an encoder-decoder config has one
        self.layers = _blocks(config, "decoder", causal=True, cross_kind=cross_kind, mixer_factory=mixer_factory)
        self.final_norm = nn.LayerNorm(config.d_model) if config.norm == "pre" else nn.Identity()

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
    ) -> Tensor:
        if self.cross and memory is None:
            raise ValueError("this decoder attends to an encoder memory: pass memory (B, S, d_model)")
        for layer in self.layers:
            kv = layer.cross_attn.memory_kv(memory) if self.cross else None
            x = layer(x, padding_mask=padding_mask, memory_kv=kv, memory_padding_mask=memory_padding_mask)
        return self.final_norm(x)

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

    def step(self, x: Tensor, cache: DecoderCache) -> tuple[Tensor, DecoderCache]:
        """Process the next T positions: x (B, T, d) embedded at positions ``cache.length ..``; returns
        ((B, T, d), cache) with ``cache.length`` advanced by T."""
        start = cache.length
        for layer, layer_cache in zip(self.layers, cache.layers, strict=True):
            x, _ = layer(x, memory_padding_mask=cache.memory_padding_mask, cache=layer_cache, start=start)
        cache.length = start + x.shape[1]
        return self.final_norm(x), cache
