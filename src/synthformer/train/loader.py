"""Deterministic, resumable batch streams for training and evaluation.

The position of a training stream is a single integer, the number of batches this process has consumed.
Together with the seed it fixes exactly which examples come next, so a resumed run continues the data
stream where the checkpoint left it, without storing any sampler state.

Two kinds of ``data`` are accepted:

* a map-style dataset (``__len__`` + ``__getitem__``: a ``torch.utils.data.Dataset``, a list of examples):
  each epoch is a fresh order of the examples, a function of ``(seed, epoch)`` only
  (:func:`~synthformer.common.order.epoch_order`). Global batch ``k`` of an epoch is the examples at positions
  ``[k G, (k + 1) G)`` of that order, ``G = batch_size * world_size``; process ``r`` takes positions
  ``k G + j world_size + r`` (``j < batch_size``). So the sequence of global batches does not depend on the
  number of processes: a run checkpointed on 2 processes and resumed on 1 with the same global batch continues
  it. The last incomplete global batch of an epoch is dropped (every step and every process sees full batches).
  Resuming is O(1): the position maps to (epoch, offset). Batches are computed lazily, one at a time, so memory is
  O(batch) with the lazy order (datasets over 2**22 examples, or with a true ``lazy_order`` attribute: the
  prepared-corpus datasets); below that the order is the permutation drawn whole, as it always was.
  A dataset with a ``set_epoch(epoch)`` method is told the epoch before each epoch's DataLoader is created
  (DataLoader workers fork after it): span corruption draws fresh noise, the text-to-text mixture new examples.
* any other iterable (a ``DataLoader``, an ``IterableDataset`` yielding batches, ...): it must yield ready
  batches, in the same order each time it is iterated and on every process. Process ``r`` takes batches
  ``r, r + world, ...``; an epoch ends when the iterable is exhausted and it is then iterated again. Resuming
  fast-forwards by fetching and discarding batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from synthformer.common import Order, epoch_order

__all__ = ["BatchStream", "RankBatches", "eval_batches", "is_map_style"]


def is_map_style(data: Any) -> bool:
    """True for datasets indexed by position (examples), False for iterables of ready batches."""
    if isinstance(data, (DataLoader, IterableDataset)):
        return False
    return hasattr(data, "__len__") and hasattr(data, "__getitem__")


def _loader(data: Any, batches: Iterable[list[int]], collate_fn: Callable | None, num_workers: int,
            seed: int) -> DataLoader:
    # An explicit generator keeps DataLoader from drawing its worker base seed from the *global* torch RNG:
    # otherwise creating the loader would shift the dropout stream, and a resumed run (which creates it at a
    # different moment) would diverge from an uninterrupted one.
    gen = torch.Generator()
    gen.manual_seed(seed)
    return DataLoader(
        data, batch_sampler=batches, collate_fn=collate_fn, num_workers=num_workers, generator=gen,
    )


class RankBatches:
    """The index batches of one process in one epoch, from batch ``first`` on, computed when iterated (a
    ``batch_sampler`` for ``DataLoader``): batch ``k`` is ``order`` at ``k G + j world_size + rank``,
    ``j < batch_size``, ``G = batch_size * world_size``."""

    def __init__(self, order: Order, batch_size: int, rank: int, world_size: int, first: int, count: int) -> None:
        self.order, self.batch_size, self.rank, self.world_size = order, batch_size, rank, world_size
        self.first, self.count = first, count

    def __len__(self) -> int:
        return max(self.count - self.first, 0)

    def batch(self, k: int) -> list[int]:
        """The example indices of this process's batch ``k`` of the epoch."""
        global_batch = self.batch_size * self.world_size
        positions = k * global_batch + np.arange(self.batch_size) * self.world_size + self.rank
        return self.order.take(positions).tolist()

    def __iter__(self) -> Iterator[list[int]]:
        for k in range(self.first, self.count):
            yield self.batch(k)


