"""The encoder-decoder (machine translation, summarization, ...): :class:`Seq2SeqConfig`,
:class:`Seq2SeqTransformer` and their builder."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from torch import Tensor, nn

from synthformer.attention.masking import any_true

from .cache import DecoderCache
from .config import ModelConfig, check_token_head, positive_int
from .layers import Embeddings
from .losses import token_cross_entropy
from .registry import MixerFactory, register_arch
from .stacks import Decoder, Encoder

__all__ = ["Seq2SeqConfig", "Seq2SeqTransformer", "build_seq2seq"]


@dataclass
class Seq2SeqConfig(ModelConfig):
    """An encoder-decoder (arch ``"seq2seq"``): the :class:`ModelConfig` settings (``n_layers`` is the encoder's
    depth) plus

    Attributes:
        tgt_vocab_size: target vocabulary; None shares ``vocab_size``, and then the encoder and decoder share one
            embedding table.
        n_decoder_layers: decoder layers; None means ``n_layers``.
        encoder_kind: token mixer of the encoder self-attention: a name or one name per layer.
        decoder_kind: token mixer of the decoder's causal self-attention.
        cross_kind: the decoder's attention over the encoder output, built from the same registry and shell as
            self-attention: ``"V"`` (dot product, the paper's setting and the default; its section 5 found
            synthetic cross-attention worse) or any kind whose logits can be formed over source positions
            (:func:`synthformer.attention.cross_kinds`).
        encoder_kind_options, decoder_kind_options: options for one stack's mixers, updating ``kind_options``.
        tie_embeddings: the output projection shares the (target) embedding matrix.
        label_smoothing: label smoothing of the token cross-entropy (0.1 for MT in the paper).
    """

    arch: ClassVar[str] = "seq2seq"
    stacks: ClassVar[tuple[str, ...]] = ("encoder", "decoder")
    causal_stacks: ClassVar[tuple[str, ...]] = ("decoder",)
    encoder_decoder: ClassVar[bool] = True
    legacy_fields: ClassVar[dict[str, Any]] = dict(num_classes=None, pooling="mean")

    tgt_vocab_size: int | None = None
    n_decoder_layers: int | None = None
    encoder_kind: str | list[str] = "V"
    decoder_kind: str | list[str] = "V"
    cross_kind: str = "V"
    encoder_kind_options: dict[str, Any] | list[dict[str, Any]] | None = None
    decoder_kind_options: dict[str, Any] | list[dict[str, Any]] | None = None
    tie_embeddings: bool = True
    label_smoothing: float = 0.0

    def validate_arch(self) -> None:
        from synthformer.attention import check_cross_kind

        check_token_head(self)
        if self.tgt_vocab_size is not None:
            positive_int("tgt_vocab_size", self.tgt_vocab_size)
        if self.n_decoder_layers is not None:
            positive_int("n_decoder_layers", self.n_decoder_layers)
        if not isinstance(self.cross_kind, str):
            raise ValueError(f"cross_kind must be a kind name such as 'V', got {self.cross_kind!r}")
        try:
            check_cross_kind(self.cross_kind)
        except ValueError as err:
            raise ValueError(f"cross_kind={self.cross_kind!r}: {err}") from None

    @property
    def target_vocab_size(self) -> int:
        """The vocabulary the decoder predicts (``tgt_vocab_size`` when set, else ``vocab_size``)."""
        return self.tgt_vocab_size if self.tgt_vocab_size is not None else self.vocab_size

    @property
    def decoder_layers(self) -> int:
        """Number of decoder layers (``n_decoder_layers`` if set, else ``n_layers``)."""
        return self.n_decoder_layers if self.n_decoder_layers is not None else self.n_layers

    def stack_layers(self, stack: str) -> int:
        self._check_stack(stack)
        return self.decoder_layers if stack == "decoder" else self.n_layers


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

    def __init__(self, config: Seq2SeqConfig, mixer_factory: MixerFactory | None = None) -> None:
        super().__init__()
        if not isinstance(config, Seq2SeqConfig):
            raise ValueError(f"Seq2SeqTransformer needs a Seq2SeqConfig (arch='seq2seq'), got arch={config.arch!r}")
        self.config = config
        emb = (config.d_model, config.max_len, config.positions, config.dropout)
        self.src_embed = Embeddings(config.vocab_size, *emb)
        if config.tgt_vocab_size is None:
            # shared vocabulary: one table (positions too), saved once
            self.tgt_embed = self.src_embed
        else:
            self.tgt_embed = Embeddings(config.tgt_vocab_size, *emb)
        self.encoder = Encoder(config, mixer_factory)
        self.decoder = Decoder(config, cross=True, mixer_factory=mixer_factory)
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
        if not any_true(src_padding_mask):  # (True on meta: shape-only runs keep the mask)
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


@register_arch(Seq2SeqConfig)
def build_seq2seq(config: Seq2SeqConfig, mixer_factory: MixerFactory) -> Seq2SeqTransformer:
    """The encoder-decoder of ``config``, its self-attention mixers made by ``mixer_factory``."""
    return Seq2SeqTransformer(config, mixer_factory)
