"""The dual encoder (arch ``dual_encoder``): Long Range Arena's model for its Retrieval task.

Each of the two texts is encoded on its own by one shared encoder (no attention between them: LRA's "dual
encoding" enforces that the model must compress each document into one vector), each pooled to a vector, and the
two vectors u, v are combined and classified. With ``interaction: nli`` (LRA's setting) the classifier sees
``[u, v, u * v, u - v]``; with ``concat`` only ``[u, v]``. LRA's head is an MLP with two hidden layers
(``head_dim``, then ``head_dim // 2``, ReLU after each): ``head: mlp``; ``head: linear`` is one linear layer.
Written from the LRA paper and its ``classifier_head_dual`` (google-research/long-range-arena) description.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from .classifier import ClassifierConfig, TransformerClassifier, classifier_head
from .config import choice
from .registry import MixerFactory, register_arch

__all__ = ["INTERACTIONS", "DualEncoderClassifier", "DualEncoderConfig", "build_dual_encoder"]

#: ``interaction`` values and how many pooled vectors each puts side by side.
INTERACTIONS: dict[str, int] = {"nli": 4, "concat": 2}


@dataclass
class DualEncoderConfig(ClassifierConfig):
    """A dual encoder over text pairs: the :class:`ClassifierConfig` settings (one encoder, shared by both texts;
    its pooling and head) plus

    Attributes:
        interaction: ``"nli"`` (``[u, v, u * v, u - v]``, LRA's Retrieval setting) or ``"concat"`` (``[u, v]``).
    """

    arch: ClassVar[str] = "dual_encoder"
    # a pair classifier: nothing outside models/ (Hugging Face export, analysis) may treat it as a text classifier
    classifier: ClassVar[bool] = False
    legacy_fields: ClassVar[dict] = {}

    num_classes: int | None = 2  # a pair matches or not (LRA's Retrieval)
    interaction: str = "nli"

    def validate_arch(self) -> None:
        super().validate_arch()
        choice("interaction", self.interaction, tuple(INTERACTIONS))


class DualEncoderClassifier(TransformerClassifier):
    """Two texts -> class logits through one shared encoder (see the module docstring); the embeddings, encoder
    and pooling (:meth:`encode`) are the text classifier's, the head sees the combined pair.

    Batch contract: ``forward(input_ids_1 (B, L1), input_ids_2 (B, L2), padding_mask_1 (B, L1) bool | None,
    padding_mask_2 (B, L2) bool | None, labels (B,) | None)`` returns ``{"logits": (B, C), "loss": scalar}``.
    A missing mask is derived from the pad id; padded positions affect nothing.
    """

    def __init__(self, config: DualEncoderConfig, mixer_factory: MixerFactory | None = None) -> None:
        if not isinstance(config, DualEncoderConfig):
            raise ValueError(f"DualEncoderClassifier needs a DualEncoderConfig (arch='dual_encoder'), got "
                             f"arch={config.arch!r}")
        super().__init__(config, mixer_factory)
        width = config.head_width
        hidden = [width, max(width // 2, 1)] if config.head == "mlp" else []
        self.head = classifier_head(INTERACTIONS[config.interaction] * config.d_model, hidden,
                                    int(config.num_classes))

    def forward(self, input_ids_1: Tensor, input_ids_2: Tensor,  # type: ignore[override]
                padding_mask_1: Tensor | None = None, padding_mask_2: Tensor | None = None,
                labels: Tensor | None = None) -> dict[str, Tensor]:
        """Class logits (and the loss with ``labels``); see the class docstring."""
        u = self.encode(input_ids_1, padding_mask_1)  # (B, d)
        v = self.encode(input_ids_2, padding_mask_2)  # (B, d)
        parts = [u, v, u * v, u - v] if self.config.interaction == "nli" else [u, v]
        logits = self.head(self.dropout(torch.cat(parts, dim=-1)))  # (B, k d) -> (B, C)
        return self.outputs(logits, labels)


@register_arch(DualEncoderConfig)
def build_dual_encoder(config: DualEncoderConfig, mixer_factory: MixerFactory) -> DualEncoderClassifier:
    """The dual encoder of ``config``, its encoder's mixers made by ``mixer_factory``."""
    return DualEncoderClassifier(config, mixer_factory)
