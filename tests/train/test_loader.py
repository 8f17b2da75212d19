"""Batch streams: deterministic order from the seed, disjoint shards, exact resume positions."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader
from toymodels import CountingDataset

from synthformer.train import BatchStream, eval_batches


def take(stream: BatchStream, n: int) -> list[torch.Tensor]:
    return [next(stream)["input_ids"] for _ in range(n)]


def test_order_depends_only_on_the_seed():
    data = CountingDataset(20)
    a = take(BatchStream(data, batch_size=4, seed=1), 12)  # 5 batches per epoch: crosses two epochs
    b = take(BatchStream(data, batch_size=4, seed=1), 12)
    c = take(BatchStream(data, batch_size=4, seed=2), 12)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(torch.equal(x, y) for x, y in zip(a, c, strict=True))
    assert not torch.equal(torch.cat(a[:5]), torch.cat(a[5:10]))  # each epoch is a new permutation
    assert sorted(torch.cat(a[:5])[:, 0].tolist()) == sorted(data.seqs[:, 0].tolist())  # ... of all examples


@pytest.mark.parametrize("start", [0, 3, 5, 7, 11])
def test_starting_at_a_position_equals_skipping(start):
    data = CountingDataset(20)
    full = take(BatchStream(data, batch_size=4, seed=1), 14)
    resumed = BatchStream(data, batch_size=4, seed=1, start=start)
    assert resumed.epoch == start // 5
    assert all(torch.equal(x, y) for x, y in zip(full[start:], take(resumed, 14 - start), strict=True))


def test_shards_are_disjoint_and_equal_in_size():
    data = [{"input_ids": torch.tensor([i])} for i in range(21)]  # a list of examples is a map-style dataset
    # 21 // 2 = 10 examples per process and epoch, 2 batches of 5; one example sits out each epoch.
    seen = [torch.cat(take(BatchStream(data, batch_size=5, seed=0, rank=r, world_size=2), 2)).flatten().tolist()
            for r in (0, 1)]
    assert len(seen[0]) == len(seen[1]) == 10
    assert not set(seen[0]) & set(seen[1]) and len(set(seen[0]) | set(seen[1])) == 20


def test_iterable_of_batches_and_reopening():
    loader = DataLoader(CountingDataset(12), batch_size=4, shuffle=False)  # 3 batches per pass
    stream = BatchStream(loader, batch_size=4)
    first = take(stream, 5)
    assert torch.equal(first[3], first[0])  # the second pass starts over
    stream.close()
    assert torch.equal(next(stream)["input_ids"], first[2])  # reopened at position 5: batch 3 of pass 2
    rank1 = BatchStream(loader, batch_size=4, rank=1, world_size=2)
    assert torch.equal(next(rank1)["input_ids"], first[1])  # process 1 takes batches 1, 3, ...
    with pytest.raises(ValueError, match="one-shot"):
        next(BatchStream(iter([{"input_ids": torch.zeros(1)}]), batch_size=1, world_size=2))


def test_eval_batches_cover_everything_once():
    data = CountingDataset(11)
    parts = [torch.cat([b["input_ids"] for b in eval_batches(data, batch_size=4, rank=r, world_size=2)])
             for r in (0, 1)]
    assert parts[0].shape[0] + parts[1].shape[0] == 11
    assert torch.equal(parts[0], data.seqs[0:11:2, :-1]) and torch.equal(parts[1], data.seqs[1:11:2, :-1])
