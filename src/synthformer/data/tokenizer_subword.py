"""The tokenizers trained with the ``tokenizers`` library: word-level and byte-level BPE (their vocabularies and
merges live in the library's own JSON, kept inside synthformer's tokenizer file). See
:mod:`synthformer.data.tokenization` for the overview; the character, byte and fixed kinds are in
:mod:`synthformer.data.tokenizer_kinds`.

Each class says how it exports to Hugging Face (:meth:`~Tokenizer.tokenizers_backend`: its backend as it is);
``tokenizers`` is imported inside the methods only, so importing synthformer.data stays light."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from synthformer.data.tokenizer_base import SPECIAL_TOKENS, UNK, Tokenizer

__all__ = ["BPETokenizer", "WordTokenizer"]

logger = logging.getLogger(__name__)


class _HFTokenizer(Tokenizer):
    """Shared code of the tokenizers backed by the ``tokenizers`` library; their backend is their export as it is
    (:meth:`tokenizers_backend`)."""

    def __init__(self, backend: Any) -> None:
        for i, tok in enumerate(SPECIAL_TOKENS):
            got = backend.token_to_id(tok)
            if got != i:
                raise ValueError(f"backend tokenizer must map {tok} to id {i}, got {got}")
        self._backend = backend

    @property
    def backend(self) -> Any:
        """The underlying ``tokenizers.Tokenizer``."""
        return self._backend

    @property
    def vocab_size(self) -> int:
        return int(self._backend.get_vocab_size(with_added_tokens=True))

    def _encode(self, text: str) -> list[int]:
        return list(self._backend.encode(text, add_special_tokens=False).ids)

    def encode_batch(self, texts: Iterable[str], add_bos: bool = False,
                     add_eos: bool = False) -> list[list[int]]:
        encodings = self._backend.encode_batch(list(texts), add_special_tokens=False)
        head, tail = [self.bos_id] * add_bos, [self.eos_id] * add_eos
        return [head + list(e.ids) + tail for e in encodings]

    def _decode(self, ids: list[int]) -> str:
        for i in ids:
            self._check_id(i)
        # pad/bos/eos were filtered by ``decode`` as asked; <unk> must stay visible
        return str(self._backend.decode(ids, skip_special_tokens=False))

    def id_to_token(self, token_id: int) -> str:
        self._check_id(token_id)
        return str(self._backend.id_to_token(token_id))

    def token_to_id(self, token: str) -> int | None:
        return self._backend.token_to_id(token)

    def _state(self) -> dict[str, Any]:
        return {"backend": json.loads(self._backend.to_str())}

    @classmethod
    def _from_state(cls, state: dict[str, Any]) -> _HFTokenizer:
        from tokenizers import Tokenizer as Backend

        return cls(Backend.from_str(json.dumps(state["backend"])))

    def tokenizers_backend(self) -> Any:
        from tokenizers import Tokenizer as Backend

        return Backend.from_str(self._backend.to_str())  # a copy: the run's tokenizer stays as it is


class WordTokenizer(_HFTokenizer):
    """Word-level vocabulary (``tokenizers`` ``WordLevel`` model), trained on text in memory.

    ``split="words"`` (default) separates words from punctuation (``"bushes."`` -> ``bushes``, ``.``);
    ``split="whitespace"`` splits on whitespace only (for pre-tokenized text such as SST-2). Decoding
    joins tokens with single spaces; ``<unk>`` decodes as the string ``<unk>``.

    Exported (:meth:`tokenizers_backend`) as its ``tokenizers`` backend itself.
    """

    kind = "word"
    sentinel_separator: ClassVar[str] = " "  # decoding joins tokens with spaces; a sentinel is a token too

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int | None = None, split: str = "words",
              min_frequency: int = 1, lowercase: bool = False) -> WordTokenizer:
        """Train on ``texts``; ``vocab_size`` caps the vocabulary (specials included), most frequent
        words kept; ``None`` keeps every word seen at least ``min_frequency`` times."""
        from tokenizers import Tokenizer as Backend
        from tokenizers import models, normalizers, trainers

        backend = Backend(models.WordLevel(unk_token=UNK))
        backend.pre_tokenizer = _word_pre_tokenizer(split)
        if lowercase:
            backend.normalizer = normalizers.Lowercase()
        trainer = trainers.WordLevelTrainer(
            vocab_size=vocab_size if vocab_size is not None else 2**31 - 1,
            min_frequency=min_frequency,
            special_tokens=list(SPECIAL_TOKENS),
            show_progress=False,
        )
        backend.train_from_iterator(texts, trainer=trainer)
        logger.info("trained word tokenizer: %d words", backend.get_vocab_size())
        return cls(backend)

    @classmethod
    def from_vocab(cls, words: Sequence[str], split: str = "whitespace") -> WordTokenizer:
        """A word tokenizer with exactly ``words`` (after the specials), in the given order."""
        from tokenizers import Tokenizer as Backend
        from tokenizers import models

        vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
        for w in words:
            if w in vocab:
                raise ValueError(f"duplicate or reserved word {w!r}")
            vocab[w] = len(vocab)
        backend = Backend(models.WordLevel(vocab=vocab, unk_token=UNK))
        backend.pre_tokenizer = _word_pre_tokenizer(split)
        backend.add_special_tokens(list(SPECIAL_TOKENS))
        return cls(backend)


def _word_pre_tokenizer(split: str) -> Any:
    from tokenizers import pre_tokenizers

    if split == "words":
        return pre_tokenizers.Whitespace()
    if split == "whitespace":
        return pre_tokenizers.WhitespaceSplit()
    raise ValueError(f"unknown word split {split!r}; valid: 'words', 'whitespace'")


class BPETokenizer(_HFTokenizer):
    """Byte-level BPE (GPT-2 style, ``tokenizers`` library) trained on text in memory.

    Every byte is in the initial alphabet, so no input is ever ``<unk>`` and
    ``decode(encode(x)) == x`` for every string.

    Exported (:meth:`tokenizers_backend`) as its ``tokenizers`` backend itself.
    """

    kind = "bpe"
    default_vocab_size: ClassVar[int] = 8000

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int | None = None,
              min_frequency: int = 2) -> BPETokenizer:
        """Train on ``texts``; ``vocab_size`` (default 8000) includes the 4 specials and 256 bytes."""
        from tokenizers import Tokenizer as Backend
        from tokenizers import decoders, models, pre_tokenizers, trainers

        size = cls.default_vocab_size if vocab_size is None else vocab_size
        if size < 256 + len(SPECIAL_TOKENS):
            raise ValueError(f"bpe vocab_size must be at least {256 + len(SPECIAL_TOKENS)}, got {size}")
        backend = Backend(models.BPE(unk_token=UNK))
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        backend.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=size,
            min_frequency=min_frequency,
            special_tokens=list(SPECIAL_TOKENS),
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        backend.train_from_iterator(_chunks(texts), trainer=trainer)
        logger.info("trained bpe tokenizer: %d tokens", backend.get_vocab_size())
        return cls(backend)


def _chunks(texts: Iterable[str], size: int = 1 << 16) -> Iterable[str]:
    """Cut very long texts (a whole LM corpus) into pieces the trainer can parallelise over.

    Cuts are made at newlines where possible so that few pre-tokens are split.
    """
    for text in texts:
        start = 0
        while len(text) - start > size:
            cut = text.rfind("\n", start, start + size)
            cut = start + size if cut <= start else cut + 1
            yield text[start:cut]
            start = cut
        yield text[start:]


# ---------------------------------------------------------------------------------------------------
