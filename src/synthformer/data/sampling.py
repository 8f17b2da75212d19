"""Length-bucketed batch sampling: :class:`BucketBatchSampler` (used by ``build_dataloader`` in
:mod:`synthformer.data.batching`, which re-exports it)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import torch
from torch.utils.data import Sampler

__all__ = ["BucketBatchSampler"]


class BucketBatchSampler(Sampler[list[int]]):
    """Batches of indices with similar lengths, to waste little compute on padding.

    Each epoch: shuffle all indices (seeded by ``seed + epoch``), cut them into buckets of
    ``bucket_size`` (default ``100 * batch_size``), sort each bucket by length, cut it into batches and
    shuffle the order of all batches. Without ``shuffle`` the indices are sorted by length once.

    Args:
        lengths: one length per dataset item (e.g. ``dataset.lengths``).
        batch_size: items per batch.
        shuffle: randomise as above (call :meth:`set_epoch` each epoch for a new order).
        seed: base seed.
        bucket_size: items per sorting bucket.
        drop_last: drop a final batch smaller than ``batch_size`` in each bucket.
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, shuffle: bool = True, seed: int = 0,
                 bucket_size: int | None = None, drop_last: bool = False) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.lengths = list(lengths)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.bucket_size = bucket_size if bucket_size is not None else 100 * batch_size
        if self.bucket_size < batch_size:
            raise ValueError(f"bucket_size {self.bucket_size} is smaller than batch_size {batch_size}")
        self.drop_last = drop_last
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Use the order of ``epoch`` on the next iteration."""
        self.epoch = epoch

    def _batches(self) -> list[list[int]]:
        n = len(self.lengths)
        gen = torch.Generator().manual_seed(self.seed + self.epoch)
        if self.shuffle:
            order = torch.randperm(n, generator=gen).tolist()
            buckets = [order[i : i + self.bucket_size] for i in range(0, n, self.bucket_size)]
        else:
            buckets = [list(range(n))]
        batches: list[list[int]] = []
        for bucket in buckets:
            bucket.sort(key=lambda i: self.lengths[i])
            for i in range(0, len(bucket), self.batch_size):
                batch = bucket[i : i + self.batch_size]
                if len(batch) == self.batch_size or not self.drop_last:
                    batches.append(batch)
        if self.shuffle:
            perm = torch.randperm(len(batches), generator=gen).tolist()
            batches = [batches[i] for i in perm]
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self._batches())

    def __len__(self) -> int:
        n = len(self.lengths)
        sizes = [min(self.bucket_size, n - i) for i in range(0, n, self.bucket_size)] if self.shuffle else [n]
        rounding = math.floor if self.drop_last else math.ceil
        return sum(rounding(size / self.batch_size) for size in sizes)
