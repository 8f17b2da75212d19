"""``build_model``: the task model a :class:`ModelConfig` describes, and parameter counting."""

from __future__ import annotations

import logging

from torch import nn

from .classifier import TransformerClassifier
from .config import ModelConfig
from .lm import TransformerLM
from .seq2seq import Seq2SeqTransformer

__all__ = ["MODEL_CLASSES", "build_model", "num_parameters"]

logger = logging.getLogger(__name__)

#: arch -> model class.
MODEL_CLASSES: dict[str, type[nn.Module]] = {
    "lm": TransformerLM,
    "seq2seq": Seq2SeqTransformer,
    "classifier": TransformerClassifier,
}


def build_model(config: ModelConfig) -> nn.Module:
    """Build the model for ``config.arch`` (``TransformerLM``, ``Seq2SeqTransformer`` or
    ``TransformerClassifier``). The config is validated again first, so a config edited in place after creation
    cannot slip through."""
    if not isinstance(config, ModelConfig):
        raise TypeError(f"build_model expects a ModelConfig, got {type(config).__name__}")
    config.validate()
    model = MODEL_CLASSES[config.arch](config)
    logger.info("built %s (%s) with %d parameters", type(model).__name__, config.arch, num_parameters(model))
    return model


def num_parameters(model: nn.Module, trainable_only: bool = True) -> int:
    """Number of parameters of ``model``, each shared tensor counted once (tied embeddings count once).

    Args:
        trainable_only: count only parameters with ``requires_grad`` (a frozen ``Fix`` alignment is then not
            counted, as in the paper's tables); False counts every parameter.
    """
    # model.parameters() already yields each shared Parameter once; data_ptr also catches distinct Parameter
    # objects viewing the same storage.
    seen: set[tuple[int, int]] = set()
    total = 0
    for p in model.parameters():
        if trainable_only and not p.requires_grad:
            continue
        key = (p.data_ptr(), p.numel())
        if key in seen:
            continue
        seen.add(key)
        total += p.numel()
    return total
