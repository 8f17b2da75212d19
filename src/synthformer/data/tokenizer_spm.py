"""The ``sentencepiece`` tokenizer kind: T5's vocabulary, either trained on the task's text or read from a
``spiece.model`` file, with T5's sentinels.

T5's vocabulary (and Hugging Face's ``T5Tokenizer``, which loads T5's ``spiece.model``) is laid out as::

    id 0            <pad>   (also the decoder's first input: T5 has no <bos>)
    id 1            </s>    (eos)
    id 2            <unk>
    ids 3 .. P-1    the SentencePiece model's pieces (P pieces in all, the three specials included)
    ids P .. P+N-1  the N sentinels, counting DOWN: <extra_id_0> = P+N-1 (the last id), <extra_id_N-1> = P

:class:`SentencePieceTokenizer` is the SentencePiece model alone (ids ``0 .. P-1``); its sentinels are added by
:class:`~synthformer.data.sentinels.SentinelTokenizer`, which puts them in T5's descending order for this kind
(:attr:`~synthformer.data.tokenizer_base.Tokenizer.sentinels_descending`). :func:`build_sentencepiece` builds the
pair: ``vocab_size`` counts every id, sentinels included, as T5's 32100 does (32000 pieces + 100 sentinels).

The tokenizer file stores the model proto itself (base64 of its bytes), so a run directory needs no other file and
its sha256 depends on the model only. The ``sentencepiece`` package is imported only when a tokenizer of this kind
is built or loaded (it is in synthformer's ``hf`` extra).
"""

from __future__ import annotations

import base64
import io
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from synthformer.data.sentinels import DEFAULT_NUM_SENTINELS, SentinelTokenizer
from synthformer.data.tokenizer_base import Tokenizer

__all__ = ["SPM_SPECIALS", "SentencePieceTokenizer", "build_sentencepiece"]

logger = logging.getLogger(__name__)

#: T5's special pieces, in id order (``<pad>`` = 0, ``</s>`` = 1, ``<unk>`` = 2).
SPM_SPECIALS: tuple[str, ...] = ("<pad>", "</s>", "<unk>")
#: SentencePiece skips training sentences longer than this many bytes (its ``max_sentence_length``); longer lines
#: are cut at a space below it so that no text is lost.
_MAX_SENTENCE_BYTES = 4192
#: The smallest model (pieces, specials included) that trains with byte fallback unless told otherwise: the 256
#: byte pieces, the specials and the characters must fit with room for the pieces that make tokens longer than one
#: character (SentencePiece refuses a model smaller than its bytes plus its required characters).
BYTE_FALLBACK_MIN_PIECES = 1024
#: The options of :meth:`SentencePieceTokenizer.train` that :func:`build_sentencepiece` passes on.
_TRAIN_OPTIONS = ("character_coverage", "byte_fallback", "num_threads")


def _sentencepiece() -> Any:
    try:
        import sentencepiece
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the 'sentencepiece' tokenizer kind needs the optional 'sentencepiece' package: "
                          "pip install sentencepiece (it is part of synthformer's 'hf' extra)") from exc
    return sentencepiece


