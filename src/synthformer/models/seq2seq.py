"""``Seq2SeqTransformer``: the encoder-decoder model (machine translation, summarization, ...)."""

from __future__ import annotations

from torch import Tensor, nn

from .cache import DecoderCache
from .config import ModelConfig
from .layers import Embeddings
from .losses import token_cross_entropy
from .stacks import Decoder, Encoder

__all__ = ["Seq2SeqTransformer"]


class Seq2SeqTransformer(nn.Module):
    """Encoder (``config.encoder_kind`` self-attention) and decoder (``config.decoder_kind`` causal
    self-attention plus ``config.cross_kind`` cross-attention, dot product by default as in the paper).

    Embeddings: with a shared vocabulary (``tgt_vocab_size`` None) the encoder and decoder use one table; with
    ``tie_embeddings`` the output projection is the decoder's embedding matrix.

    Batch contract (``docs/CONTRACTS.md``): ``forward(src_ids (B, S), tgt_ids (B, T), src_padding_mask (B, S) bool
    | None, labels (B, T) | None)`` returns ``{"logits": (B, T, V_tgt), "loss": scalar}``; ``tgt_ids`` is the
    decoder input (``<bos> y1 .. yn``), ``labels`` the targets (``y1 .. yn <eos>``, -100 where not counted); the loss
    is label-smoothed cross-entropy (``config.label_smoothing``). A missing ``src_padding_mask`` is derived from
    ``src_ids == config.pad_id``. Target padding needs no mask: the decoder is causal and padded labels are -100.

    Decoding: ``memory, mask = model.encode(src_ids, src_padding_mask)``,
    ``cache = model.init_cache(memory, mask)`` (computes the cross-attention keys/values once), then
    ``logits, cache = model.decode_step(tgt_ids_new (B, T), cache)``.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        if config.arch != "seq2seq":
            raise ValueError(f"Seq2SeqTransformer needs a config with arch='seq2seq', got arch={config.arch!r}")
        self.config = config
        emb = (config.d_model, config.max_len, config.positions, config.dropout)
        self.src_embed = Embeddings(config.vocab_size, *emb)
        if config.tgt_vocab_size is None:
            # shared vocabulary: one table (positions too), saved once
            self.tgt_embed = self.src_embed
        else:
            self.tgt_embed = Embeddings(config.tgt_vocab_size, *emb)
        self.encoder = Encoder(config)
        self.decoder = Decoder(config, cross=True)
        self.lm_head = nn.Linear(config.d_model, config.target_vocab_size, bias=False)
        if config.tie_embeddings:
            self.lm_head.weight = self.tgt_embed.token.weight  # (V_tgt, d): lookup and projection share storage

    @property
    def supports_cache(self) -> bool:
        """True if every decoder layer can decode incrementally."""
        return self.decoder.supports_cache

    def encode(self, src_ids: Tensor, src_padding_mask: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """Encode the source: src_ids (B, S) -> (memory (B, S, d), src_padding_mask (B, S) bool or None when the
        batch has no padding)."""
        if src_padding_mask is None:
            src_padding_mask = src_ids == self.config.pad_id
        if not bool(src_padding_mask.any()):
            src_padding_mask = None  # nothing to mask: lets the mixers take their unmasked fast paths
        memory = self.encoder(self.src_embed(src_ids), padding_mask=src_padding_mask)
        return memory, src_padding_mask

    def decode(self, tgt_ids: Tensor, memory: Tensor, memory_padding_mask: Tensor | None = None) -> Tensor:
        """Full (teacher-forced) decoder pass: tgt_ids (B, T), memory (B, S, d) -> logits (B, T, V_tgt)."""
        h = self.decoder(self.tgt_embed(tgt_ids), memory=memory, memory_padding_mask=memory_padding_mask)
        return self.lm_head(h)  # (B, T, d) -> (B, T, V_tgt)

    def forward(
        self,
        src_ids: Tensor,
        tgt_ids: Tensor,
        src_padding_mask: Tensor | None = None,
        labels: Tensor | None = None,
    ) -> dict[str, Tensor]:
        """Logits for every target position (and the loss with ``labels``); see the class docstring."""
        memory, src_padding_mask = self.encode(src_ids, src_padding_mask)
        logits = self.decode(tgt_ids, memory, src_padding_mask)
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = token_cross_entropy(logits, labels, self.config.label_smoothing)
        return out

    def init_cache(self, memory: Tensor, memory_padding_mask: Tensor | None = None) -> DecoderCache:
        """An empty decoding cache for the sources encoded in ``memory`` (B, S, d); the cross-attention keys and
        values are computed here, once, and reused at every step."""
        return self.decoder.init_cache(
            memory.shape[0],
            device=memory.device,
            dtype=memory.dtype,
            memory=memory,
            memory_padding_mask=memory_padding_mask,
        )

    def decode_step(self, tgt_ids: Tensor, cache: DecoderCache) -> tuple[Tensor, DecoderCache]:
        """Feed the next T target tokens (B, T) at positions ``cache.length ..``; returns (logits (B, T, V), cache)."""
        x = self.tgt_embed(tgt_ids, start=cache.length)  # (B, T, d)
        h, cache = self.decoder.step(x, cache)
        return self.lm_head(h), cache
