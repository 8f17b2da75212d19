"""A synthformer tokenizer as a ``transformers`` ``PreTrainedTokenizerFast`` (saved beside an exported model).

Every tokenizer kind exports, with the same ids:

* ``word`` and ``bpe`` are ``tokenizers`` models already: their backend is used as it is.
* ``char``: a ``WordLevel`` vocabulary of the alphabet over a pre-tokenizer that isolates every character; the
  pieces are joined back without spaces.
* ``byte``: a ``BPE`` model without merges over the 256 byte symbols of the byte-level pre-tokenizer, byte ``b``
  at id ``b + 4`` as natively; decoding turns the symbols back into bytes.
* ``fixed``: a ``WordLevel`` vocabulary over whitespace-separated tokens; the tokens the native tokenizer ignores
  (ListOps' parentheses) are removed by the normalizer.

Two differences remain, both at the edges: the special tokens' texts (``<pad>``, ``<unk>``, ``<bos>``, ``<eos>``)
inside an input are read as the special tokens (natively, a char or byte tokenizer spells them out), and ``<unk>``
decodes as the text ``<unk>`` (natively, the char and byte kinds decode it as U+FFFD).

The special tokens a run's data pipeline adds are added by the tokenizer's post-processor, so
``tokenizer(text)`` gives the ids the model was trained on: ``source <eos>`` for an encoder-decoder, ``<bos> text``
for a classifier with ``cls`` pooling, the text alone otherwise.
"""

from __future__ import annotations

import re
from typing import Any

from transformers import PreTrainedTokenizerFast

from synthformer.data import Tokenizer
from synthformer.data.tokenizer_base import BOS, EOS, PAD, SPECIAL_TOKENS, UNK
from synthformer.models import ModelConfig

__all__ = ["byte_symbols", "to_hf_tokenizer", "tokenizers_backend"]


def byte_symbols() -> list[str]:
    """The printable character the byte-level pre-tokenizer uses for each byte 0..255 (GPT-2's table): bytes
    that are printable and not a space keep their own character, the others are moved to U+0100 and beyond."""
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    symbols, moved = {}, 0
    for b in range(256):
        if b in keep:
            symbols[b] = chr(b)
        else:
            symbols[b] = chr(256 + moved)
            moved += 1
    return [symbols[b] for b in range(256)]


def _specials_vocab() -> dict[str, int]:
    return {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}


def tokenizers_backend(tokenizer: Tokenizer) -> Any:
    """A ``tokenizers.Tokenizer`` giving ``tokenizer``'s ids (see the module docstring for each kind).

    Raises:
        ValueError: a tokenizer kind this module does not know.
    """
    from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers
    from tokenizers import Tokenizer as Backend

    kind = tokenizer.kind
    if kind in ("word", "bpe"):
        return Backend.from_str(tokenizer.backend.to_str())  # a copy: the run's tokenizer stays as it is
    if kind == "char":
        vocab = {**_specials_vocab(), **{ch: tokenizer.token_to_id(ch) for ch in tokenizer.alphabet}}
        backend = Backend(models.WordLevel(vocab=vocab, unk_token=UNK))
        # [\s\S]: every character, newlines included, becomes its own piece
        backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
        backend.decoder = decoders.Fuse()
    elif kind == "byte":
        offset = len(SPECIAL_TOKENS)
        vocab = {**_specials_vocab(), **{sym: b + offset for b, sym in enumerate(byte_symbols())}}
        backend = Backend(models.BPE(vocab=vocab, merges=[], unk_token=UNK))
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        backend.decoder = decoders.ByteLevel()
    elif kind == "fixed":
        vocab = {**_specials_vocab(), **{t: tokenizer.token_to_id(t) for t in tokenizer.tokens}}
        backend = Backend(models.WordLevel(vocab=vocab, unk_token=UNK))
        ignored = tokenizer.ignore
        if ignored:
            # a whole whitespace-separated token only: "(" goes, "(x" stays
            pattern = "|".join(rf"(?<!\S){re.escape(t)}(?!\S)" for t in ignored)
            backend.normalizer = normalizers.Replace(Regex(pattern), " ")
        backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    else:
        raise ValueError(f"tokenizer kind {kind!r} cannot be exported; expected one of char, byte, word, bpe, fixed")
    backend.add_special_tokens(list(SPECIAL_TOKENS))
    return backend


def _framing(model_config: ModelConfig | None) -> tuple[str, str] | None:
    """The post-processor templates (single, pair) adding what the run's data pipeline adds, or None."""
    if model_config is None:
        return None
    if model_config.encoder_decoder:
        return f"$A {EOS}", f"$A {EOS} $B {EOS}"
    if model_config.classifier and model_config.pooling == "cls":
        return f"{BOS} $A", f"{BOS} $A $B"
    return None


def to_hf_tokenizer(tokenizer: Tokenizer, model_config: ModelConfig | None = None,
                    max_len: int | None = None) -> PreTrainedTokenizerFast:
    """``tokenizer`` as a ``PreTrainedTokenizerFast`` with the same ids and special tokens.

    Args:
        tokenizer: a synthformer tokenizer (any kind).
        model_config: the model's native config; with it, the tokenizer adds the special tokens the run's data
            pipeline added (see the module docstring).
        max_len: ``model_max_length`` of the tokenizer (the model's ``max_len``).
    """
    from tokenizers import processors

    backend = tokenizers_backend(tokenizer)
    framing = _framing(model_config)
    if framing is not None:
        specials = [(tok, SPECIAL_TOKENS.index(tok)) for tok in (BOS, EOS)]
        backend.post_processor = processors.TemplateProcessing(single=framing[0], pair=framing[1],
                                                               special_tokens=specials)
    extra: dict[str, Any] = {} if max_len is None else {"model_max_length": max_len}
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token=PAD, unk_token=UNK, bos_token=BOS,
                                   eos_token=EOS, **extra)
