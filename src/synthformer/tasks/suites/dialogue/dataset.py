"""Tokenized dialogue exchanges for an encoder-decoder: (persona + history -> response).

The source is the responder's persona lines, then the history turns oldest first, each segment opened by a
speaker separator: three extra ids of a :class:`~synthformer.data.sentinels.SentinelTokenizer` (the mechanism span
corruption uses for its sentinels), so no text can produce them and every tokenizer kind has them::

    <persona> i like cats. <persona> i am a nurse. <partner> hi ! how are you ? <self> good , you ? <partner> ok

``<persona>`` is sentinel 0, ``<partner>`` (the other speaker) sentinel 1, ``<self>`` (the responder) sentinel 2;
decoded, they read ``<extra_id_0>`` .. ``<extra_id_2>``. The target is the response, framed like
:class:`~synthformer.data.Seq2SeqDataset`'s (``<bos> y <eos>``).

A source longer than ``max_src_len`` (``<eos>`` included) loses its OLDEST history tokens first (the latest turn
matters most for the response), keeping at least half the length for the history when the persona is long; a long
response loses its end. With ``overflow="skip"`` such examples are dropped instead, with ``"error"`` they raise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from synthformer.data import (
    OVERFLOW_POLICIES,
    LengthReport,
    PairsDataset,
    SentinelTokenizer,
    Seq2SeqCollator,
    Seq2SeqItems,
)

from .reader import Exchange

__all__ = ["PARTNER", "PERSONA", "SELF", "SPEAKER_TOKENS", "DialogueDataset", "PreparedDialogueDataset",
           "encode_source", "fit_stored_source"]

#: Sentinel numbers of the speaker separators.
PERSONA, PARTNER, SELF = 0, 1, 2
SPEAKER_TOKENS = 3


def _segments(tokenizer: SentinelTokenizer, exchange: Exchange) -> tuple[list[str], list[int]]:
    """The texts of the source's segments and the separator id before each."""
    texts = list(exchange.persona) + list(exchange.history)
    n = len(exchange.history)
    # the last history turn is the partner's; speakers alternate backwards from it
    tags = [PERSONA] * len(exchange.persona) + [PARTNER if (n - 1 - j) % 2 == 0 else SELF for j in range(n)]
    return texts, [tokenizer.sentinel_id(t) for t in tags]


def _check_tokenizer(tokenizer: SentinelTokenizer) -> None:
    if not isinstance(tokenizer, SentinelTokenizer) or tokenizer.num_sentinels < SPEAKER_TOKENS:
        raise ValueError(f"dialogue data needs a tokenizer with {SPEAKER_TOKENS} speaker separators (sentinels), "
                         f"got {tokenizer!r}")


