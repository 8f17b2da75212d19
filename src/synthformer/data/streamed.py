"""Datasets read by position from a token stream (a prepared corpus's memory-mapped ``TokenStream``): nothing is
held per example, so memory does not grow with the corpus.

Each sets ``lazy_order = True``, which asks :class:`~synthformer.train.BatchStream` for its O(1)-memory epoch order,
and has no ``lengths`` (a streamed corpus is not bucketed by length). Span corruption over a stream is
:class:`~synthformer.data.span_corruption.SpanCorruptionDataset` given the stream.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset

from synthformer.data.batching import collate_lm
from synthformer.data.span_corruption import TokenSlices

__all__ = ["StreamBlockDataset"]

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
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(f"block {index} out of range [0, {self._len})")
        start = index * self.stride
        block = torch.from_numpy(np.asarray(self.stream.slice(start, start + self.block_size + 1), dtype=np.int64))
        return {"input_ids": block[:-1], "labels": block[1:]}

    @staticmethod
    def collate(batch: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
        """See :func:`~synthformer.data.batching.collate_lm`."""
        return collate_lm(batch)
