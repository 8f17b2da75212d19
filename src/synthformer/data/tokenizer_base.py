"""The interface every synthformer tokenizer shares: the four special ids, encoding and decoding, JSON files.

The tokenizers themselves are in :mod:`synthformer.data.tokenizer_kinds` and
:mod:`synthformer.data.tokenizer_subword`; building, training and loading them in :mod:`synthformer.data.tokenization`.
"""

from __future__ import annotations

import json
import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

__all__ = ["BOS", "EOS", "FORMAT_VERSION", "PAD", "REPLACEMENT_CHAR", "SPECIAL_TOKENS", "TOKENIZER_FILE", "UNK",
           "Tokenizer", "registered_tokenizer_kinds", "tokenizer_difference", "tokenizer_file",
           "tokenizer_from_payload"]

logger = logging.getLogger(__name__)

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
#: The special tokens, in id order (``<pad>`` = 0, ``<unk>`` = 1, ``<bos>`` = 2, ``<eos>`` = 3).
SPECIAL_TOKENS: tuple[str, ...] = (PAD, UNK, BOS, EOS)
#: The file name :meth:`Tokenizer.save` and :func:`~synthformer.data.load_tokenizer` use when given a directory.
#: Run directories name their files through ``synthformer.train.RunDir`` (``RunDir.TOKENIZER``, the same name:
#: a test checks it); this default serves direct library use only.
TOKENIZER_FILE = "synthformer_tokenizer.json"
#: The ``format_version`` of the JSON files written and read.
FORMAT_VERSION = 1
#: What ``<unk>`` and undecodable bytes decode to.
REPLACEMENT_CHAR = "\ufffd"
#: Every tokenizer class by the ``kind`` its files name, filled as the classes are defined
#: (:meth:`Tokenizer.__init_subclass__`): reading a file needs no list of kinds kept in step by hand, and a kind that
#: wraps another (sentinels around a base) reads its base here without importing the module that builds tokenizers.
_KINDS: dict[str, type[Tokenizer]] = {}


def tokenizer_file(path: str | os.PathLike[str], *, for_writing: bool = False) -> Path:
    """The tokenizer file that ``path`` names: ``path`` itself, or ``path/TOKENIZER_FILE`` for a directory.

    An existing directory is a directory; with ``for_writing``, so is a new path whose name does not end in
    ``.json`` (it is created).
    """
    path = Path(path)
    if path.is_dir() or (for_writing and not path.exists() and path.suffix != ".json"):
        return path / TOKENIZER_FILE
    return path


class Tokenizer(ABC):
    """Common interface of every synthformer tokenizer.

    Subclasses set ``kind`` and implement ``vocab_size``, ``encode``, ``decode``, ``id_to_token``,
    ``token_to_id`` and the JSON state (``_state`` / ``_from_state``); a kind that exports to Hugging Face
    implements :meth:`tokenizers_backend` too. Defining the class registers its kind: its files load through
    :func:`~synthformer.data.load_tokenizer` and it exports through ``synthformer.hf.tokenizer``, with no other
    edit.
    """

    kind: ClassVar[str]
    pad_id: ClassVar[int] = 0
    unk_id: ClassVar[int] = 1
    bos_id: ClassVar[int] = 2
    eos_id: ClassVar[int] = 3
    #: Where :class:`~synthformer.data.sentinels.SentinelTokenizer` puts sentinels after this vocabulary: counting
    #: up from its end (False), or T5's layout (True: sentinel 0 is the last id, the others count down).
    sentinels_descending: ClassVar[bool] = False
    #: What :class:`~synthformer.data.sentinels.SentinelTokenizer` writes between a sentinel and the decoded text
    #: around it (a space where the kind's decoding separates tokens, or drops the space the text had).
    sentinel_separator: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # only a class that names its own kind writes files of that kind; a subclass that inherits ``kind`` (or an
        # abstract intermediate without one) reads and writes its parent's files
        if "kind" in cls.__dict__:
            _KINDS[cls.kind] = cls

    @property
    @abstractmethod
    def vocab_size(self) -> int:
        """Number of ids, special tokens included; every id is in ``[0, vocab_size)``."""

    @abstractmethod
    def _encode(self, text: str) -> list[int]:
        """Ids of ``text`` without special tokens."""

    @abstractmethod
    def _decode(self, ids: list[int]) -> str:
        """Text of ``ids`` (specials already filtered as requested)."""

    @abstractmethod
    def id_to_token(self, token_id: int) -> str:
        """The token string of one id (``IndexError`` if out of range)."""

    @abstractmethod
    def token_to_id(self, token: str) -> int | None:
        """The id of one token string, or ``None`` if it is not in the vocabulary."""

    @abstractmethod
    def _state(self) -> dict[str, Any]:
        """JSON-serialisable state that :meth:`_from_state` rebuilds the tokenizer from."""

    @classmethod
    @abstractmethod
    def _from_state(cls, state: dict[str, Any]) -> Tokenizer:
        """Inverse of :meth:`_state`."""

    # -- export to Hugging Face ------------------------------------------------------------------
    def tokenizers_backend(self) -> Any:
        """A ``tokenizers.Tokenizer`` giving this tokenizer's ids, its special tokens included (what
        ``synthformer.hf.tokenizer`` wraps in a ``PreTrainedTokenizerFast``).

        Each kind implements it in its own class, importing ``tokenizers`` inside the method so that
        :mod:`synthformer.data` imports without it.

        Raises:
            ValueError: this kind does not export (the default).
        """
        raise ValueError(f"tokenizer kind {self.kind!r} cannot be exported to Hugging Face: its class "
                         f"{type(self).__qualname__} does not implement tokenizers_backend()")

    def tokenizers_backend_with_sentinels(self, sentinels: list[str]) -> Any:
        """:meth:`tokenizers_backend` with ``sentinels`` (token strings, in id order) as special tokens at the ids
        right after this vocabulary (what :class:`~synthformer.data.sentinels.SentinelTokenizer` exports as).

        By default they are added to :meth:`tokenizers_backend`'s backend, which numbers added tokens in order
        from its end; a kind whose Hugging Face tokenizer brings its own sentinels (``sentencepiece``: T5's extra
        ids) overrides this.
        """
        backend = self.tokenizers_backend()
        backend.add_special_tokens(sentinels)
        return backend

    # -- shared behaviour ------------------------------------------------------------------------
    def encode(self, text: str, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """Token ids of ``text``, optionally framed by ``bos_id`` / ``eos_id``."""
        ids = self._encode(text)
        if add_bos:
            ids.insert(0, self.bos_id)
        if add_eos:
            ids.append(self.eos_id)
        return ids

    def encode_batch(self, texts: Iterable[str], add_bos: bool = False,
                     add_eos: bool = False) -> list[list[int]]:
        """:meth:`encode` of each text (the ``tokenizers``-backed kinds encode in parallel)."""
        return [self.encode(t, add_bos=add_bos, add_eos=add_eos) for t in texts]

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Text of ``ids``; with ``skip_special_tokens`` the pad, bos and eos ids are dropped.

        ``ids`` may be a list or a 1-D tensor (anything iterable over ints).
        """
        id_list = [int(i) for i in ids]
        if skip_special_tokens:
            skip = (self.pad_id, self.bos_id, self.eos_id)
            id_list = [i for i in id_list if i not in skip]
        return self._decode(id_list)

    @property
    def special_ids(self) -> tuple[int, int, int, int]:
        """``(pad_id, unk_id, bos_id, eos_id)``."""
        return (self.pad_id, self.unk_id, self.bos_id, self.eos_id)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the tokenizer as JSON (never pickle) to the file ``path``; return the file's path.

        ``path`` names the file (in a run directory: ``RunDir(run).tokenizer_path``); its parent directories are
        created. For direct library use a directory is accepted too: a path that is an existing directory, or
        whose name does not end in ``.json``, gets :data:`TOKENIZER_FILE` inside it.
        """
        path = tokenizer_file(path, for_writing=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"format_version": FORMAT_VERSION, "kind": self.kind, **self._state()}
        path.write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        logger.info("saved %s tokenizer (vocab %d) to %s", self.kind, self.vocab_size, path)
        return path

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return self.kind == other.kind and self._state() == other._state()

    def __hash__(self) -> int:
        return hash((self.kind, self.vocab_size))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size})"

    def _check_id(self, token_id: int) -> None:
        if not 0 <= token_id < self.vocab_size:
            raise IndexError(f"token id {token_id} out of range [0, {self.vocab_size})")


