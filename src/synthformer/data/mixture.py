"""T5's examples-proportional mixture with a cap, drawn on the fly from the whole of every task.

Raffel et al. (2020, section 3.5.2): task ``m`` with ``n_m`` examples is sampled at the rate
``min(n_m, K) / sum_j min(n_j, K)``. Here an epoch of the mixture has ``min(n_m, K)`` *slots* of task ``m``
(:class:`MixtureSchedule`); which example fills a slot changes from epoch to epoch:

* a task at or below the cap fills its slots with all its examples, every epoch;
* a larger task walks a seeded permutation of *all* its examples across epochs: the slots of epoch ``e`` take
  positions ``e * share ... (e + 1) * share - 1`` (mod ``n_m``) of that permutation, so a task of 400k examples
  under a cap of 65,536 shows new examples in every epoch and all of them every 6 or 7 epochs.

The trainer shuffles the slots of an epoch (its seeded order) and tells the dataset the epoch
(:meth:`MixtureDataset.set_epoch`), so over any stretch of training each task appears at its rate. The same schedule
serves examples held in memory and a prepared corpus: the per-task permutation is the O(1)-memory one of
:mod:`synthformer.common.order` for large tasks, so nothing is held per example.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from torch.utils.data import Dataset

from synthformer.common import Order, seeded_order

__all__ = ["MixtureDataset", "MixtureSchedule", "mixing_rates"]


def mixing_rates(sizes: Sequence[int], cap: int) -> list[float]:
    """T5's examples-proportional rates with a cap: ``min(n_m, cap) / sum_j min(n_j, cap)``."""
    shares = [min(n, cap) for n in sizes]
    total = sum(shares)
    return [s / total for s in shares]


class MixtureSchedule:
    """Which example of which task fills each slot of an epoch (see the module docstring).

    Args:
        sizes: examples per task (each >= 1).
        cap: T5's ``K``.
        seed: fixes each capped task's permutation (task ``m``: the key ``[seed, 1_000_003, m]``).
        lazy: the O(1)-memory permutation for every capped task (None: only above a few million examples).
    """

    def __init__(self, sizes: Sequence[int], cap: int, seed: int = 0, lazy: bool | None = None) -> None:
        if cap < 1:
            raise ValueError(f"the mixing cap must be a positive integer, got {cap!r}")
        if not sizes or min(sizes) < 1:
            raise ValueError(f"every task of a mixture needs at least one example, got sizes {list(sizes)}")
        self.sizes = [int(n) for n in sizes]
        self.cap = cap
        self.shares = [min(n, cap) for n in self.sizes]
        self.offsets = np.cumsum([0, *self.shares])  # (tasks + 1,) first slot of each task
        self.rates = mixing_rates(self.sizes, cap)
        # a fixed salt keeps these keys apart from the epoch orders' [seed, epoch]
        self._orders: list[Order | None] = [
            seeded_order(n, [seed, 1_000_003, m], lazy=lazy) if n > cap else None for m, n in enumerate(self.sizes)]

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def locate(self, slot: int, epoch: int) -> tuple[int, int]:
        """(task, example index within the task) of ``slot`` in ``epoch``."""
        if not 0 <= slot < len(self):
            raise IndexError(f"slot {slot} out of range [0, {len(self)})")
        task = int(np.searchsorted(self.offsets, slot, side="right")) - 1
        within = slot - int(self.offsets[task])
        order = self._orders[task]
        if order is None:  # the whole task, every epoch
            return task, within
        share, n = self.shares[task], self.sizes[task]
        return task, int(order.take([(epoch * share + within) % n])[0])


class MixtureDataset(Dataset[Any]):
    """The slots of a :class:`MixtureSchedule` over a dataset holding every task's examples.

    Args:
        base: the examples of all tasks (any map-style dataset with ``collate``).
        members: for each task, the ``base`` indices of its examples (a ``range`` or an int array).
        schedule: the mixture (its sizes must be the members' lengths).
    """

    def __init__(self, base: Any, members: Sequence[Sequence[int] | np.ndarray], schedule: MixtureSchedule) -> None:
        if [len(m) for m in members] != schedule.sizes:
            raise ValueError(f"task sizes {[len(m) for m in members]} differ from the schedule's {schedule.sizes}")
        self.base, self.members, self.schedule = base, members, schedule
        self.epoch = 0
        self.lazy_order = bool(getattr(base, "lazy_order", False))
        if hasattr(base, "length_report"):
            self.length_report = base.length_report

    def set_epoch(self, epoch: int) -> None:
        """Fill the slots with the examples of ``epoch`` (the trainer calls it before each epoch)."""
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.schedule)

    def __getitem__(self, slot: int) -> Any:
        task, within = self.schedule.locate(slot, self.epoch)
        return self.base[int(self.members[task][within])]

    def collate(self, batch: Sequence[Any]) -> Any:
        """The base dataset's collate."""
        return self.base.collate(batch)
