"""``SynthesizerForSequenceClassification``: the native encoder classifier behind
``AutoModelForSequenceClassification``."""

from __future__ import annotations

from typing import Any, ClassVar

from torch import Tensor
from transformers.modeling_outputs import SequenceClassifierOutput

from synthformer.models import classification_loss

from .modeling_base import SynthesizerPreTrainedModel

__all__ = ["SynthesizerForSequenceClassification"]


class SynthesizerForSequenceClassification(SynthesizerPreTrainedModel):
    """A :class:`~synthformer.models.TransformerClassifier` (``self.model``) with ``transformers``' interface.

    ``forward(input_ids (B, L), attention_mask (B, L) | None, labels (B,) | None)`` returns
    ``SequenceClassifierOutput`` with ``logits`` (B, C) and, with ``labels``, the cross-entropy ``loss``. A missing
    ``attention_mask`` is derived from ``input_ids == pad_id``, as the native model does. Class names, when the
    export knew them, are in ``config.id2label``.
    """

    arch: ClassVar[str] = "classifier"
    pipeline_tag: ClassVar[str] = "text-classification"
    auto_class: ClassVar[str] = "AutoModelForSequenceClassification"

    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        labels: Tensor | None = None,
        **kwargs: Any,
    ) -> SequenceClassifierOutput:
        """See the class docstring; other ``transformers`` arguments (``return_dict``, ...) are ignored."""
        if input_ids is None or kwargs.get("inputs_embeds") is not None:
            raise ValueError("SynthesizerForSequenceClassification needs input_ids (B, L); inputs_embeds is not "
                             "supported")
        padding_mask = None if attention_mask is None else attention_mask == 0  # (B, L), True at padding
        logits = self.model(input_ids=input_ids, padding_mask=padding_mask)["logits"]  # (B, C)
        loss = classification_loss(logits, labels) if labels is not None else None
        return SequenceClassifierOutput(loss=loss, logits=logits)
