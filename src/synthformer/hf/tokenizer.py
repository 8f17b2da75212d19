"""A synthformer tokenizer as a ``transformers`` ``PreTrainedTokenizerFast`` (saved beside an exported model).

Every tokenizer kind exports, with the same ids:

* ``word`` and ``bpe`` are ``tokenizers`` models already: their backend is used as it is.
* ``char``: a ``WordLevel`` vocabulary of the alphabet over a pre-tokenizer that isolates every character; the
  pieces are joined back without spaces.
* ``byte``: a ``BPE`` model without merges over the 256 byte symbols of the byte-level pre-tokenizer, byte ``b``
  at id ``b + 4`` as natively; decoding turns the symbols back into bytes.
* ``fixed``: a ``WordLevel`` vocabulary over whitespace-separated tokens; the tokens the native tokenizer ignores
  (ListOps' parentheses) are removed by the normalizer.
* ``sentencepiece``: ``transformers``' own ``T5Tokenizer``, read from the model's ``spiece.model`` with the same
  number of ``<extra_id_N>`` sentinels (T5's ids: ``<pad>`` 0, ``</s>`` 1, ``<unk>`` 2, sentinels counting down from
  the last id).
* sentinels added by span corruption or dialogue to another kind: the base kind's tokenizer with the sentinels as
  special tokens at their native ids.

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

import re
import tempfile
from pathlib import Path
from typing import Any

from transformers import PreTrainedTokenizerFast

from synthformer.data import SentencePieceTokenizer, SentinelTokenizer, Tokenizer
from synthformer.data.sentinels import sentinel_name
from synthformer.data.tokenizer_base import SPECIAL_TOKENS, UNK
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

    base = tokenizer.base if isinstance(tokenizer, SentinelTokenizer) else tokenizer
    if isinstance(base, SentencePieceTokenizer):
        return _t5_backend(base, getattr(tokenizer, "num_sentinels", 0))
    kind = tokenizer.kind
    if isinstance(tokenizer, SentinelTokenizer):
        backend = tokenizers_backend(base)
        # added tokens get the next ids in order: the native ids when the sentinels count up after the base
        backend.add_special_tokens([sentinel_name(tokenizer.sentinel_index(i)) for i in
                                    range(tokenizer.first_sentinel_id, tokenizer.vocab_size)])
        return backend
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
        raise ValueError(f"tokenizer kind {kind!r} cannot be exported; expected one of char, byte, word, bpe, fixed, "
                         "sentencepiece (or one of them with sentinels)")
    backend.add_special_tokens(list(SPECIAL_TOKENS))
    return backend


def _t5_backend(model: SentencePieceTokenizer, sentinels: int) -> Any:
    """The backend of ``transformers``' ``T5Tokenizer`` for ``model``'s ``spiece.model`` with ``sentinels`` extra
    ids (without the ``</s>`` its post-processor appends: :func:`to_hf_tokenizer` frames as the run did)."""
    from tokenizers import processors
    from transformers import T5Tokenizer

    with tempfile.TemporaryDirectory() as folder:
        model.save_model(Path(folder) / "spiece.model")
        backend = T5Tokenizer.from_pretrained(folder, extra_ids=sentinels).backend_tokenizer
    backend.post_processor = processors.TemplateProcessing(single="$A", pair="$A $B")
    return backend


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
