"""Registration with ``transformers``' Auto classes (done when :mod:`synthformer.hf` is imported)."""

from __future__ import annotations

from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
    AutoModelForSequenceClassification,
)

from .causal_lm import SynthesizerForCausalLM
from .classification import SynthesizerForSequenceClassification
from .config import SynthesizerConfig
from .seq2seq import SynthesizerForConditionalGeneration

__all__ = ["MODEL_CLASSES", "register_auto_classes"]

#: the wrapper of each native architecture (``SynthesizerConfig.arch``)
MODEL_CLASSES = {cls.arch: cls for cls in (SynthesizerForCausalLM, SynthesizerForConditionalGeneration,
                                           SynthesizerForSequenceClassification)}


def register_auto_classes() -> None:
    """Register ``model_type = "synthesizer"`` with ``AutoConfig`` and the three wrappers with their Auto model
    classes. Calling it again does nothing new."""
    AutoConfig.register(SynthesizerConfig.model_type, SynthesizerConfig, exist_ok=True)
    AutoModelForCausalLM.register(SynthesizerConfig, SynthesizerForCausalLM, exist_ok=True)
    AutoModelForSeq2SeqLM.register(SynthesizerConfig, SynthesizerForConditionalGeneration, exist_ok=True)
    AutoModelForSequenceClassification.register(SynthesizerConfig, SynthesizerForSequenceClassification,
                                                exist_ok=True)
