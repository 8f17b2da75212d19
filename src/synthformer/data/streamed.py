"""Datasets read by position from a prepared corpus (memory-mapped): nothing is held per example, so memory does
not grow with the corpus.

:class:`StreamBlockDataset` cuts a token stream into LM blocks; :class:`PairsDataset` reads (source, target) pairs
of the prepared ``pairs`` layout. Each sets ``lazy_order = True``, which asks
:class:`~synthformer.train.BatchStream` for its O(1)-memory epoch order, and has no ``lengths`` (a streamed corpus
is not bucketed by length). Span corruption over a stream is
:class:`~synthformer.data.span_corruption.SpanCorruptionDataset` given the stream.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset

from synthformer.data.batching import LengthReport, Seq2SeqCollator, check_overflow, collate_lm, item_index
from synthformer.data.span_corruption import TokenSlices

__all__ = ["DecodedPairs", "PairsDataset", "StreamBlockDataset"]

logger = logging.getLogger(__name__)


class StreamBlockDataset(Dataset[dict[str, Tensor]]):
    """Contiguous blocks of a token stream for next-token prediction, read when indexed: the semantics of
    :class:`~synthformer.data.LMBlockDataset` (block ``i`` is tokens ``[i * stride, i * stride + block_size + 1)``;
    ``input_ids`` = its first ``block_size``, ``labels`` = its last; the tail that fills no block is unused).

    Args:
        stream: the split's tokens (``len()`` and ``slice(start, stop)``).
        block_size: the model's context length L.
        stride: step between block starts (default ``block_size``).
    """

    lazy_order = True

    def __init__(self, stream: TokenSlices, block_size: int, stride: int | None = None) -> None:
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
        self.stride = block_size if stride is None else stride
        if self.stride < 1:
            raise ValueError(f"stride must be >= 1, got {self.stride}")
        n = len(stream)
        if n < block_size + 1:
            raise ValueError(f"{n} tokens are fewer than block_size + 1 = {block_size + 1}")
        self.stream = stream
        self.block_size = block_size
        self._len = (n - block_size - 1) // self.stride + 1
        unused = n - ((self._len - 1) * self.stride + block_size + 1)
        if unused:
            logger.info("LM blocks: %d of %d tokens at the end do not fill a block and are unused", unused, n)

    @property
    def num_tokens(self) -> int:
        """Tokens in the stream."""
        return len(self.stream)

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, index: int) -> dict[str, Tensor]:
        index = item_index(index, self._len, "block")
        start = index * self.stride
        block = torch.from_numpy(np.asarray(self.stream.slice(start, start + self.block_size + 1), dtype=np.int64))
        return {"input_ids": block[:-1], "labels": block[1:]}

    @staticmethod
    def collate(batch: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
        """See :func:`~synthformer.data.batching.collate_lm`."""
        return collate_lm(batch)


class PairsDataset(Dataset[dict[str, Tensor]]):
    """(source, target) pairs of prepared splits of the ``pairs`` layout (one or several, back to back), framed
    when read as :class:`~synthformer.data.Seq2SeqDataset` frames them: ``src_ids`` = source + ``<eos>``,
    ``tgt_ids`` = ``<bos>`` + target, ``labels`` = target + ``<eos>``, cut to the limits by ``overflow``.

    The lengths are read once from the shards' offsets (numpy, one shard at a time) to count what ``overflow``
    truncates or skips (:attr:`length_report`); with ``"skip"`` the kept examples' positions are an int64 array,
    else nothing is held per example. ``indices`` are the positions (over all the splits) of the examples kept.

    Args:
        splits: ``PreparedSplit`` objects with fields ``source`` and ``target``.
        bos_id, eos_id, pad_id: the tokenizer's special ids.
        max_src_len: the longest ``src_ids`` (eos included).
        max_tgt_len: the longest ``tgt_ids`` (target tokens + 1).
        overflow: ``"truncate"`` (None: the same), ``"skip"`` or ``"error"``.
    """

    lazy_order = True
    #: What scoring reads back, set by the task type: the decoded references, or the dev examples with labels.
    raw_examples: Sequence[Any] | None = None

    def __init__(self, splits: Sequence[Any], *, bos_id: int, eos_id: int, pad_id: int, max_src_len: int,
                 max_tgt_len: int, overflow: str | None = "truncate") -> None:
        self.overflow = check_overflow(overflow)
        self.splits = list(splits)
        self.bos_id, self.eos_id = bos_id, eos_id
        self.max_src_len, self.max_full = max_src_len, max_tgt_len + 1  # the full target: bos + y + eos
        if max_src_len < 2 or self.max_full < 3:
            raise ValueError(f"max lengths {max_src_len} / {max_tgt_len} leave no room for text next to the "
                             "special tokens")
        self.starts = np.cumsum([0, *(len(s) for s in self.splits)]).astype(np.int64)
        self.length_report = LengthReport(total=int(self.starts[-1]))
        kept = [] if self.overflow == "skip" else None
        for k, split in enumerate(self.splits):
            first = int(self.starts[k])
            for shard in range(len(split.shards)):
                src = np.diff(np.asarray(split.shard_arrays(shard, "source")[1])) + 1  # + eos
                full = np.diff(np.asarray(split.shard_arrays(shard, "target")[1])) + 2  # + bos, eos
                long = (src > max_src_len) | (full > self.max_full)
                if self.overflow == "error" and long.any():
                    i = int(np.flatnonzero(long)[0])
                    raise ValueError(f"{split.name} example {first + i}: {int(src[i])} / {int(full[i]) - 1} tokens "
                                     f"exceed the maximum lengths {max_src_len} / {max_tgt_len} (pass "
                                     "overflow='truncate' or 'skip')")
                if kept is not None:
                    kept.append(first + np.flatnonzero(~long))
                    self.length_report.skipped += int(long.sum())
                else:
                    self.length_report.truncated += int(long.sum())
                first += len(src)
        self.kept = None if kept is None else np.concatenate([np.zeros(0, np.int64), *kept]).astype(np.int64)
        self.indices: Sequence[int] = self.kept if self.kept is not None else range(int(self.starts[-1]))
        self.length_report.log("prepared pairs")
        self._collator = Seq2SeqCollator(pad_id, pad_id)

    def __len__(self) -> int:
        return len(self.indices)

    def texts(self, position: int) -> tuple[np.ndarray, np.ndarray]:
        """The stored (source, target) ids of the example at ``position`` over all the splits (unframed)."""
        k = int(np.searchsorted(self.starts, position, side="right")) - 1
        doc = position - int(self.starts[k])
        return self.splits[k].document(doc, "source"), self.splits[k].document(doc, "target")

    def source_ids(self, source: np.ndarray) -> np.ndarray:
        """``src_ids`` (S,) of a stored source: its first ``max_src_len - 1`` ids and ``<eos>`` (a subclass fits
        sources its own way, with the same lengths: the length report counts ``len(source) + 1 > max_src_len``)."""
        return np.append(np.asarray(source[: self.max_src_len - 1], dtype=np.int64), self.eos_id)

    def __getitem__(self, index: int) -> dict[str, Tensor]:
        source, target = self.texts(int(self.indices[index]))
        src = self.source_ids(source)
        full = np.concatenate([[self.bos_id], np.asarray(target[: self.max_full - 2], dtype=np.int64),
                               [self.eos_id]]).astype(np.int64)
        full_t = torch.from_numpy(full)
        return {"src_ids": torch.from_numpy(src), "tgt_ids": full_t[:-1], "labels": full_t[1:]}

    def collate(self, batch: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
        """See :class:`~synthformer.data.batching.Seq2SeqCollator`."""
        return self._collator(batch)


class DecodedPairs(Sequence[tuple[str, str]]):
    """The (source, target) texts of a :class:`PairsDataset`'s stored examples, decoded when indexed (by position over
    all its splits, as ``dataset.indices`` counts): the references a decoding evaluation scores against."""

    def __init__(self, dataset: PairsDataset, tokenizer: Any) -> None:
        self.dataset, self.tokenizer = dataset, tokenizer

    def __len__(self) -> int:
        return int(self.dataset.starts[-1])

    def __getitem__(self, position: int) -> tuple[str, str]:  # type: ignore[override]
        source, target = self.dataset.texts(int(position))
        return self.tokenizer.decode(source.tolist()), self.tokenizer.decode(target.tolist())
