"""The encoder classifier: :class:`ClassifierConfig`, :class:`TransformerClassifier` (an encoder, pooling over the
real (non-padding) positions, a linear head) and their builder."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from synthformer.attention import any_true

from .config import ModelConfig, choice, is_int, positive_int
from .layers import Embeddings
from .losses import classification_loss
from .positions import real_first, take_columns
from .registry import MixerFactory, register_arch
from .stacks import Encoder

__all__ = ["HEADS", "POOLINGS", "ClassifierConfig", "TransformerClassifier", "build_classifier", "classifier_head",
           "pool"]

POOLINGS: tuple[str, ...] = ("mean", "cls", "max", "last")
#: ``head`` values: one linear layer, or Long Range Arena's MLP (linear -> ReLU -> linear).
HEADS: tuple[str, ...] = ("linear", "mlp")


@dataclass
class ClassifierConfig(ModelConfig):
    """An encoder classifier (arch ``"classifier"``): the :class:`ModelConfig` settings plus

    Attributes:
        num_classes: number of classes, >= 2 (required).
        encoder_kind: token mixer of the encoder self-attention: a name or one name per layer.
        encoder_kind_options: options for the encoder's mixers, updating ``kind_options``.
        pooling: ``"mean"`` or ``"max"`` over the non-padding positions, ``"cls"`` (the first real position; the
            data must put a summary token, e.g. ``<bos>``, there) or ``"last"`` (the last non-padding position:
            where a query ends the input, as in the associative-recall probe).
        head: ``"linear"`` (one linear layer to the logits) or ``"mlp"`` (Long Range Arena's classifier head:
            linear to ``head_dim`` -> ReLU -> linear to the logits).
        head_dim: hidden width of the ``"mlp"`` head (``None``: ``d_ff``, as LRA's ``mlp_dim``).

    The loss is plain cross-entropy (no label smoothing).
    """

    arch: ClassVar[str] = "classifier"
    stacks: ClassVar[tuple[str, ...]] = ("encoder",)
    classifier: ClassVar[bool] = True
    # tie_embeddings was accepted and never read by the classifier before the split: dropped whatever its value
    legacy_fields: ClassVar[dict[str, Any]] = dict(
        tgt_vocab_size=None, n_decoder_layers=None, decoder_kind="V", cross_kind="V", decoder_kind_options=None,
        label_smoothing=0.0, tie_embeddings=Ellipsis)

    num_classes: int | None = None
    encoder_kind: str | list[str] = "V"
    encoder_kind_options: dict[str, Any] | list[dict[str, Any]] | None = None
    pooling: str = "mean"
    head: str = "linear"
    head_dim: int | None = None

    def validate_arch(self) -> None:
        if not is_int(self.num_classes) or self.num_classes < 2:
            raise ValueError(f"num_classes must be an integer >= 2 for arch={self.arch!r}, got {self.num_classes!r}")
        choice("pooling", self.pooling, POOLINGS)
        choice("head", self.head, HEADS)
        if self.head_dim is not None:
            positive_int("head_dim", self.head_dim)

    @property
    def head_width(self) -> int:
        """Hidden width of the ``"mlp"`` head."""
        return self.d_ff if self.head_dim is None else self.head_dim


def classifier_head(in_features: int, hidden: list[int], num_classes: int) -> nn.Module:
    """Linear layers ``in_features -> hidden[0] -> ... -> num_classes`` with a ReLU after each hidden one: maps
    (B, in_features) -> (B, num_classes). Without hidden layers it is one ``nn.Linear`` (the parameter names of
    classifiers saved before the ``head`` setting existed)."""
    layers: list[nn.Module] = []
    for width in hidden:
        layers += [nn.Linear(in_features, width), nn.ReLU()]
        in_features = width
    layers.append(nn.Linear(in_features, num_classes))
    return layers[0] if len(layers) == 1 else nn.Sequential(*layers)


def pool(h: Tensor, padding_mask: Tensor | None, how: str) -> Tensor:
    """Pool (B, L, d) -> (B, d) over the positions where ``padding_mask`` (B, L) is False.

    ``"mean"``: average of the real positions; ``"max"``: channel-wise maximum over them; ``"cls"``: position 0;
    ``"last"``: the last real position (padding may sit anywhere; the highest unpadded index is taken).
    A sequence without any real position pools to zeros (never NaN).
    """
    if how == "cls":
        return h[:, 0]
    if how == "last":
        if padding_mask is None:
            return h[:, -1]
        positions = torch.arange(h.shape[1], device=h.device).expand_as(padding_mask)  # (B, L)
        last = positions.masked_fill(padding_mask, -1).amax(dim=1)  # (B,): -1 where every position is padding
        pooled = h[torch.arange(h.shape[0], device=h.device), last.clamp(min=0)]  # (B, d)
        return pooled.masked_fill((last < 0)[:, None], 0.0)
    if padding_mask is None:
        return h.mean(dim=1) if how == "mean" else h.amax(dim=1)
    keep = (~padding_mask)[..., None]  # (B, L, 1)
    if how == "mean":
        count = keep.sum(dim=1).clamp(min=1).to(h.dtype)  # (B, 1)
        # masked_fill rather than a product with the mask: 0 * inf would turn a padded inf into NaN
        return h.masked_fill(~keep, 0.0).sum(dim=1) / count
    if how == "max":
        pooled = h.masked_fill(~keep, torch.finfo(h.dtype).min).amax(dim=1)  # (B, d)
        return pooled.masked_fill(~keep.any(dim=1), 0.0)
    raise ValueError(f"pooling must be one of {', '.join(map(repr, POOLINGS))}, got {how!r}")


class TransformerClassifier(nn.Module):
    """Encoder-only classifier (the paper's AG News / IMDb setting): embeddings, ``config.n_layers`` encoder
    layers with ``config.encoder_kind`` self-attention, ``config.pooling`` over the non-padding positions, then
    ``config.head`` (a linear layer, or LRA's MLP) to ``config.num_classes`` logits.

    Batch contract (``docs/CONTRACTS.md``): ``forward(input_ids (B, L), padding_mask (B, L) bool | None,
    labels (B,) | None)`` returns ``{"logits": (B, C), "loss": scalar}`` (plain cross-entropy). A missing
    ``padding_mask`` is derived from ``input_ids == config.pad_id``. Padded positions affect nothing: the mixers
    mask them as keys, the ``conv_relu`` FFN zeroes them, pooling skips them.

    Padding may sit on either side (or anywhere): a row's real tokens are first moved to its front
    (:func:`~synthformer.models.positions.real_first`), so a left-padded row is encoded as the right-padded row,
    exactly, for every kind: each token's column is its position (the count of real tokens before it), which is
    what the embeddings and every kind that reads columns (R, Fix, FR, D, FD, the convolutions, Linformer) index
    by, and ``"cls"`` pooling reads the first real token.
    """

    def __init__(self, config: ClassifierConfig, mixer_factory: MixerFactory | None = None) -> None:
        super().__init__()
        if not isinstance(config, ClassifierConfig):
            raise ValueError(f"TransformerClassifier needs a ClassifierConfig (arch='classifier'), got "
                             f"arch={config.arch!r}")
        self.config = config
        self.embed = Embeddings(config.vocab_size, config.d_model, config.max_len, config.positions, config.dropout)
        self.encoder = Encoder(config, mixer_factory)
        self.dropout = nn.Dropout(config.dropout)
        hidden = [config.head_width] if config.head == "mlp" else []
        self.head = classifier_head(config.d_model, hidden, int(config.num_classes))

    def parts(self) -> dict[str, list[nn.Module]]:
        """The modules ``train.freeze`` names: ``embeddings``; a classifier has no softmax over a vocabulary (its
        head is what finetuning trains), so no ``output``."""
        return {"embeddings": [self.embed], "output": []}

    def forward(
        self, input_ids: Tensor, padding_mask: Tensor | None = None, labels: Tensor | None = None
    ) -> dict[str, Tensor]:
        """Class logits (and the loss with ``labels``); see the class docstring."""
        logits = self.head(self.dropout(self.encode(input_ids, padding_mask)))  # (B, d) -> (B, C)
        return self.outputs(logits, labels)

    def encode(self, input_ids: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        """The pooled encoding of each row: (B, L) -> (B, d), padding on either side (see the class docstring)."""
        if padding_mask is None:
            padding_mask = input_ids == self.config.pad_id
        if not any_true(padding_mask):  # (True on meta: shape-only runs keep the mask)
            padding_mask = None  # nothing to mask: lets the mixers take their unmasked fast paths
        order = real_first(padding_mask)  # (B, L) or None: left padding becomes right padding
        if order is not None:
            input_ids, padding_mask = take_columns(input_ids, order), take_columns(padding_mask, order)
        h = self.encoder(self.embed(input_ids), padding_mask=padding_mask)  # (B, L, d)
        return pool(h, padding_mask, self.config.pooling)  # pooled: the columns' order no longer matters

    @staticmethod
    def outputs(logits: Tensor, labels: Tensor | None) -> dict[str, Tensor]:
        """``{"logits": (B, C)}``, with the plain cross-entropy ``"loss"`` when ``labels`` (B,) are given."""
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = classification_loss(logits, labels)
        return out


@register_arch(ClassifierConfig)
def build_classifier(config: ClassifierConfig, mixer_factory: MixerFactory) -> TransformerClassifier:
    """The classifier of ``config``, its encoder's mixers made by ``mixer_factory``."""
    return TransformerClassifier(config, mixer_factory)