def _fit(persona: list[int], history: list[int], budget: int) -> tuple[list[int], bool]:
    if len(persona) + len(history) <= budget:
        return persona + history, False
    keep_persona = min(len(persona), budget - min(len(history), budget // 2))
    persona = persona[:keep_persona]
    return persona + history[len(history) - (budget - keep_persona):], True


def encode_source(tokenizer: SentinelTokenizer, exchange: Exchange, max_src_len: int | None,
                  encoded: Sequence[list[int]] | None = None) -> tuple[list[int], bool]:
    """The source ids of ``exchange`` (separators, text, ``<eos>``) fitted to ``max_src_len``, and whether it was
    cut. ``encoded``: the segments' ids when the caller encoded them already (in one batch)."""
    texts, tags = _segments(tokenizer, exchange)
    if encoded is None:
        encoded = tokenizer.encode_batch(texts)
    ids = [[tag, *seg] for tag, seg in zip(tags, encoded, strict=True)]
    n_persona = len(exchange.persona)
    persona = [i for seg in ids[:n_persona] for i in seg]
    history = [i for seg in ids[n_persona:] for i in seg]
    return _fit_with_eos(persona, history, max_src_len, tokenizer.eos_id)


def _fit_with_eos(persona: list[int], history: list[int], max_src_len: int | None,
                  eos_id: int) -> tuple[list[int], bool]:
    budget = None if max_src_len is None else max_src_len - 1
    if budget is None:
        return persona + history + [eos_id], False
    if budget < 1:
        raise ValueError(f"max_src_len {max_src_len} leaves no room for the source next to <eos>")
    fitted, cut = _fit(persona, history, budget)
    return fitted + [eos_id], cut


def fit_stored_source(tokenizer: SentinelTokenizer, ids: Sequence[int], max_src_len: int | None) -> list[int]:
    """:func:`encode_source`'s result from the source it builds without a limit, minus its ``<eos>`` (what a
    prepared corpus stores): the persona segments are the ids before the first ``<partner>`` / ``<self>``
    separator (sentinel ids: no text produces them), the history the rest."""
    history_tags = {tokenizer.sentinel_id(PARTNER), tokenizer.sentinel_id(SELF)}
    ids = [int(i) for i in ids]
    start = next((k for k, i in enumerate(ids) if i in history_tags), len(ids))
    return _fit_with_eos(ids[:start], ids[start:], max_src_len, tokenizer.eos_id)[0]


class DialogueDataset(Seq2SeqItems):
    """Tokenized exchanges (see the module docstring). Item shapes: ``src_ids`` (S,), ``tgt_ids`` (T,) =
    ``<bos> y1 .. yn``, ``labels`` (T,) = ``y1 .. yn <eos>``; ``indices[i]`` is the exchange of item i.

    Args:
        exchanges: the examples.
        tokenizer: a tokenizer with at least :data:`SPEAKER_TOKENS` sentinels (the separators).
        max_src_len: most source ids (``<eos>`` included); None: no limit.
        max_tgt_len: most decoder positions (response tokens + 1); None: no limit.
        overflow: ``"truncate"`` (None too), ``"skip"`` or ``"error"`` for examples that do not fit.
    """

    def __init__(self, exchanges: Sequence[Exchange], tokenizer: SentinelTokenizer, max_src_len: int | None = None,
                 max_tgt_len: int | None = None, overflow: str | None = "truncate") -> None:
        overflow = overflow or "truncate"
        if overflow not in OVERFLOW_POLICIES:
            raise ValueError(f"overflow must be one of {OVERFLOW_POLICIES}, got {overflow!r}")
        _check_tokenizer(tokenizer)
        segments = [_segments(tokenizer, e)[0] for e in exchanges]
        flat = tokenizer.encode_batch([t for texts in segments for t in texts])  # one batch: fast tokenizers
        responses = tokenizer.encode_batch([e.response for e in exchanges])
        self.length_report = LengthReport(total=len(exchanges))
        self._items = []
        self.indices: list[int] = []
        start = 0
        for i, (exchange, texts, response) in enumerate(zip(exchanges, segments, responses, strict=True)):
            encoded, start = flat[start : start + len(texts)], start + len(texts)
            src, src_cut = encode_source(tokenizer, exchange, max_src_len, encoded)
            limit = None if max_tgt_len is None else max_tgt_len - 1  # response tokens besides <eos>
            tgt_cut = limit is not None and len(response) > limit
            if (src_cut or tgt_cut) and overflow != "truncate":
                if overflow == "error":
                    raise ValueError(f"exchange {i} (line {exchange.line}): too long for max_src_len {max_src_len} "
                                     f"/ max_tgt_len {max_tgt_len} (pass overflow='truncate' or 'skip')")
                self.length_report.skipped += 1
                continue
            response = response[:limit] if tgt_cut else response
            full = [tokenizer.bos_id, *response, tokenizer.eos_id]
            self.length_report.truncated += bool(src_cut or tgt_cut)
            self._items.append((torch.tensor(src, dtype=torch.long), torch.tensor(full, dtype=torch.long)))
            self.indices.append(i)
        self.length_report.log("dialogue dataset")
        self.lengths: list[int] = [max(s.numel(), t.numel() - 1) for s, t in self._items]
        self._collator = Seq2SeqCollator(tokenizer.pad_id, tokenizer.pad_id)


class PreparedDialogueDataset(PairsDataset):
    """Exchanges of a prepared corpus (``synthformer prepare``, ``pairs`` layout: ``source`` = the source
    :func:`encode_source` builds without a limit, speaker separators inline and no ``<eos>``; ``target`` = the
    response), read by position: item for item :class:`DialogueDataset`'s items on the same exchanges and
    settings. The source is fitted to ``max_src_len`` when read (:func:`fit_stored_source`), so ``max_len`` stays
    a training setting; the lengths (what ``overflow`` cuts or skips) are :class:`PairsDataset`'s, which equal
    :class:`DialogueDataset`'s: a source is cut when its ids and ``<eos>`` exceed ``max_src_len``.

    Args:
        splits: ``PreparedSplit`` objects with fields ``source`` and ``target``.
        tokenizer: the corpus's tokenizer, with at least :data:`SPEAKER_TOKENS` sentinels.
        max_src_len, max_tgt_len, overflow: as for :class:`DialogueDataset`.
    """

    def __init__(self, splits: Sequence[object], tokenizer: SentinelTokenizer, max_src_len: int, max_tgt_len: int,
                 overflow: str | None = "truncate") -> None:
        _check_tokenizer(tokenizer)
        self.tokenizer = tokenizer
        super().__init__(splits, bos_id=tokenizer.bos_id, eos_id=tokenizer.eos_id, pad_id=tokenizer.pad_id,
                         max_src_len=max_src_len, max_tgt_len=max_tgt_len, overflow=overflow)

    def source_ids(self, source: np.ndarray) -> np.ndarray:
        """``src_ids`` (S,): the stored source fitted as :func:`encode_source` fits it, then ``<eos>``."""
        return np.asarray(fit_stored_source(self.tokenizer, source.tolist(), self.max_src_len), dtype=np.int64)