class BatchStream(Iterator[Any]):
    """An endless stream of training batches for one process, positioned at ``start`` consumed batches.

    Args:
        data: map-style dataset of examples, or an iterable of batches (see the module docstring).
        batch_size: examples per batch (map-style only).
        seed: fixes the permutation of every epoch (map-style only).
        rank, world_size: this process's shard.
        collate_fn: turns a list of examples into a batch (map-style; default ``default_collate``).
        num_workers: DataLoader workers (map-style).
        start: number of batches this process already consumed (resume position).
        shuffle: permute each epoch (map-style).
    """

    def __init__(
        self,
        data: Any,
        *,
        batch_size: int,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        num_workers: int = 0,
        start: int = 0,
        shuffle: bool = True,
    ) -> None:
        self.data = data
        self.batch_size = batch_size
        self.seed = seed
        self.rank = rank
        self.world_size = world_size
        self.collate_fn = collate_fn
        self.num_workers = num_workers
        self.shuffle = shuffle
        self.map_style = is_map_style(data)
        self.position = 0
        self._it: Iterator[Any] | None = None
        self._epoch = 0
        if self.map_style:
            # full global batches only: the same count on every process, and for any process count of one G
            self.batches_per_epoch = len(data) // (batch_size * world_size)
            if self.batches_per_epoch == 0:
                fits = len(data) // world_size
                hint = f"a train.batch_size of at most {fits}, or more data" if fits else "more data"
                raise ValueError(
                    f"train data has {len(data)} examples: too few for one batch of {batch_size} "
                    f"(train.batch_size) on each of {world_size} process(es); use {hint}"
                )
            self._epoch, offset = divmod(start, self.batches_per_epoch)
            self._start_epoch(offset)
            self.position = start
        else:
            self.batches_per_epoch = None
            # Fast-forward eagerly (now, before the caller restores its RNG state), so that any global RNG
            # the iterable consumes while being re-iterated is consumed before the restore, as it was
            # before the checkpoint in the original run.
            for _ in range(start):
                next(self)
            assert self.position == start

    @property
    def epoch(self) -> int:
        """The current epoch (0-based)."""
        return self._epoch

    # -- map-style -------------------------------------------------------------------------------------------
    def epoch_order(self, epoch: int) -> Order:
        """The order of the examples in ``epoch`` (the same on every process, whatever their number)."""
        return epoch_order(len(self.data), self.seed, epoch, shuffle=self.shuffle,
                           lazy=True if getattr(self.data, "lazy_order", False) else None)

    def epoch_batches(self, epoch: int, first: int = 0) -> RankBatches:
        """Index batches of this process for ``epoch`` from batch ``first`` on (deterministic in seed, epoch,
        rank and world size; computed when iterated)."""
        return RankBatches(self.epoch_order(epoch), self.batch_size, self.rank, self.world_size, first,
                           self.batches_per_epoch)

    def _start_epoch(self, offset: int = 0) -> None:
        set_epoch = getattr(self.data, "set_epoch", None)
        if callable(set_epoch):  # before the DataLoader (and its workers, which fork) exists
            set_epoch(self._epoch)
        batches = self.epoch_batches(self._epoch, offset)
        loader_seed = int(np.random.default_rng([self.seed, self._epoch, self.rank, 1]).integers(2**62))
        self._it = iter(_loader(self.data, batches, self.collate_fn, self.num_workers, loader_seed))

    # -- iterable of batches -----------------------------------------------------------------------------------
    def _iterable_batches(self) -> Iterator[Any]:
        while True:
            took_any = False
            group: list[Any] = []
            for batch in self.data:
                group.append(batch)
                if len(group) == self.world_size:
                    took_any = True
                    yield group[self.rank]
                    group = []
            # An incomplete trailing group is dropped so that every process takes the same number of steps.
            if not took_any:
                raise ValueError(
                    "train data yielded fewer batches than there are processes (or nothing on re-iteration): "
                    "pass a re-iterable such as a list-backed Dataset or a DataLoader, not a one-shot iterator"
                )
            self._epoch += 1

    def __next__(self) -> Any:
        if self.map_style:
            if self._it is None:  # closed earlier: reopen at the current position
                self._epoch, offset = divmod(self.position, self.batches_per_epoch)
                self._start_epoch(offset)
            try:
                batch = next(self._it)
            except StopIteration:
                self._epoch += 1
                self._start_epoch()
                batch = next(self._it)
        else:
            if self._it is None:  # first use, or closed earlier: (re)start and fast-forward to the position
                self._epoch = 0
                self._it = self._iterable_batches()
                for _ in range(self.position):
                    next(self._it)
            batch = next(self._it)
        self.position += 1
        return batch

    def close(self) -> None:
        """Release the underlying iterator (and DataLoader workers)."""
        it, self._it = self._it, None
        if it is not None and hasattr(it, "close"):
            it.close()
        if it is not None and hasattr(it, "_shutdown_workers"):
            it._shutdown_workers()


def eval_batches(
    data: Any,
    *,
    batch_size: int,
    rank: int = 0,
    world_size: int = 1,
    collate_fn: Callable[[list[Any]], Any] | None = None,
    num_workers: int = 0,
) -> Iterable[Any]:
    """One pass over evaluation data, in order, sharded across processes without dropping anything.

    Map-style data: process ``r`` takes examples ``r, r + world, ...`` (the last batch may be smaller).
    Iterables of batches: process ``r`` takes batches ``r, r + world, ...``.
    """
    if is_map_style(data):
        mine = list(range(rank, len(data), world_size))
        batches = [mine[i : i + batch_size] for i in range(0, len(mine), batch_size)]
        return _loader(data, batches, collate_fn, num_workers, seed=0)
    return (b for i, b in enumerate(data) if i % world_size == rank)
