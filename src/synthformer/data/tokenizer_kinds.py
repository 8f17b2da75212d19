"""The tokenizers: character, byte, word-level and byte-level BPE (the last two backed by the ``tokenizers``
library), and fixed vocabularies for generated tasks. See :mod:`synthformer.data.tokenization` for the overview.

Each class also says how it exports to Hugging Face (its :meth:`~Tokenizer.tokenizers_backend`); ``tokenizers`` is
imported inside those methods only, as by the trainers."""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from synthformer.data.tokenizer_base import REPLACEMENT_CHAR, SPECIAL_TOKENS, UNK, Tokenizer

__all__ = ["BPETokenizer", "ByteTokenizer", "CharTokenizer", "FixedVocabTokenizer", "WordTokenizer", "byte_symbols"]

logger = logging.getLogger(__name__)


def _specials_vocab() -> dict[str, int]:
    """The special tokens at their ids, the start of every exported vocabulary but the ``tokenizers``-backed ones'."""
    return {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}


class CharTokenizer(Tokenizer):
    """One id per Unicode character of a fixed alphabet; other characters map to ``unk_id``.

    Ids: the 4 specials, then the alphabet in code-point order. ``<unk>`` decodes to U+FFFD.

    Exported (:meth:`tokenizers_backend`) as a ``WordLevel`` vocabulary of the alphabet over a pre-tokenizer that
    isolates every character; the pieces are joined back without spaces.

    Args:
        alphabet: the characters of the vocabulary (duplicates ignored).
    """

    kind = "char"

    def __init__(self, alphabet: Iterable[str]) -> None:
        chars = sorted(set(alphabet))
        for ch in chars:
            if len(ch) != 1:
                raise ValueError(f"alphabet entries must be single characters, got {ch!r}")
        self._chars: list[str] = chars
        self._char_to_id = {ch: i + len(SPECIAL_TOKENS) for i, ch in enumerate(chars)}

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int | None = None) -> CharTokenizer:
        """Alphabet from ``texts``; with ``vocab_size``, keep the most frequent characters so the whole
        vocabulary (specials included) has at most ``vocab_size`` ids (ties broken by code point)."""
        counts: Counter[str] = Counter()
        for text in texts:
            counts.update(text)
        chars = sorted(counts, key=lambda c: (-counts[c], c))
        if vocab_size is not None:
            if vocab_size <= len(SPECIAL_TOKENS):
                raise ValueError(f"char vocab_size must exceed {len(SPECIAL_TOKENS)}, got {vocab_size}")
            dropped = chars[vocab_size - len(SPECIAL_TOKENS) :]
            if dropped:
                n = sum(counts[c] for c in dropped)
                logger.warning("char tokenizer: %d rare characters (%d occurrences) map to <unk>",
                               len(dropped), n)
            chars = chars[: vocab_size - len(SPECIAL_TOKENS)]
        return cls(chars)

    @property
    def vocab_size(self) -> int:
        return len(SPECIAL_TOKENS) + len(self._chars)

    @property
    def alphabet(self) -> list[str]:
        """The characters of the vocabulary, in id order."""
        return list(self._chars)

    def _encode(self, text: str) -> list[int]:
        get, unk = self._char_to_id.get, self.unk_id
        return [get(ch, unk) for ch in text]

    def _decode(self, ids: list[int]) -> str:
        return "".join(REPLACEMENT_CHAR if i == self.unk_id else self.id_to_token(i) for i in ids)

    def id_to_token(self, token_id: int) -> str:
        self._check_id(token_id)
        if token_id < len(SPECIAL_TOKENS):
            return SPECIAL_TOKENS[token_id]
        return self._chars[token_id - len(SPECIAL_TOKENS)]

    def token_to_id(self, token: str) -> int | None:
        if token in SPECIAL_TOKENS:
            return SPECIAL_TOKENS.index(token)
        return self._char_to_id.get(token)

    def _state(self) -> dict[str, Any]:
        return {"alphabet": self._chars}

    @classmethod
    def _from_state(cls, state: dict[str, Any]) -> CharTokenizer:
        return cls(state["alphabet"])

    def tokenizers_backend(self) -> Any:
        from tokenizers import Regex, decoders, models, pre_tokenizers
        from tokenizers import Tokenizer as Backend

        vocab = {**_specials_vocab(), **{ch: self.token_to_id(ch) for ch in self.alphabet}}
        backend = Backend(models.WordLevel(vocab=vocab, unk_token=UNK))
        # [\s\S]: every character, newlines included, becomes its own piece
        backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
        backend.decoder = decoders.Fuse()
        backend.add_special_tokens(list(SPECIAL_TOKENS))
        return backend


