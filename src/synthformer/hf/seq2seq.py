"""``SynthesizerForConditionalGeneration``: the native encoder-decoder behind ``AutoModelForSeq2SeqLM``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor
from transformers import GenerationMixin
from transformers.modeling_outputs import BaseModelOutput, Seq2SeqLMOutput

from synthformer.models import token_cross_entropy

from .cache import CACHE_NAME, SynthesizerCache
from .modeling_base import SynthesizerPreTrainedModel, padding_mask_from_attention

__all__ = ["SynthesizerEncoderOutput", "SynthesizerForConditionalGeneration"]


@dataclass
class SynthesizerEncoderOutput(BaseModelOutput):
    """The encoder's output with the source padding mask it used (``padding_mask`` (B, S) bool, True at padding,
    or None): without an ``attention_mask`` the mask comes from ``input_ids == pad_id``, and ``generate()`` passes
    only this object (expanded for beams) to the decoding steps."""

    padding_mask: torch.BoolTensor | None = None


class _EncoderView:
    """What ``get_encoder()`` returns: the native model's ``encode`` with ``transformers``' encoder signature.

    Not a module (the encoder's parameters are registered once, under ``model.``); ``generate()`` only calls it.
    """

    main_input_name = "input_ids"

    def __init__(self, owner: SynthesizerForConditionalGeneration) -> None:
        self._owner = owner

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None,
                **kwargs: Any) -> SynthesizerEncoderOutput:
        """input_ids (B, S), attention_mask (B, S) | None -> ``last_hidden_state`` (B, S, d) and the mask."""
        memory, padding_mask = self._owner.encode(input_ids, attention_mask)
        return SynthesizerEncoderOutput(last_hidden_state=memory, padding_mask=padding_mask)

    __call__ = forward


def shift_right(labels: Tensor, start_id: int, pad_id: int) -> Tensor:
    """Decoder inputs from targets: ``<bos> y1 .. y(n-1)`` from ``y1 .. yn`` (labels (B, T); -100 becomes pad)."""
    shifted = labels.new_full(labels.shape, start_id)  # (B, T)
    shifted[:, 1:] = labels[:, :-1]
    return shifted.masked_fill(shifted == -100, pad_id)


class SynthesizerForConditionalGeneration(SynthesizerPreTrainedModel, GenerationMixin):
    """A :class:`~synthformer.models.Seq2SeqTransformer` (``self.model``) with ``transformers``' interface.

    ``forward(input_ids (B, S), attention_mask (B, S) | None, decoder_input_ids (B, T) | None, labels (B, T) |
    None, encoder_outputs, past_key_values, use_cache)`` returns ``Seq2SeqLMOutput`` with ``logits`` (B, T, V_tgt).

    Labels follow both conventions at once (they agree): ``labels`` are the targets ``y1 .. yn <eos>`` and the
    decoder input is ``<bos> y1 .. yn`` (built from the labels when ``decoder_input_ids`` is not given). A missing
    ``attention_mask`` is derived from ``input_ids == pad_id``, as the native model does.

    ``generate()`` encodes the source once and decodes on the native cache, whose cross-attention keys and values
    are computed once per source.
    """

    arch: ClassVar[str] = "seq2seq"
    pipeline_tag: ClassVar[str] = "text2text-generation"
    auto_class: ClassVar[str] = "AutoModelForSeq2SeqLM"

    def get_encoder(self, modality: str | None = None) -> _EncoderView:
        return _EncoderView(self)

    def get_output_embeddings(self):
        return self.model.lm_head

    def encode(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """(memory (B, S, d), source padding mask (B, S) bool or None); the mask comes from ``attention_mask`` or,
        without one, from ``input_ids == pad_id``."""
        return self.model.encode(input_ids, padding_mask_from_attention(attention_mask))

    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        decoder_input_ids: Tensor | None = None,
        labels: Tensor | None = None,
        encoder_outputs: BaseModelOutput | tuple[Tensor, ...] | None = None,
        past_key_values: SynthesizerCache | None = None,
        use_cache: bool | None = None,
        **kwargs: Any,
    ) -> Seq2SeqLMOutput:
        """See the class docstring; other ``transformers`` arguments (``decoder_attention_mask``, ...) are accepted
        and ignored: the decoder is causal and padded targets are -100 in the labels."""
        if encoder_outputs is None:
            if input_ids is None:
                raise ValueError("pass input_ids (B, S) or encoder_outputs")
            memory, src_mask = self.encode(input_ids, attention_mask)  # (B, S, d), (B, S) | None
        else:
            memory = encoder_outputs[0]  # (B, S, d)
            src_mask = padding_mask_from_attention(attention_mask)
            if attention_mask is None:
                src_mask = getattr(encoder_outputs, "padding_mask", None)
        if decoder_input_ids is None:
            if labels is None:
                raise ValueError("pass decoder_input_ids (B, T) or labels (B, T)")
            decoder_input_ids = shift_right(labels, self.config.bos_id, self.config.pad_id)
        cache = self._decoding_cache(past_key_values, use_cache, kwargs.pop("cache", None))
        if cache is None:
            logits = self.model.decode(decoder_input_ids, memory, src_mask)  # (B, T, V)
        else:
            if not cache.started:
                cache.start(self.model.init_cache(memory, src_mask))
            logits, cache.native = self.model.decode_step(decoder_input_ids, cache.native)  # (B, T, V)
        loss = None
        if labels is not None:
            loss = token_cross_entropy(logits, labels, self.config.label_smoothing)
        return Seq2SeqLMOutput(loss=loss, logits=logits, encoder_last_hidden_state=memory, **{CACHE_NAME: cache})

    def prepare_decoder_input_ids_from_labels(self, labels: Tensor) -> Tensor:
        """``transformers``' data collators call this: decoder inputs ``<bos> y1 ..`` (B, T)."""
        with torch.no_grad():
            return shift_right(labels, self.config.bos_id, self.config.pad_id)
