"""The tokenizers with a vocabulary of their own: character, byte, and fixed vocabularies for generated tasks (the
word-level and BPE kinds, trained by the ``tokenizers`` library, are in :mod:`synthformer.data.tokenizer_subword`).
See :mod:`synthformer.data.tokenization` for the overview.

Each class also says how it exports to Hugging Face (its :meth:`~Tokenizer.tokenizers_backend`); ``tokenizers`` is
imported inside those methods only, as by the trainers."""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from synthformer.data.tokenizer_base import REPLACEMENT_CHAR, SPECIAL_TOKENS, UNK, Tokenizer

__all__ = ["ByteTokenizer", "CharTokenizer", "FixedVocabTokenizer", "byte_symbols"]

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
