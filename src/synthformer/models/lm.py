"""The decoder-only (causal) language model: :class:`LMConfig`, :class:`TransformerLM` and their builder."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from torch import Tensor, nn

from .cache import DecoderCache
from .config import ModelConfig, check_token_head
from .layers import Embeddings
from .losses import token_cross_entropy
from .positions import plain_positions, positions_from_padding, step_positions
from .registry import MixerFactory, register_arch
from .stacks import Decoder

__all__ = ["LMConfig", "TransformerLM", "build_lm"]


@dataclass
class LMConfig(ModelConfig):
    """A decoder-only language model (arch ``"lm"``): the :class:`ModelConfig` settings plus

    Attributes:
        decoder_kind: token mixer of the causal self-attention: a name or one name per layer.
        decoder_kind_options: options for the decoder's mixers, updating ``kind_options``: a dict, or one dict per
            layer.
        tie_embeddings: the output projection shares the embedding matrix.
        label_smoothing: label smoothing of the token cross-entropy.
        head_dim: the width of each attention head (T5's ``d_kv``); None (the default) is ``d_model // n_heads``.
            Given, every attention layer is ``n_heads * head_dim`` wide inside (values, V's queries and keys, the
            per-head hidden layers of D, FD, ConvReluConv, GLU) and its output projection maps back to
            ``d_model``, so that ``n_heads`` can vary at a fixed head width; ``d_model`` need not be divisible by
            ``n_heads``. A whole token mixer without a head width (LightConv, DynamicConv) is then a ConfigError.
    """

    arch: ClassVar[str] = "lm"
    stacks: ClassVar[tuple[str, ...]] = ("decoder",)
    causal_stacks: ClassVar[tuple[str, ...]] = ("decoder",)
    decoder_only: ClassVar[bool] = True
    attention_head_dim_field: ClassVar[str | None] = "head_dim"
    legacy_fields: ClassVar[dict[str, Any]] = dict(
        tgt_vocab_size=None, num_classes=None, n_decoder_layers=None, encoder_kind="V", cross_kind="V",
        encoder_kind_options=None, pooling="mean")

    decoder_kind: str | list[str] = "V"
    decoder_kind_options: dict[str, Any] | list[dict[str, Any]] | None = None
    tie_embeddings: bool = True
    label_smoothing: float = 0.0
    head_dim: int | None = None

    def validate_arch(self) -> None:
        check_token_head(self)


class TransformerLM(nn.Module):
    """Decoder-only Transformer language model with ``config.decoder_kind`` causal self-attention.

    Batch contract (``docs/CONTRACTS.md``): ``forward(input_ids (B, L), labels (B, L) | None)`` returns
    ``{"logits": (B, L, V), "loss": scalar}`` (the loss only when labels are given): label-smoothed
    cross-entropy (``config.label_smoothing``) averaged over the labels that are not -100. ``labels[:, t]`` is the
    token that follows ``input_ids[:, t]`` (the data pipeline shifts; the model does not).

    Right padding needs no mask (a causal model never reads later positions); ``padding_mask`` (B, L) may still
    be passed, e.g. for a ``conv_relu`` FFN or mixers that read neighbouring tokens.

    Incremental decoding: ``cache = model.init_cache(B)``, then ``logits, cache = model.decode_step(ids, cache)``
    with the next T >= 1 tokens; the logits equal the full forward's at the same positions.

    Left padding (batched generation, Hugging Face's convention): pass ``padding_mask``; each token's position is
    then the number of real tokens before it in its row (:func:`~synthformer.models.positions_from_padding`, or
    ``positions`` (B, L) when given), and a padded row gets the logits it gets alone. Positions equal to the
    columns at every real token (right padding) are dropped: the fast paths stay on.
    """

    def __init__(self, config: LMConfig, mixer_factory: MixerFactory | None = None) -> None:
        super().__init__()
        if not isinstance(config, LMConfig):
            raise ValueError(f"TransformerLM needs an LMConfig (arch='lm'), got arch={config.arch!r}")
        self.config = config
        self.embed = Embeddings(config.vocab_size, config.d_model, config.max_len, config.positions, config.dropout)
        self.decoder = Decoder(config, cross=False, mixer_factory=mixer_factory)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_embeddings:
            self.lm_head.weight = self.embed.token.weight  # one tensor: (V, d) is both lookup and projection

    def parts(self) -> dict[str, list[nn.Module]]:
        """The modules ``train.freeze`` names: ``embeddings`` and ``output`` (the softmax layer)."""
        return {"embeddings": [self.embed], "output": [self.lm_head]}

    @property
    def supports_cache(self) -> bool:
        """True if every layer can decode incrementally (generation then feeds one token per step)."""
        return self.decoder.supports_cache

    def forward(
        self, input_ids: Tensor, labels: Tensor | None = None, padding_mask: Tensor | None = None,
        positions: Tensor | None = None,
    ) -> dict[str, Tensor]:
        """Logits for every position (and the loss when ``labels`` are given); see the class docstring."""
        if positions is None and padding_mask is not None and padding_mask.device.type != "meta":
            # (meta tensors hold no values: shape-only runs keep the columns)
            positions = positions_from_padding(padding_mask)  # (B, L): dropped just below when plain
        if positions is not None and plain_positions(positions, 0, padding_mask):
            positions = None
        if positions is not None:
            positions = positions.long().expand(input_ids.shape[0], -1)  # (1|B, L) -> (B, L)
        x = self.embed(input_ids, positions=positions)  # (B, L, d)
        h = self.decoder(x, padding_mask=padding_mask, positions=positions)  # (B, L, d)
        logits = self.lm_head(h)  # (B, L, V)
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = token_cross_entropy(logits, labels, self.config.label_smoothing)
        return out

    def init_cache(self, batch_size: int, device=None, dtype=None) -> DecoderCache:
        """An empty decoding cache for ``batch_size`` sequences (see :class:`~synthformer.models.DecoderCache`)."""
        weight = self.lm_head.weight
        return self.decoder.init_cache(batch_size, device=device or weight.device, dtype=dtype or weight.dtype)

    def decode_step(self, input_ids: Tensor, cache: DecoderCache, padding_mask: Tensor | None = None,
                    positions: Tensor | None = None) -> tuple[Tensor, DecoderCache]:
        """Feed the next T tokens (B, T) at columns ``cache.length ..``; returns (logits (B, T, V), cache).

        ``padding_mask`` (B, cache.length + T) covers every column so far; ``positions`` (B, T) are the new tokens'
        positions in left-padded rows (kept by the cache for the later steps). Without them they come from
        ``padding_mask`` when given, else (after left-padded steps) continue each row's last position."""
        start = cache.length
        b, t = input_ids.shape
        positions = step_positions(cache.positions, positions, padding_mask, start, t, b)  # (B, T) or None
        x = self.embed(input_ids, start=start, positions=positions)  # (B, T, d)
        h, cache = self.decoder.step(x, cache, padding_mask=padding_mask, positions=positions)
        return self.lm_head(h), cache


@register_arch(LMConfig)
def build_lm(config: LMConfig, mixer_factory: MixerFactory) -> TransformerLM:
    """The language model of ``config``, its layers' mixers made by ``mixer_factory``."""
    return TransformerLM(config, mixer_factory)
