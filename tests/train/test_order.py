"""The lazy epoch order: a seeded bijection, the same global batches on any number of processes, exact resume,
and the epoch told to datasets that want it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from synthformer.common.order import LAZY_ORDER_MIN, DrawnPermutation, FeistelPermutation, epoch_order
from synthformer.train import BatchStream


class Indexed(torch.utils.data.Dataset):
    """Item i is {"index": i}; ``lazy_order`` as the prepared datasets set it; records ``set_epoch`` calls."""

    def __init__(self, n: int, lazy: bool = True) -> None:
        self.n, self.lazy_order, self.epochs = n, lazy, []

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"index": torch.tensor(i)}

    def set_epoch(self, epoch: int) -> None:
        self.epochs.append(epoch)


def take(stream: BatchStream, n: int) -> list[list[int]]:
    return [next(stream)["index"].tolist() for _ in range(n)]


def test_feistel_order_is_a_bijection_for_every_small_n() -> None:
    for n in range(1, 301):
        assert sorted(FeistelPermutation(n, [n, 5]).take(np.arange(n)).tolist()) == list(range(n))


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 1000, 4099])
def test_feistel_order_is_a_permutation_fixed_by_its_key(n: int) -> None:
    got = FeistelPermutation(n, [3, 1]).take(np.arange(n))
    assert sorted(got.tolist()) == list(range(n))
    assert np.array_equal(got, FeistelPermutation(n, [3, 1]).take(np.arange(n)))
    if n >= 64:  # another key, another order; and no long runs of the identity
        assert not np.array_equal(got, FeistelPermutation(n, [3, 2]).take(np.arange(n)))
        assert (got == np.arange(n)).mean() < 0.05
    # any positions, in any order or shape, map as the whole does
    pos = np.array([[n - 1, 0], [n // 2, n - 1]])
    assert np.array_equal(FeistelPermutation(n, [3, 1]).take(pos), got[pos])


def test_feistel_order_at_c4_scale_needs_no_table() -> None:
    order = FeistelPermutation(365_000_000, [0, 0])
    first = order.take(np.arange(100_000))
    assert len(np.unique(first)) == 100_000 and first.max() < 365_000_000
    assert order.take([12_345])[0] == first[12_345]


def test_small_datasets_keep_the_drawn_permutation_and_large_ones_go_lazy() -> None:
    assert isinstance(epoch_order(1000, 0, 0), DrawnPermutation)  # existing seeded results keep their numbers
    assert isinstance(epoch_order(LAZY_ORDER_MIN + 1, 0, 0), FeistelPermutation)
    assert isinstance(epoch_order(1000, 0, 0, lazy=True), FeistelPermutation)


@pytest.mark.parametrize("lazy", [True, False])
def test_union_of_two_processes_is_the_one_process_batch_at_every_step(lazy: bool) -> None:
    data = Indexed(50, lazy=lazy)  # G = 8: 6 global batches an epoch, 2 examples sit out
    one = take(BatchStream(data, batch_size=8, seed=4), 15)  # crosses two epoch boundaries
    two = [take(BatchStream(data, batch_size=4, seed=4, rank=r, world_size=2), 15) for r in (0, 1)]
    four = [take(BatchStream(data, batch_size=2, seed=4, rank=r, world_size=4), 15) for r in range(4)]
    for step in range(15):
        assert sorted(two[0][step] + two[1][step]) == sorted(one[step])
        assert sorted(sum((f[step] for f in four), [])) == sorted(one[step])
        assert not set(two[0][step]) & set(two[1][step])
    assert len(set(sum(one[:6], []))) == 48  # an epoch: distinct examples


@pytest.mark.parametrize("start", [0, 1, 5, 6, 7, 13])
def test_resume_from_any_position_and_process_count_continues_the_stream(start: int) -> None:
    data = Indexed(50)
    whole = take(BatchStream(data, batch_size=8, seed=4), 16)
    assert take(BatchStream(data, batch_size=8, seed=4, start=start), 16 - start) == whole[start:]
    # checkpointed on 2 processes after `start` batches each, resumed on 1 with the same global batch
    assert [sorted(b) for b in take(BatchStream(data, batch_size=8, seed=4, start=start), 3)] == \
        [sorted(b) for b in whole[start:start + 3]]
    halves = [take(BatchStream(data, batch_size=4, seed=4, rank=r, world_size=2, start=start), 3) for r in (0, 1)]
    assert [sorted(a + b) for a, b in zip(*halves, strict=True)] == [sorted(b) for b in whole[start:start + 3]]


def test_datasets_are_told_the_epoch_before_its_batches() -> None:
    data = Indexed(16)
    stream = BatchStream(data, batch_size=4, seed=0, start=6)  # 4 batches an epoch: starts in epoch 1
    assert data.epochs == [1]
    take(stream, 3)
    assert data.epochs == [1, 2]