class SentencePieceTokenizer(Tokenizer):
    """A SentencePiece model with T5's special ids: ``<pad>`` 0, ``</s>`` 1, ``<unk>`` 2; no ``<bos>``.

    ``bos_id`` is ``pad_id`` (0): T5's decoder starts from ``<pad>``, which the encoder-decoder here feeds as its
    first decoder input (target padding needs no mask: the decoder is causal and padded labels are ignored).
    ``<unk>`` decodes as SentencePiece writes it (`` ⁇ ``).

    Exported (:meth:`tokenizers_backend`) as ``transformers``' own ``T5Tokenizer``, read from this model's
    ``spiece.model``; with sentinels (:meth:`tokenizers_backend_with_sentinels`) as that tokenizer with the same
    number of ``<extra_id_N>`` (T5's ids: ``<pad>`` 0, ``</s>`` 1, ``<unk>`` 2, sentinels counting down from the
    last id).

    Args:
        model_proto: the bytes of a SentencePiece model (the content of a ``spiece.model`` file).

    Raises:
        ValueError: the bytes are not a SentencePiece model, or its special ids are not T5's.
    """

    kind = "sentencepiece"
    pad_id: ClassVar[int] = 0
    eos_id: ClassVar[int] = 1
    unk_id: ClassVar[int] = 2
    bos_id: ClassVar[int] = 0
    sentinels_descending: ClassVar[bool] = True
    sentinel_separator: ClassVar[str] = " "
    #: The default total vocabulary of :func:`build_sentencepiece` (sentinels included), as the ``bpe`` kind's.
    default_vocab_size: ClassVar[int] = 8000

    def __init__(self, model_proto: bytes) -> None:
        spm = _sentencepiece()
        processor = spm.SentencePieceProcessor()
        try:
            processor.LoadFromSerializedProto(bytes(model_proto))
        except (RuntimeError, OSError, TypeError) as err:
            raise ValueError(f"not a SentencePiece model ({_last_line(err)})") from None
        found = (processor.pad_id(), processor.eos_id(), processor.unk_id())
        if found != (self.pad_id, self.eos_id, self.unk_id):
            raise ValueError(f"the SentencePiece model has pad/eos/unk ids {found}, expected T5's (0, 1, 2)")
        self._proto = bytes(model_proto)
        self._processor = processor

    # -- building ----------------------------------------------------------------------------------------
    @classmethod
    def train(cls, texts: Iterable[str], num_pieces: int, *, character_coverage: float | None = None,
              byte_fallback: bool | None = None, num_threads: int = 1) -> SentencePieceTokenizer:
        """A unigram model of at most ``num_pieces`` pieces (the three specials included) trained on ``texts``.

        By default every character is spelled. With at least :data:`BYTE_FALLBACK_MIN_PIECES` pieces the model
        trains with byte fallback and ``character_coverage`` 0.9995: a character outside its pieces (the coverage
        drops the rarest 0.05% of the training text's characters) is written as its UTF-8 bytes (256 of the pieces
        are ``<0x00>`` .. ``<0xFF>``) instead of ``<unk>``, so every text round-trips, every label of every task
        included. Without it a vocabulary trained on IMDb cannot spell ``not_entailment`` (``_`` is rarer than the
        cut). A smaller model has no room for the 256 byte pieces: it keeps every character of its training text
        instead (``character_coverage`` 1.0, no byte fallback), so only characters it never saw become ``<unk>``.
        Either option given explicitly is used as given (``byte_fallback=False`` is the choice of T5's own
        ``spiece.model``, trained on C4 where the labels' characters are common).

        ``texts`` are cut into lines (SentencePiece's sentences). ``num_pieces`` is a cap: a text too small for it
        gets fewer pieces (SentencePiece's ``hard_vocab_limit=false``). ``num_threads`` is recorded in the model,
        so the same text and threads give the same bytes (the default, 1, keeps a model independent of the host).
        """
        spm = _sentencepiece()
        if byte_fallback is None:
            byte_fallback = num_pieces >= BYTE_FALLBACK_MIN_PIECES
        if character_coverage is None:
            character_coverage = 0.9995 if byte_fallback else 1.0
        if num_pieces <= len(SPM_SPECIALS):
            raise ValueError(f"a SentencePiece model needs more than its {len(SPM_SPECIALS)} special pieces, "
                             f"got {num_pieces} pieces")
        sentences = _sentences(texts)
        first = next(sentences, None)
        if first is None:
            raise ValueError("no training text for the SentencePiece model")
        writer = io.BytesIO()
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=_chain(first, sentences), model_writer=writer, model_type="unigram",
                vocab_size=num_pieces, hard_vocab_limit=False, character_coverage=character_coverage,
                byte_fallback=byte_fallback, num_threads=num_threads,
                pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
                pad_piece=SPM_SPECIALS[0], eos_piece=SPM_SPECIALS[1], unk_piece=SPM_SPECIALS[2],
                minloglevel=2,  # SentencePiece's own progress lines on stderr: errors only
            )
        except RuntimeError as err:
            raise ValueError(f"SentencePiece training of {num_pieces} pieces failed: {_last_line(err)}") from None
        tokenizer = cls(writer.getvalue())
        logger.info("trained sentencepiece tokenizer: %d pieces", tokenizer.vocab_size)
        return tokenizer

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> SentencePieceTokenizer:
        """The SentencePiece model in the file ``path`` (T5's ``spiece.model``).

        Raises:
            FileNotFoundError: no file at ``path``.
            ValueError: the file is not a SentencePiece model with T5's special ids.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no SentencePiece model file at {path}")
        try:
            return cls(path.read_bytes())
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None

    @property
    def model_proto(self) -> bytes:
        """The model's bytes (what a ``spiece.model`` file holds)."""
        return self._proto

    def save_model(self, path: str | os.PathLike[str]) -> Path:
        """Write the model as a ``spiece.model`` file (for Hugging Face's ``T5Tokenizer``); return its path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self._proto)
        return path

    @property
    def byte_fallback(self) -> bool:
        """Whether the model writes a character outside its pieces as its UTF-8 bytes (it holds the 256 byte
        pieces) instead of ``<unk>``: on by default for models of :data:`BYTE_FALLBACK_MIN_PIECES` pieces or more,
        off for T5's own ``spiece.model``."""
        first = self._processor.piece_to_id("<0x00>")
        return first != self.unk_id and bool(self._processor.is_byte(first))

    # -- the Tokenizer interface -------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return int(self._processor.get_piece_size())

    def _encode(self, text: str) -> list[int]:
        return list(self._processor.encode(text, out_type=int))

    def encode_batch(self, texts: Iterable[str], add_bos: bool = False,
                     add_eos: bool = False) -> list[list[int]]:
        head, tail = [self.bos_id] * add_bos, [self.eos_id] * add_eos
        return [head + ids + tail for ids in self._processor.encode(list(texts), out_type=int)]

    def _decode(self, ids: list[int]) -> str:
        for i in ids:
            self._check_id(i)
        return str(self._processor.decode(ids))

    def id_to_token(self, token_id: int) -> str:
        self._check_id(token_id)
        return str(self._processor.id_to_piece(token_id))

    def token_to_id(self, token: str) -> int | None:
        token_id = int(self._processor.piece_to_id(token))
        # SentencePiece answers <unk>'s id for a piece it does not have
        return None if token_id == self.unk_id and token != SPM_SPECIALS[self.unk_id] else token_id

    def _state(self) -> dict[str, Any]:
        return {"model": base64.b64encode(self._proto).decode("ascii")}

    @classmethod
    def _from_state(cls, state: dict[str, Any]) -> SentencePieceTokenizer:
        return cls(base64.b64decode(state["model"], validate=True))

    # -- export to Hugging Face --------------------------------------------------------------------------
    def tokenizers_backend(self) -> Any:
        return self._t5_backend(0)

    def tokenizers_backend_with_sentinels(self, sentinels: list[str]) -> Any:
        # T5Tokenizer numbers its extra ids as SentinelTokenizer does for this kind (descending from the last id),
        # so its own sentinels are the ones at the native ids
        return self._t5_backend(len(sentinels))

    def _t5_backend(self, sentinels: int) -> Any:
        """The backend of ``transformers``' ``T5Tokenizer`` for this model's ``spiece.model`` with ``sentinels``
        extra ids (without the ``</s>`` its post-processor appends: ``synthformer.hf.tokenizer.to_hf_tokenizer``
        frames as the run did)."""
        from tokenizers import processors
        from transformers import T5Tokenizer

        with tempfile.TemporaryDirectory() as folder:
            self.save_model(Path(folder) / "spiece.model")
            backend = T5Tokenizer.from_pretrained(folder, extra_ids=sentinels).backend_tokenizer
        backend.post_processor = processors.TemplateProcessing(single="$A", pair="$A $B")
        return backend

    # the processor is a C++ object: workers that receive the tokenizer rebuild it from the bytes
    def __getstate__(self) -> dict[str, Any]:
        return {"proto": self._proto}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["proto"])  # type: ignore[misc]


