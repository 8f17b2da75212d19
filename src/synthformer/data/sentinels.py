"""Sentinel tokens for T5-style span corruption, added to any tokenizer (char, byte, word, BPE, fixed, SentencePiece).

T5 replaces each corrupted span of the input by one *sentinel* token (``<extra_id_0>``, ``<extra_id_1>``, ...)
and builds the target from the same sentinels followed by the spans they hide. :class:`SentinelTokenizer` wraps
a tokenizer and appends ``num_sentinels`` ids after its vocabulary, keeping the base tokenizer's ids unchanged (a
pretrained run's vocabulary is the base vocabulary plus the sentinels). For most kinds sentinel ``i`` has id
``base.vocab_size + i``; T5 counts its extra ids down from the top instead (``<extra_id_0>`` is the last id), and
a base whose kind follows T5 (``sentencepiece``: ``Tokenizer.sentinels_descending``) gets T5's order, so its ids are
Hugging Face's ``T5Tokenizer``'s.

No text ever encodes to a sentinel: :meth:`~SentinelTokenizer.encode` is the base tokenizer's encoding, so a
corpus that happens to contain the string ``<extra_id_0>`` gets its ordinary tokens (no collision with real
tokens). :meth:`~SentinelTokenizer.encode_with_sentinels` is the explicit way to write sentinels in a prompt
(``synthformer generate`` on a span-corruption run). Decoding writes a sentinel as its name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from synthformer.data.tokenizer_base import FORMAT_VERSION, Tokenizer, tokenizer_from_payload

__all__ = ["DEFAULT_NUM_SENTINELS", "SentinelTokenizer", "sentinel_name", "with_sentinels"]

#: T5's count of extra ids.
DEFAULT_NUM_SENTINELS = 100
_SENTINEL_RE = re.compile(r"<extra_id_(\d+)>")


def sentinel_name(index: int) -> str:
    """The token string of sentinel ``index`` (T5's spelling)."""
    return f"<extra_id_{index}>"


def with_sentinels(tokenizer: Tokenizer, count: int) -> SentinelTokenizer:
    """``tokenizer`` with at least ``count`` sentinels: itself when it has them already (the ``sentencepiece`` kind
    brings T5's), else wrapped in a :class:`SentinelTokenizer` of ``count``.

    Raises:
        ValueError: ``tokenizer`` has sentinels, but fewer than ``count``.
    """
    if not isinstance(tokenizer, SentinelTokenizer):
        return SentinelTokenizer(tokenizer, count)
    if tokenizer.num_sentinels < count:
        raise ValueError(f"the tokenizer has {tokenizer.num_sentinels} sentinels, {count} are needed")
    return tokenizer


class SentinelTokenizer(Tokenizer):
    """A tokenizer plus ``num_sentinels`` sentinel ids after its vocabulary (see the module docstring).

    Args:
        base: the tokenizer of the text (its ids and special ids are kept).
        num_sentinels: how many sentinels (T5: 100); an example needs one per corrupted span plus one.

    Exported (:meth:`tokenizers_backend`) as the base kind's tokenizer with the sentinels as special tokens at
    their native ids (the base's :meth:`~Tokenizer.tokenizers_backend_with_sentinels`).
    """

    kind = "sentinels"

    def __init__(self, base: Tokenizer, num_sentinels: int = DEFAULT_NUM_SENTINELS) -> None:
        if isinstance(base, SentinelTokenizer):
            raise ValueError("the tokenizer already has sentinels; wrap its base tokenizer instead")
        if isinstance(num_sentinels, bool) or not isinstance(num_sentinels, int) or num_sentinels < 1:
            raise ValueError(f"num_sentinels must be a positive integer, got {num_sentinels!r}")
        self.base = base
        self.num_sentinels = num_sentinels
        #: The lowest sentinel id (sentinel 0's, or with T5's descending order sentinel ``num_sentinels - 1``'s).
        self.first_sentinel_id = base.vocab_size
        self.descending = bool(base.sentinels_descending)

    # the special ids are the base's (the sentencepiece kind's are T5's, the other kinds share 0..3)
    @property  # type: ignore[override]
    def pad_id(self) -> int:
        return self.base.pad_id

    @property  # type: ignore[override]
    def unk_id(self) -> int:
        return self.base.unk_id

    @property  # type: ignore[override]
    def bos_id(self) -> int:
        return self.base.bos_id

    @property  # type: ignore[override]
    def eos_id(self) -> int:
        return self.base.eos_id

    @property
    def vocab_size(self) -> int:
        return self.base.vocab_size + self.num_sentinels

    def sentinel_id(self, index: int) -> int:
        """The id of sentinel ``index`` (0-based)."""
        if not 0 <= index < self.num_sentinels:
            raise IndexError(f"sentinel {index} out of range: this tokenizer has {self.num_sentinels} sentinels")
        return self.vocab_size - 1 - index if self.descending else self.first_sentinel_id + index

    def sentinel_index(self, token_id: int) -> int:
        """The sentinel number of the sentinel id ``token_id`` (inverse of :meth:`sentinel_id`)."""
        if not self.is_sentinel(token_id):
            raise IndexError(f"token id {token_id} is not a sentinel of this tokenizer")
        return self.vocab_size - 1 - token_id if self.descending else token_id - self.first_sentinel_id

    @property
    def sentinel_ids(self) -> list[int]:
        """All sentinel ids, sentinel 0 first."""
        return [self.sentinel_id(i) for i in range(self.num_sentinels)]

    def is_sentinel(self, token_id: int) -> bool:
        """Whether ``token_id`` is a sentinel."""
        return self.first_sentinel_id <= token_id < self.vocab_size

    # -- encoding ----------------------------------------------------------------------------------------
    def _encode(self, text: str) -> list[int]:
        return self.base._encode(text)

    def encode(self, text: str, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        # the base's encode, so a byte tokenizer still accepts bytes
        return self.base.encode(text, add_bos=add_bos, add_eos=add_eos)

    def encode_batch(self, texts: Iterable[str], add_bos: bool = False, add_eos: bool = False) -> list[list[int]]:
        return self.base.encode_batch(texts, add_bos=add_bos, add_eos=add_eos)

    def encode_with_sentinels(self, text: str, add_eos: bool = False) -> list[int]:
        """Ids of ``text`` where each ``<extra_id_N>`` written in it becomes sentinel ``N``.

        Raises:
            ValueError: a sentinel number this tokenizer does not have.
        """
        ids: list[int] = []
        pos = 0
        for match in _SENTINEL_RE.finditer(text):
            ids += self.base.encode(text[pos:match.start()]) if match.start() > pos else []
            index = int(match.group(1))
            if index >= self.num_sentinels:
                raise ValueError(f"{match.group(0)}: this tokenizer has sentinels 0..{self.num_sentinels - 1}")
            ids.append(self.sentinel_id(index))
            pos = match.end()
        ids += self.base.encode(text[pos:]) if pos < len(text) else []
        if add_eos:
            ids.append(self.eos_id)
        return ids

    # -- decoding ----------------------------------------------------------------------------------------
    def _decode(self, ids: list[int]) -> str:
        # base runs decode together (a BPE merge or a multi-byte character may span several ids)
        parts: list[str] = []
        run: list[int] = []
        for i in ids:
            if self.is_sentinel(i):
                if run:
                    parts.append(self.base._decode(run))
                    run = []
                parts.append(sentinel_name(self.sentinel_index(i)))
            else:
                run.append(i)
        if run:
            parts.append(self.base._decode(run))
        return self.base.sentinel_separator.join(parts)

    def id_to_token(self, token_id: int) -> str:
        self._check_id(token_id)
        if self.is_sentinel(token_id):
            return sentinel_name(self.sentinel_index(token_id))
        return self.base.id_to_token(token_id)

    def token_to_id(self, token: str) -> int | None:
        match = _SENTINEL_RE.fullmatch(token)
        if match is not None and int(match.group(1)) < self.num_sentinels:
            return self.sentinel_id(int(match.group(1)))
        return self.base.token_to_id(token)

    # -- file state --------------------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        base = {"format_version": FORMAT_VERSION, "kind": self.base.kind, **self.base._state()}
        return {"num_sentinels": self.num_sentinels, "base": base}

    @classmethod
    def _from_state(cls, state: dict[str, Any]) -> SentinelTokenizer:
        return cls(tokenizer_from_payload(state["base"], "sentinel base"), int(state["num_sentinels"]))

    # -- export to Hugging Face --------------------------------------------------------------------------
    def tokenizers_backend(self) -> Any:
        return self.base.tokenizers_backend_with_sentinels(
            [sentinel_name(self.sentinel_index(i)) for i in range(self.first_sentinel_id, self.vocab_size)])

    def __repr__(self) -> str:
        return f"SentinelTokenizer({self.base!r}, num_sentinels={self.num_sentinels})"