def tokenizer_difference(ours: Tokenizer, theirs: Tokenizer, names: tuple[str, str] = ("ours", "theirs")) -> str:
    """What tells two tokenizers apart, for an error that refuses one of them (``names``: how the message calls
    each): their kinds and sizes when those differ; else the first id whose token differs; else the first settings
    of their saved state that differ (two tokenizers of one kind and size often differ only there, and naming kind
    and size twice would say nothing)."""
    if (ours.kind, ours.vocab_size) != (theirs.kind, theirs.vocab_size):
        return (f"{names[0]} is {ours.kind} with {ours.vocab_size:,} ids, {names[1]} {theirs.kind} with "
                f"{theirs.vocab_size:,} ids")
    same = f"both are {ours.kind} with {ours.vocab_size:,} ids"
    for token_id in range(ours.vocab_size):
        mine, given = ours.id_to_token(token_id), theirs.id_to_token(token_id)
        if mine != given:
            return f"{same}, but id {token_id} is {mine!r} in {names[0]} and {given!r} in {names[1]}"
    a, b = ours._state(), theirs._state()
    keys = [k for k in sorted(set(a) | set(b), key=str) if a.get(k) != b.get(k)]
    return f"{same} and the same tokens, but other settings ({', '.join(map(str, keys[:3])) or 'none'})"


def registered_tokenizer_kinds() -> list[str]:
    """The ``kind`` of every tokenizer class defined so far (those a file may name)."""
    return list(_KINDS)


def tokenizer_from_payload(payload: Any, where: str) -> Tokenizer:
    """The tokenizer of a parsed tokenizer file (``where`` names it in errors); a
    :class:`~synthformer.data.sentinels.SentinelTokenizer`'s file holds its base tokenizer's payload inside.

    Raises:
        ValueError: not a synthformer tokenizer, an unsupported format version, an unknown kind, or a file of a
            known kind that lacks (or garbles) one of its fields.
    """
    if not isinstance(payload, dict) or "kind" not in payload:
        raise ValueError(f"{where}: not a synthformer tokenizer file (no 'kind')")
    version = payload.get("format_version")
    if version != FORMAT_VERSION:
        raise ValueError(f"{where}: unsupported tokenizer format_version {version!r}")
    kind = payload["kind"]
    if kind not in _KINDS:
        raise ValueError(f"{where}: unknown tokenizer kind {kind!r}; valid kinds: {', '.join(_KINDS)}")
    try:
        return _KINDS[kind]._from_state(payload)
    except KeyError as err:  # each kind reads its own fields; a file cut down or edited lacks one
        raise ValueError(f"{where}: a damaged {kind!r} tokenizer file (missing field {err})") from None
    except (TypeError, ValueError, IndexError, AttributeError) as err:
        raise ValueError(f"{where}: a damaged {kind!r} tokenizer file ({err})") from None
