"""``SynthesizerForCausalLM``: the native decoder-only language model behind ``AutoModelForCausalLM``."""

from __future__ import annotations

from typing import Any, ClassVar

from torch import Tensor
from transformers import GenerationMixin
from transformers.modeling_outputs import CausalLMOutputWithPast

from synthformer.models import positions_from_padding, token_cross_entropy

from .cache import CACHE_NAME, SynthesizerCache
from .modeling_base import SynthesizerPreTrainedModel, padding_mask_from_attention

__all__ = ["SynthesizerForCausalLM"]


class SynthesizerForCausalLM(SynthesizerPreTrainedModel, GenerationMixin):
    """A :class:`~synthformer.models.TransformerLM` (``self.model``) with ``transformers``' interface.

    ``forward(input_ids (B, L), attention_mask (B, L) | None, labels (B, L) | None, past_key_values, use_cache)``
    returns ``CausalLMOutputWithPast`` with ``logits`` (B, L, V) and, with ``labels``, ``loss``.

    Labels follow ``transformers``' convention: ``labels`` are aligned with ``input_ids`` (usually a copy, -100 at
    ignored positions) and the model shifts them: position t predicts ``labels[:, t + 1]``. (The native model takes
    already shifted labels; both give the same loss on the same text.)

    Generation (``generate()``) decodes one token per step on the native cache (a :class:`SynthesizerCache`).
    Prompts of different lengths are left-padded, as ``transformers`` expects of decoder-only models: a token's
    position is ``position_ids`` when given, else the number of real tokens before it in its row (from
    ``attention_mask``, the same rule), so that a padded row gives the logits, tokens and scores it gives alone.
    """

    arch: ClassVar[str] = "lm"
    pipeline_tag: ClassVar[str] = "text-generation"
    auto_class: ClassVar[str] = "AutoModelForCausalLM"

    def get_output_embeddings(self):
        return self.model.lm_head

    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        labels: Tensor | None = None,
        past_key_values: SynthesizerCache | None = None,
        use_cache: bool | None = None,
        **kwargs: Any,
    ) -> CausalLMOutputWithPast:
        """See the class docstring. ``attention_mask`` (B, S) covers every position so far (the cached ones
        included), ``position_ids`` (B or 1, T) the new tokens. Other ``transformers`` arguments (``return_dict``,
        ...) are accepted and ignored."""
        if input_ids is None or kwargs.get("inputs_embeds") is not None:
            raise ValueError("SynthesizerForCausalLM needs input_ids (B, L); inputs_embeds is not supported")
        padding_mask = padding_mask_from_attention(attention_mask)  # (B, S) or None
        positions = position_ids
        if positions is None and padding_mask is not None:
            positions = positions_from_padding(padding_mask)[:, -input_ids.shape[1] :]  # (B, T)
        cache = self._decoding_cache(past_key_values, use_cache, kwargs.pop("cache", None))
        if cache is None:
            logits = self.model(input_ids=input_ids, padding_mask=padding_mask, positions=positions)["logits"]
        else:
            if not cache.started:
                cache.start(self.model.init_cache(input_ids.shape[0]))
            logits, cache.native = self.model.decode_step(input_ids, cache.native, padding_mask=padding_mask,
                                                          positions=positions)  # (B, T, V)
        loss = None
        if labels is not None:
            # transformers' convention: labels aligned with input_ids; position t predicts token t + 1
            loss = token_cross_entropy(logits[:, :-1], labels[:, 1:], self.config.label_smoothing)
        return CausalLMOutputWithPast(loss=loss, logits=logits, **{CACHE_NAME: cache})
