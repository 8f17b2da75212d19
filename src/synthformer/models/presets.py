"""Named model presets: the paper's base settings and small ones sized for a 2-core CPU.

``get_preset(name)`` returns a fresh config of the preset's architecture (:class:`LMConfig`,
:class:`Seq2SeqConfig` or :class:`ClassifierConfig`); change it with ``dataclasses.replace(config, ...)``
(e.g. ``decoder_kind="R+V"``, ``vocab_size=tokenizer.vocab_size``).

Base settings (paper section 4): 6 layers, d_model 512, d_ff 2048, 8 heads; max_len 256 for MT and LM,
512 for classification. MT uses label smoothing 0.1 (and beam 4 with length penalty 0.6 in
:mod:`synthformer.generate`); the LM uses the ``conv_relu`` feed-forward network ("we used conv_relu for the
positional feed-forward layers across all baselines"). Vocabulary sizes are placeholders (32k subwords, as the
paper's BPE / sentencepiece vocabularies): set them from the tokenizer.
"""

from __future__ import annotations

from collections.abc import Callable

from .classifier import ClassifierConfig
from .config import ModelConfig
from .lm import LMConfig
from .seq2seq import Seq2SeqConfig

__all__ = ["get_preset", "list_presets"]

_BASE = dict(d_model=512, n_heads=8, n_layers=6, d_ff=2048, vocab_size=32000)
_SMALL = dict(d_model=128, n_heads=4, n_layers=2, d_ff=512, vocab_size=8000)

_PRESETS: dict[str, Callable[[], ModelConfig]] = {
    "lm-base": lambda: LMConfig(**_BASE, ffn="conv_relu", max_len=256, dropout=0.1, attention_dropout=0.1),
    "mt-base": lambda: Seq2SeqConfig(
        **_BASE, max_len=256, dropout=0.1, attention_dropout=0.1, label_smoothing=0.1
    ),
    "cls-base": lambda: ClassifierConfig(
        **_BASE, num_classes=2, max_len=512, dropout=0.1, attention_dropout=0.1, pooling="mean"
    ),
    "lm-small": lambda: LMConfig(**_SMALL, ffn="conv_relu", max_len=128, dropout=0.1),
    "mt-small": lambda: Seq2SeqConfig(**{**_SMALL, "n_layers": 3}, max_len=128, dropout=0.1, label_smoothing=0.1),
    "cls-small": lambda: ClassifierConfig(**_SMALL, num_classes=2, max_len=256, dropout=0.1, pooling="mean"),
}


def list_presets() -> list[str]:
    """Names accepted by :func:`get_preset`."""
    return list(_PRESETS)


def get_preset(name: str) -> ModelConfig:
    """A fresh config for the preset ``name``; unknown names raise ``ValueError`` listing them."""
    try:
        factory = _PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown model preset {name!r}; available presets: {', '.join(_PRESETS)}") from None
    return factory()