def build_sentencepiece(texts: Iterable[str], vocab_size: int | None = None, *, model_file: str | None = None,
                        num_sentinels: int = DEFAULT_NUM_SENTINELS, **train_options: Any) -> Tokenizer:
    """The ``sentencepiece`` kind: a SentencePiece model (trained on ``texts``, or read from ``model_file``) plus
    ``num_sentinels`` sentinels at T5's ids (none when 0).

    Args:
        texts: the training text (ignored with ``model_file``).
        vocab_size: every id, sentinels included (default 8000); with ``model_file``, ``None`` or the file's pieces
            plus ``num_sentinels``.
        model_file: an existing ``spiece.model`` (a T5 checkpoint's own) instead of training.
        num_sentinels: T5's ``extra_ids`` (100).
        **train_options: ``character_coverage``, ``byte_fallback``, ``num_threads`` of
            :meth:`SentencePieceTokenizer.train`.

    Raises:
        ValueError: a vocabulary too small for the specials and sentinels, a size that is not the file's, a bad
            option, or a file that is not a SentencePiece model.
        FileNotFoundError: ``model_file`` does not exist.
    """
    unknown = sorted(set(train_options) - set(_TRAIN_OPTIONS))
    if unknown:
        raise ValueError(f"unknown sentencepiece option(s) {unknown}; valid: model_file, num_sentinels, "
                         f"{', '.join(_TRAIN_OPTIONS)}")
    if isinstance(num_sentinels, bool) or not isinstance(num_sentinels, int) or num_sentinels < 0:
        raise ValueError(f"num_sentinels must be an integer >= 0, got {num_sentinels!r}")
    if model_file is not None:
        if train_options:
            raise ValueError(f"options {sorted(train_options)} train a model; they do not apply to model_file")
        model = SentencePieceTokenizer.from_file(model_file)
        if vocab_size is not None and vocab_size != model.vocab_size + num_sentinels:
            raise ValueError(f"vocab_size {vocab_size}, but {model_file} has {model.vocab_size} pieces + "
                             f"{num_sentinels} sentinels = {model.vocab_size + num_sentinels} ids")
    else:
        size = SentencePieceTokenizer.default_vocab_size if vocab_size is None else vocab_size
        if size - num_sentinels <= len(SPM_SPECIALS):
            raise ValueError(f"sentencepiece vocab_size {size} leaves no room for pieces after {num_sentinels} "
                             f"sentinels and {len(SPM_SPECIALS)} specials")
        model = SentencePieceTokenizer.train(texts, size - num_sentinels, **train_options)
    return SentinelTokenizer(model, num_sentinels) if num_sentinels else model


def _sentences(texts: Iterable[str]) -> Iterator[str]:
    """The non-empty lines of ``texts``, each at most :data:`_MAX_SENTENCE_BYTES` bytes (cut at a space)."""
    for text in texts:
        for line in text.splitlines():
            while len(line.encode("utf-8")) > _MAX_SENTENCE_BYTES:
                # characters are at most 4 bytes: a quarter of the limit in characters always fits
                window = line[: _MAX_SENTENCE_BYTES // 4]
                cut = window.rfind(" ")
                cut = len(window) if cut <= 0 else cut
                yield line[:cut]
                line = line[cut:]
            if line.strip():
                yield line


def _chain(first: str, rest: Iterator[str]) -> Iterator[str]:
    yield first
    yield from rest


def _last_line(err: BaseException) -> str:
    """SentencePiece's messages start with its source location; the reason is what follows the last ``] ``."""
    text = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
    return text.rsplit("] ", 1)[-1]
