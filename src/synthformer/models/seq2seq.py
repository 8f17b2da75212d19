"""The encoder-decoder (machine translation, summarization, ...): :class:`Seq2SeqConfig`,
:class:`Seq2SeqTransformer` and their builder.

T5 is a ``variant`` of this architecture, not an architecture of its own: it has the same stacks, batches,
decoding cache and output, so every task type that trains an encoder-decoder (``seq2seq``, ``span_corruption``,
``text_to_text``), generation, evaluation, ``init_from`` and the Hugging Face export serve it unchanged, while a
separate ``arch`` would have needed each of them taught a second name. ``variant`` names the parts the layers
are made of (:mod:`synthformer.models.variants`; ``"t5"``'s are in :mod:`synthformer.models.t5`); T5's
relative position bias is a separate, explicit setting (``position_bias``), usable with every variant and every
attention kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from torch import Tensor, nn

from synthformer.attention import any_true
from synthformer.common import ConfigError

from .cache import DecoderCache
from .config import POSITIONS, ModelConfig, check_token_head, choice, positive_int
from .layers import Embeddings
from .losses import token_cross_entropy
from .positions import put_columns, real_first, take_columns
from .registry import MixerFactory, register_arch
from .stacks import Decoder, Encoder
from .variant_parts import DEFAULT_VARIANT, get_variant, list_variants
from .variants import POSITION_BIASES, parts_of

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
        variant: a registered variant (:func:`~synthformer.models.variant_parts.list_variants`):
            ``"transformer"`` (the layer above: LayerNorm, biases, scaled dot product, embeddings scaled by
            ``sqrt(d)``) or ``"t5"``, T5's layer as Hugging Face's ``T5ForConditionalGeneration`` computes it:
            pre-norm RMS norms (no bias, no mean subtraction, eps 1e-6), no biases in any projection, V's dot
            product unscaled (T5 folds ``1/sqrt(d_h)`` into Q's initialisation), unscaled embeddings, dropout also
            on the feed-forward hidden layer and after each stack's final norm, T5's initialisation. It needs
            ``norm="pre"``, ``positions="none"`` (positions come from ``position_bias``) and ``ffn`` ``"relu"``
            (T5 v1.0) or ``"gated-gelu"`` (v1.1, GELU's tanh approximation). ``dropout`` is T5's
            ``dropout_rate``; T5 also uses it for ``attention_dropout``.
        position_bias: ``"none"`` or ``"t5"``: T5's bucketed relative position bias, one table per stack
            (bidirectional buckets in the encoder, causal ones in the decoder), computed once per forward and
            added to the self-attention logits of every layer of the stack, whatever its kind (in a mixture, to
            the mixed logits); none in cross-attention. Whole token mixers (LightConv, DynamicConv, Linformer)
            have no logits to add it to: a ConfigError.
        relative_attention_num_buckets, relative_attention_max_distance: T5's buckets (32) and the distance
            from which all positions share the last bucket (128).
        scale_decoder_outputs: multiply the decoder output by ``d^-1/2`` before the output projection (T5 v1.0,
            whose output projection is the tied embedding; Hugging Face's ``scale_decoder_outputs``).
        head_dim: the width of each attention head, T5's ``d_kv``; None (the default) is ``d_model // n_heads``.
            Given, every attention layer, the cross-attention included, is ``n_heads * head_dim`` wide inside
            (values, V's queries and keys, the per-head hidden layers of D, FD, ConvReluConv, GLU) and its output
            projection maps back to ``d_model``, so that ``n_heads`` can vary at a fixed head width; ``d_model``
            need not be divisible by ``n_heads``. A whole token mixer without a head width (LightConv,
            DynamicConv) is then a ConfigError.
    """

    arch: ClassVar[str] = "seq2seq"
    stacks: ClassVar[tuple[str, ...]] = ("encoder", "decoder")
    causal_stacks: ClassVar[tuple[str, ...]] = ("decoder",)
    encoder_decoder: ClassVar[bool] = True
    attention_head_dim_field: ClassVar[str | None] = "head_dim"
    legacy_fields: ClassVar[dict[str, Any]] = dict(num_classes=None, pooling="mean")
    position_choices: ClassVar[tuple[str, ...]] = (*POSITIONS, "none")

    tgt_vocab_size: int | None = None
    n_decoder_layers: int | None = None
    encoder_kind: str | list[str] = "V"
    decoder_kind: str | list[str] = "V"
    cross_kind: str = "V"
    encoder_kind_options: dict[str, Any] | list[dict[str, Any]] | None = None
    decoder_kind_options: dict[str, Any] | list[dict[str, Any]] | None = None
    tie_embeddings: bool = True
    label_smoothing: float = 0.0
    variant: str = DEFAULT_VARIANT
    position_bias: str = "none"
    relative_attention_num_buckets: int = 32
    relative_attention_max_distance: int = 128
    scale_decoder_outputs: bool = False
    head_dim: int | None = None

    def validate_arch(self) -> None:
        from synthformer.attention import check_cross_kind

        check_token_head(self)
        self._validate_variant_settings()
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

    def _validate_variant_settings(self) -> None:
        from synthformer.attention import is_whole_mixer

        parts = get_variant(self.variant)
        choice("position_bias", self.position_bias, tuple(POSITION_BIASES))
        positive_int("relative_attention_num_buckets", self.relative_attention_num_buckets)
        positive_int("relative_attention_max_distance", self.relative_attention_max_distance)
        if self.relative_attention_num_buckets < 4:
            raise ConfigError(f"relative_attention_num_buckets must be at least 4 (2 directions x exact and "
                              f"log-spaced buckets), got {self.relative_attention_num_buckets!r}")
        if self.relative_attention_max_distance <= self.relative_attention_num_buckets // 2:
            raise ConfigError(f"relative_attention_max_distance must exceed relative_attention_num_buckets // 2 "
                              f"({self.relative_attention_num_buckets // 2}), got "
                              f"{self.relative_attention_max_distance!r}")
        if not isinstance(self.scale_decoder_outputs, bool):
            raise ConfigError(f"scale_decoder_outputs must be a bool, got {self.scale_decoder_outputs!r}")
        problem = parts.check(self)
        if problem is not None:
            raise ConfigError(problem)
        # attention options (T5's: no bias, unscaled) and a position bias need attention logits to act on
        needs = []
        if parts.attention_options:
            needs.append(f"variant={self.variant!r}")
        if POSITION_BIASES[self.position_bias] is not None:
            needs.append(f"position_bias={self.position_bias!r}")
        for stack in ("encoder", "decoder") if needs else ():
            kind = getattr(self, f"{stack}_kind")
            for k in kind if isinstance(kind, (list, tuple)) else [kind]:
                if isinstance(k, str) and is_whole_mixer(k):
                    raise ConfigError(f"{stack}_kind={k!r} is a whole token mixer without attention logits; "
                                      f"{needs[0]} needs attention kinds (V, R, D, R+V, ...)")

    @property
    def ffn_choices(self) -> tuple[str, ...]:  # type: ignore[override]
        """The feed-forward networks of every registered variant (which ones ``variant`` builds is checked with
        it): ``relu`` and ``conv_relu`` (the Transformer's), ``gated-gelu`` (T5 v1.1's), ..."""
        return tuple(dict.fromkeys(name for variant in list_variants() for name in get_variant(variant).ffns))

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

    Sources may be padded on either side (or anywhere): the encoder moves a row's real tokens to its front
    (:func:`~synthformer.models.positions.real_first`) and encodes the right-padded row, exactly, for every kind
    (each token's column is then its position), and puts the outputs back in the source's columns; the decoder
    moves the memory's real columns to the front the same way, so that cross-attention kinds that read source
    columns (R, FR, D, ...) see each source token at its position. A left-padded source gives what the
    right-padded one gives.
    """

    def __init__(self, config: Seq2SeqConfig, mixer_factory: MixerFactory | None = None) -> None:
        super().__init__()
        if not isinstance(config, Seq2SeqConfig):
            raise ValueError(f"Seq2SeqTransformer needs a Seq2SeqConfig (arch='seq2seq'), got arch={config.arch!r}")
        self.config = config
        parts = parts_of(config)
        emb = (config.d_model, config.max_len, config.positions, config.dropout, parts.scale_embeddings)
        self.src_embed = Embeddings(config.vocab_size, *emb)
        if config.tgt_vocab_size is None:
            # shared vocabulary: one table (positions too), saved once
            self.tgt_embed = self.src_embed
        else:
            self.tgt_embed = Embeddings(config.tgt_vocab_size, *emb)
        self.encoder = Encoder(config, mixer_factory, parts)
        self.decoder = Decoder(config, cross=True, mixer_factory=mixer_factory, parts=parts)
        self.lm_head = nn.Linear(config.d_model, config.target_vocab_size, bias=False)
        if config.tie_embeddings:
            self.lm_head.weight = self.tgt_embed.token.weight  # (V_tgt, d): lookup and projection share storage
        #: T5 v1.0 scales the decoder output by d^-1/2 before its tied output projection (the embedding is N(0, 1))
        self.output_scale = config.d_model**-0.5 if config.scale_decoder_outputs else None
        if parts.init is not None:
            parts.init(self, config)

    def parts(self) -> dict[str, list[nn.Module]]:
        """The modules ``train.freeze`` names: ``embeddings`` (source and target tables, one when shared) and
        ``output`` (the softmax layer; the target table itself when tied)."""
        tables = [self.src_embed] if self.tgt_embed is self.src_embed else [self.src_embed, self.tgt_embed]
        return {"embeddings": tables, "output": [self.lm_head]}

    @property
    def supports_cache(self) -> bool:
        """True if every decoder layer can decode incrementally."""
        return self.decoder.supports_cache

    def encode(self, src_ids: Tensor, src_padding_mask: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """Encode the source: src_ids (B, S) -> (memory (B, S, d), src_padding_mask (B, S) bool or None when the
        batch has no padding). ``memory[:, j]`` is the encoding of ``src_ids[:, j]``, whichever side is padded."""
        src_padding_mask = self._source_mask(src_ids, src_padding_mask)
        order = real_first(src_padding_mask)  # (B, S) or None: left padding becomes right padding
        memory = self._encode(src_ids, src_padding_mask, order)  # (B, S, d), real columns first
        return (memory if order is None else put_columns(memory, order)), src_padding_mask

    def _source_mask(self, src_ids: Tensor, src_padding_mask: Tensor | None) -> Tensor | None:
        """The source padding mask (B, S): given, else ``src_ids == pad_id``; None when nothing is padded."""
        if src_padding_mask is None:
            src_padding_mask = src_ids == self.config.pad_id
        if not any_true(src_padding_mask):  # (True on meta: shape-only runs keep the mask)
            return None  # nothing to mask: lets the mixers take their unmasked fast paths
        return src_padding_mask

    def _encode(self, src_ids: Tensor, src_padding_mask: Tensor | None, order: Tensor | None) -> Tensor:
        """The memory (B, S, d) of the sources with their columns in ``order`` (B, S) (None: as they are)."""
        if order is not None:
            src_ids, src_padding_mask = take_columns(src_ids, order), take_columns(src_padding_mask, order)
        return self.encoder(self.src_embed(src_ids), padding_mask=src_padding_mask)

    @staticmethod
    def _memory_real_first(memory: Tensor, memory_padding_mask: Tensor | None) -> tuple[Tensor, Tensor | None]:
        """The memory (B, S, d) and its mask (B, S) with each row's real columns first (cross-attention kinds
        other than V read source columns as positions)."""
        order = real_first(memory_padding_mask)
        if order is None:
            return memory, memory_padding_mask
        return take_columns(memory, order), take_columns(memory_padding_mask, order)

    def decode(self, tgt_ids: Tensor, memory: Tensor, memory_padding_mask: Tensor | None = None) -> Tensor:
        """Full (teacher-forced) decoder pass: tgt_ids (B, T), memory (B, S, d) -> logits (B, T, V_tgt)."""
        return self._decode(tgt_ids, *self._memory_real_first(memory, memory_padding_mask))

    def _decode(self, tgt_ids: Tensor, memory: Tensor, memory_padding_mask: Tensor | None) -> Tensor:
        """:meth:`decode` over a memory whose real columns come first: (B, T), (B, S, d) -> (B, T, V_tgt)."""
        h = self.decoder(self.tgt_embed(tgt_ids), memory=memory, memory_padding_mask=memory_padding_mask)
        return self._project(h)

    def _project(self, h: Tensor) -> Tensor:
        """The output projection of the decoder output: (B, T, d) -> (B, T, V_tgt)."""
        if self.output_scale is not None:
            h = h * self.output_scale
        return self.lm_head(h)

    def forward(
        self,
        src_ids: Tensor,
        tgt_ids: Tensor,
        src_padding_mask: Tensor | None = None,
        labels: Tensor | None = None,
    ) -> dict[str, Tensor]:
        """Logits for every target position (and the loss with ``labels``); see the class docstring."""
        src_padding_mask = self._source_mask(src_ids, src_padding_mask)
        order = real_first(src_padding_mask)
        memory = self._encode(src_ids, src_padding_mask, order)  # (B, S, d), real columns first
        if order is not None:
            src_padding_mask = take_columns(src_padding_mask, order)  # the memory's columns
        logits = self._decode(tgt_ids, memory, src_padding_mask)
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = token_cross_entropy(logits, labels, self.config.label_smoothing)
        return out

    def init_cache(self, memory: Tensor, memory_padding_mask: Tensor | None = None) -> DecoderCache:
        """An empty decoding cache for the sources encoded in ``memory`` (B, S, d); the cross-attention keys and
        values are computed here, once, and reused at every step."""
        memory, memory_padding_mask = self._memory_real_first(memory, memory_padding_mask)
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
        return self._project(h), cache


@register_arch(Seq2SeqConfig)
def build_seq2seq(config: Seq2SeqConfig, mixer_factory: MixerFactory) -> Seq2SeqTransformer:
    """The encoder-decoder of ``config``, its self-attention mixers made by ``mixer_factory``."""
    return Seq2SeqTransformer(config, mixer_factory)
