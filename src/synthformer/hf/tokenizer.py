"""A synthformer tokenizer as a ``transformers`` ``PreTrainedTokenizerFast`` (saved beside an exported model).

Every tokenizer kind exports with the same ids: :func:`tokenizers_backend` asks the tokenizer for its
``tokenizers`` backend (:meth:`~synthformer.data.Tokenizer.tokenizers_backend`), and each kind's class says in its
docstring what that backend is (``word`` and ``bpe`` their own; ``char``, ``byte``, ``fixed`` a vocabulary over a
pre-tokenizer; ``sentencepiece`` ``transformers``' ``T5Tokenizer``; sentinels the base kind's plus special tokens).
A new kind exports by implementing that method in its own class; nothing here names the kinds.

In the exported tokenizer an ``<extra_id_N>`` written in the text is the sentinel, as in T5's (natively, ``encode``
spells it out and ``encode_with_sentinels`` reads it).

Two differences remain, both at the edges: the special tokens' texts (``<pad>``, ``<unk>``, ``<bos>``, ``<eos>``)
inside an input are read as the special tokens (natively, a char or byte tokenizer spells them out), and ``<unk>``
decodes as the text ``<unk>`` (natively, the char and byte kinds decode it as U+FFFD).

The special tokens a run's data pipeline adds are added by the tokenizer's post-processor, so
``tokenizer(text)`` gives the ids the model was trained on: ``source <eos>`` for an encoder-decoder, ``<bos> text``
for a classifier with ``cls`` pooling, the text alone otherwise.
"""

from __future__ import annotations

from typing import Any

from transformers import PreTrainedTokenizerFast

from synthformer.data import Tokenizer, byte_symbols
from synthformer.models import ModelConfig

__all__ = ["byte_symbols", "to_hf_tokenizer", "tokenizers_backend"]


def tokenizers_backend(tokenizer: Tokenizer) -> Any:
    """A ``tokenizers.Tokenizer`` giving ``tokenizer``'s ids, special tokens included (its kind's
    :meth:`~synthformer.data.Tokenizer.tokenizers_backend`).

    Raises:
        ValueError: a tokenizer kind that does not implement the export.
    """
    return tokenizer.tokenizers_backend()


def _specials(tokenizer: Tokenizer) -> tuple[str, str, str, str]:
    """The (pad, unk, bos, eos) token strings (``<bos>`` is ``<pad>`` in T5's vocabulary, which has none)."""
    return (tokenizer.id_to_token(tokenizer.pad_id), tokenizer.id_to_token(tokenizer.unk_id),
            tokenizer.id_to_token(tokenizer.bos_id), tokenizer.id_to_token(tokenizer.eos_id))


def _framing(model_config: ModelConfig | None, bos: str, eos: str) -> tuple[str, str] | None:
    """The post-processor templates (single, pair) adding what the run's data pipeline adds, or None."""
    if model_config is None:
        return None
    if model_config.encoder_decoder:
        return f"$A {eos}", f"$A {eos} $B {eos}"
    if model_config.classifier and model_config.pooling == "cls":
        return f"{bos} $A", f"{bos} $A $B"
    return None


def to_hf_tokenizer(tokenizer: Tokenizer, model_config: ModelConfig | None = None,
                    max_len: int | None = None) -> PreTrainedTokenizerFast:
    """``tokenizer`` as a ``PreTrainedTokenizerFast`` with the same ids and special tokens.

    Args:
        tokenizer: a synthformer tokenizer (any kind).
        model_config: the model's native config; with it, the tokenizer adds the special tokens the run's data
            pipeline added (see the module docstring).
        max_len: ``model_max_length`` of the tokenizer (the model's ``max_len``).

    A decoder-only model's tokenizer pads on the left (``padding_side="left"``): batched generation appends every
    row's next token in the last column, and the model takes the positions from the attention mask.
    """
    from tokenizers import processors

    backend = tokenizers_backend(tokenizer)
    pad, unk, bos, eos = _specials(tokenizer)
    framing = _framing(model_config, bos, eos)
    if framing is not None:
        specials = sorted({(bos, tokenizer.bos_id), (eos, tokenizer.eos_id)})
        backend.post_processor = processors.TemplateProcessing(single=framing[0], pair=framing[1],
                                                               special_tokens=specials)
    extra: dict[str, Any] = {} if max_len is None else {"model_max_length": max_len}
    if model_config is not None and model_config.decoder_only:
        extra["padding_side"] = "left"
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token=pad, unk_token=unk, bos_token=bos,
                                   eos_token=eos, **extra)