# ---------------------------------------------------------------------------------------------------
class ByteTokenizer(Tokenizer):
    """UTF-8 bytes: byte ``b`` has id ``b + 4``; vocabulary 260 (256 bytes + 4 specials).

    ``encode`` also accepts ``bytes`` (for byte-level LM on data that is not valid UTF-8). ``decode``
    replaces invalid UTF-8 (e.g. a multi-byte character cut by a block boundary) with U+FFFD;
    :meth:`decode_bytes` returns the raw bytes.

    Exported (:meth:`tokenizers_backend`) as a ``BPE`` model without merges over the 256 byte symbols of the
    byte-level pre-tokenizer (:func:`byte_symbols`), byte ``b`` at id ``b + 4`` as natively; decoding turns the
    symbols back into bytes.
    """

    kind = "byte"
    offset: ClassVar[int] = len(SPECIAL_TOKENS)

    @property
    def vocab_size(self) -> int:
        return 256 + self.offset

    def encode(self, text: str | bytes, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """Ids of the UTF-8 bytes of ``text`` (or of ``text`` itself if it is ``bytes``)."""
        return super().encode(text, add_bos=add_bos, add_eos=add_eos)  # type: ignore[arg-type]

    def _encode(self, text: str | bytes) -> list[int]:  # type: ignore[override]
        raw = text if isinstance(text, bytes | bytearray) else text.encode("utf-8")
        off = self.offset
        return [b + off for b in raw]

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of ``ids``; special ids are dropped."""
        off = self.offset
        return bytes(i - off for i in (int(j) for j in ids) if i >= off)

    def _decode(self, ids: list[int]) -> str:
        parts: list[str] = []
        chunk: list[int] = []
        for i in ids:
            self._check_id(i)
            if i >= self.offset:
                chunk.append(i - self.offset)
                continue
            if chunk:
                parts.append(bytes(chunk).decode("utf-8", errors="replace"))
                chunk = []
            parts.append(REPLACEMENT_CHAR if i == self.unk_id else SPECIAL_TOKENS[i])
        if chunk:
            parts.append(bytes(chunk).decode("utf-8", errors="replace"))
        return "".join(parts)

    def id_to_token(self, token_id: int) -> str:
        self._check_id(token_id)
        if token_id < self.offset:
            return SPECIAL_TOKENS[token_id]
        return f"<0x{token_id - self.offset:02X}>"

    def token_to_id(self, token: str) -> int | None:
        if token in SPECIAL_TOKENS:
            return SPECIAL_TOKENS.index(token)
        if len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
            try:
                return int(token[3:5], 16) + self.offset
            except ValueError:
                return None
        return None

    def _state(self) -> dict[str, Any]:
        return {}

    @classmethod
    def _from_state(cls, state: dict[str, Any]) -> ByteTokenizer:
        return cls()

    def tokenizers_backend(self) -> Any:
        from tokenizers import Tokenizer as Backend
        from tokenizers import decoders, models, pre_tokenizers

        vocab = {**_specials_vocab(), **{sym: b + self.offset for b, sym in enumerate(byte_symbols())}}
        backend = Backend(models.BPE(vocab=vocab, merges=[], unk_token=UNK))
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        backend.decoder = decoders.ByteLevel()
        backend.add_special_tokens(list(SPECIAL_TOKENS))
        return backend


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


# ---------------------------------------------------------------------------------------------------
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
class FixedVocabTokenizer(Tokenizer):
    """Whitespace-separated tokens from a fixed list; tokens in ``ignore`` are dropped when encoding.

    Used for synthetic tasks with a known vocabulary, e.g. ListOps (``ignore=("(", ")")`` reproduces
    the Long Range Arena input pipeline). Decoding joins tokens with single spaces.

    Exported (:meth:`tokenizers_backend`) as a ``WordLevel`` vocabulary over whitespace-separated tokens; the
    ignored tokens are removed by the normalizer.
    """

    kind = "fixed"

    def __init__(self, tokens: Sequence[str], ignore: Iterable[str] = ()) -> None:
        self._tokens = list(tokens)
        self._ignore = sorted(set(ignore))
        self._to_id = {t: i for i, t in enumerate(SPECIAL_TOKENS)}
        for t in self._tokens:
            if t in self._to_id or not t or any(c.isspace() for c in t):
                raise ValueError(f"invalid or duplicate token {t!r}")
            self._to_id[t] = len(self._to_id)

    @property
    def vocab_size(self) -> int:
        return len(self._to_id)

    @property
    def tokens(self) -> list[str]:
        """The non-special tokens, in id order."""
        return list(self._tokens)

    @property
    def ignore(self) -> list[str]:
        """The tokens dropped when encoding (sorted)."""
        return list(self._ignore)

    def _encode(self, text: str) -> list[int]:
        ignore, get, unk = set(self._ignore), self._to_id.get, self.unk_id
        return [get(t, unk) for t in text.split() if t not in ignore]

    def _decode(self, ids: list[int]) -> str:
        return " ".join(self.id_to_token(i) for i in ids)

    def id_to_token(self, token_id: int) -> str:
        self._check_id(token_id)
        if token_id < len(SPECIAL_TOKENS):
            return SPECIAL_TOKENS[token_id]
        return self._tokens[token_id - len(SPECIAL_TOKENS)]

    def token_to_id(self, token: str) -> int | None:
        return self._to_id.get(token)

    def _state(self) -> dict[str, Any]:
        return {"tokens": self._tokens, "ignore": self._ignore}

    @classmethod
    def _from_state(cls, state: dict[str, Any]) -> FixedVocabTokenizer:
        return cls(state["tokens"], state.get("ignore", ()))

    def tokenizers_backend(self) -> Any:
        from tokenizers import Regex, models, normalizers, pre_tokenizers
        from tokenizers import Tokenizer as Backend

        vocab = {**_specials_vocab(), **{t: self.token_to_id(t) for t in self.tokens}}
        backend = Backend(models.WordLevel(vocab=vocab, unk_token=UNK))
        if self._ignore:
            # a whole whitespace-separated token only: "(" goes, "(x" stays
            pattern = "|".join(rf"(?<!\S){re.escape(t)}(?!\S)" for t in self._ignore)
            backend.normalizer = normalizers.Replace(Regex(pattern), " ")
        backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        backend.add_special_tokens(list(SPECIAL_TOKENS))
        return backend
