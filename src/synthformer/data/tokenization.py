"""Tokenizers with one interface: character, byte, word-level, trained BPE, SentencePiece (T5's), and fixed
vocabularies.

Every tokenizer but ``sentencepiece`` reserves the same four special ids (padding and masking code reads them
from the tokenizer: ``pad_id``, ``bos_id``, ``eos_id``, ``unk_id``):

==========  ====  ============================================
token       id    use
==========  ====  ============================================
``<pad>``   0     padding (``pad_id``)
``<unk>``   1     out-of-vocabulary input (``unk_id``)
``<bos>``   2     beginning of sequence (``bos_id``)
``<eos>``   3     end of sequence (``eos_id``)
==========  ====  ============================================

``encode`` never adds special tokens unless asked (``add_bos`` / ``add_eos``); ``decode`` drops
``<pad>``, ``<bos>`` and ``<eos>`` by default. Round trips ``decode(encode(x)) == x`` hold exactly for
``char`` (when every character of ``x`` is in the vocabulary), ``byte`` (any valid text) and ``bpe``
(byte-level BPE: any text). The ``word`` tokenizer splits on whitespace (and, by default, punctuation)
and decodes with single spaces, so it does not round-trip whitespace.

``sentencepiece`` (:mod:`~synthformer.data.tokenizer_spm`) has T5's ids instead: ``<pad>`` 0 (also the decoder's
first input: T5 has no ``<bos>``), ``</s>`` 1, ``<unk>`` 2, and T5's sentinels at the top of the vocabulary
(``<extra_id_0>`` the last id), as Hugging Face's ``T5Tokenizer`` numbers them. It trains a unigram model on the
text, or reads an existing ``spiece.model`` (``model_file``) so that a T5 checkpoint keeps its vocabulary; it
normalizes text as SentencePiece does (NFKC, runs of spaces collapsed), so it round-trips normalized text.

Tokenizers are saved as one JSON file (never pickle) by :meth:`Tokenizer.save`, read back by
:func:`load_tokenizer`, and built from training text by :func:`build_tokenizer`.

Modules: :mod:`~synthformer.data.tokenizer_base` (the interface and the file format),
:mod:`~synthformer.data.tokenizer_kinds` and :mod:`~synthformer.data.tokenizer_subword` (the tokenizers),
:mod:`~synthformer.data.tokenizer_spm` (SentencePiece), this one (building and loading; every name is importable
from here and from :mod:`synthformer.data`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from synthformer.data.sentinels import SentinelTokenizer
from synthformer.data.tokenizer_base import (
    BOS,
    EOS,
    PAD,
    SPECIAL_TOKENS,
    TOKENIZER_FILE,
    UNK,
    Tokenizer,
    tokenizer_file,
    tokenizer_from_payload,
)
from synthformer.data.tokenizer_kinds import ByteTokenizer, CharTokenizer, FixedVocabTokenizer
from synthformer.data.tokenizer_spm import SentencePieceTokenizer, build_sentencepiece
from synthformer.data.tokenizer_subword import BPETokenizer, WordTokenizer

__all__ = [
    "BOS",
    "EOS",
    "MAX_VOCAB_SIZE",
    "PAD",
    "SPECIAL_TOKENS",
    "TOKENIZER_FILE",
    "TOKENIZER_KINDS",
    "UNK",
    "BPETokenizer",
    "ByteTokenizer",
    "CharTokenizer",
    "FixedVocabTokenizer",
    "SentencePieceTokenizer",
    "SentinelTokenizer",
    "Tokenizer",
    "WordTokenizer",
    "build_tokenizer",
    "load_tokenizer",
    "tokenizer_from_payload",
]

#: The kinds :func:`build_tokenizer` can train from text.
TOKENIZER_KINDS: tuple[str, ...] = ("char", "byte", "word", "bpe", "sentencepiece")
#: The largest ``vocab_size`` a tokenizer is built with: 2**24 = 16,777,216 ids. The ``tokenizers`` BPE trainer
#: reserves memory for the whole cap before it reads a word (about 66 bytes an id: 2**31 asks for 141 GB and the
#: process aborts with a Rust backtrace, uncatchable), and its ids are 32-bit; at 2**24 the reservation is about
#: 1 GB of address space, and every vocabulary in use is far below (T5's 32,100; the largest multilingual ones
#: about 1 M).
MAX_VOCAB_SIZE = 1 << 24


def build_tokenizer(kind: str, texts: Iterable[str], vocab_size: int | None = None,
                    **options: Any) -> Tokenizer:
    """Build a tokenizer of ``kind`` from training ``texts`` (in memory).

    Args:
        kind: ``"char"``, ``"byte"``, ``"word"``, ``"bpe"`` or ``"sentencepiece"``.
        texts: training text (e.g. the training split; one long string or many lines). Ignored by
            ``"byte"`` and by ``"sentencepiece"`` with ``model_file``.
        vocab_size: size cap including the specials; ``None`` means: every character (char), 260
            (byte, which accepts only ``None`` or 260), every word (word), 8000 (bpe, sentencepiece: its
            sentinels included).
        **options: passed to the kind's ``train``: ``split``, ``min_frequency``, ``lowercase`` (word);
            ``min_frequency`` (bpe); ``model_file``, ``num_sentinels``, ``character_coverage``,
            ``byte_fallback``, ``num_threads`` (sentencepiece, :func:`build_sentencepiece`).

    Raises:
        ValueError: unknown kind (the message lists the valid ones) or an invalid size/option (a size above
            :data:`MAX_VOCAB_SIZE` included).
    """
    if kind not in TOKENIZER_KINDS:
        raise ValueError(f"unknown tokenizer kind {kind!r}; valid kinds: {', '.join(TOKENIZER_KINDS)}")
    if vocab_size is not None and not 1 <= vocab_size <= MAX_VOCAB_SIZE:  # before a trainer aborts the process
        raise ValueError(f"vocab_size must be an integer from 1 to {MAX_VOCAB_SIZE:,} (2**24), got {vocab_size!r}")
    if kind == "byte":
        if vocab_size not in (None, 256 + ByteTokenizer.offset):
            raise ValueError(f"byte tokenizer has a fixed vocab_size of 260, got {vocab_size}")
        if options:
            raise ValueError(f"byte tokenizer takes no options, got {sorted(options)}")
        return ByteTokenizer()
    if kind == "char":
        if options:
            raise ValueError(f"char tokenizer takes no options, got {sorted(options)}")
        return CharTokenizer.train(texts, vocab_size)
    if kind == "word":
        return WordTokenizer.train(texts, vocab_size, **options)
    if kind == "sentencepiece":
        return build_sentencepiece(texts, vocab_size, **options)
    return BPETokenizer.train(texts, vocab_size, **options)


def load_tokenizer(path: str | os.PathLike[str]) -> Tokenizer:
    """Read a tokenizer written by :meth:`Tokenizer.save` from the file ``path`` (in a run directory:
    ``RunDir(run).tokenizer_path``); a directory is read at ``path/TOKENIZER_FILE``.

    Raises:
        FileNotFoundError: no tokenizer file there.
        ValueError: the file is not a synthformer tokenizer or names an unknown kind.
    """
    path = tokenizer_file(path)
    if not path.is_file():
        raise FileNotFoundError(f"no tokenizer file at {path}")
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a valid tokenizer JSON file ({exc})") from exc
    return tokenizer_from_payload(payload, str(path))
