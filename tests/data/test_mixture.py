"""T5's mixture drawn on the fly: per-task frequencies at the examples-proportional rates with the cap, and a
capped task's examples all shown across epochs."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from synthformer.data.mixture import MixtureDataset, MixtureSchedule, mixing_rates
from synthformer.train import BatchStream

SIZES = [400, 50, 1000, 10]  # tasks above, below and far above the cap, and a tiny one
CAP = 100


class Tagged(torch.utils.data.Dataset):
    """Example i of task m is {"task": m, "index": i} (the examples of all tasks, task after task)."""

    def __init__(self, sizes: list[int]) -> None:
        self.items = [(m, i) for m, n in enumerate(sizes) for i in range(n)]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, k: int) -> dict[str, torch.Tensor]:
        return {"task": torch.tensor(self.items[k][0]), "index": torch.tensor(self.items[k][1])}

    @staticmethod
    def collate(batch):
        return torch.utils.data.default_collate(batch)


def _dataset(lazy: bool | None = None) -> MixtureDataset:
    starts = np.cumsum([0, *SIZES])
    members = [range(starts[m], starts[m + 1]) for m in range(len(SIZES))]
    return MixtureDataset(Tagged(SIZES), members, MixtureSchedule(SIZES, CAP, seed=3, lazy=lazy))


def test_rates_are_t5s_formula() -> None:
    assert mixing_rates(SIZES, CAP) == pytest.approx([100 / 260, 50 / 260, 100 / 260, 10 / 260])
    assert len(_dataset()) == 260


@pytest.mark.parametrize("lazy", [False, True], ids=["in-memory", "prepared"])
def test_frequencies_over_many_draws_match_the_rates(lazy: bool) -> None:
    """16,000 examples drawn by the trainer's stream (1,000 batches of 16, about 62 epochs of 260 slots): each
    task's frequency is within 4 binomial standard deviations of min(n_m, K) / sum_j min(n_j, K) (at most 0.015;
    the per-epoch quotas keep the real deviation below one partial epoch's, 140 / 16,000 = 0.009)."""
    data = _dataset(lazy)
    stream = BatchStream(data, batch_size=16, seed=11)
    tasks = torch.cat([next(stream)["task"] for _ in range(1000)]).tolist()
    counts, total = Counter(tasks), len(tasks)
    for m, rate in enumerate(mixing_rates(SIZES, CAP)):
        tolerance = 4 * (rate * (1 - rate) / total) ** 0.5
        assert abs(counts[m] / total - rate) <= tolerance, (m, counts[m] / total, rate)


@pytest.mark.parametrize("lazy", [False, True], ids=["in-memory", "prepared"])
def test_a_capped_task_shows_new_examples_every_epoch(lazy: bool) -> None:
    data = _dataset(lazy)
    shown = []
    for epoch in range(5):
        data.set_epoch(epoch)
        items = [data[s] for s in range(len(data))]
        by_task = [[int(x["index"]) for x in items if int(x["task"]) == m] for m in range(len(SIZES))]
        assert [len(b) for b in by_task] == [min(n, CAP) for n in SIZES]  # exact quotas every epoch
        assert all(len(set(b)) == len(b) for b in by_task)  # no example twice in an epoch
        assert sorted(by_task[1]) == list(range(50)) and sorted(by_task[3]) == list(range(10))  # uncapped: all
        shown.append(by_task)
    assert set(shown[0][0]).isdisjoint(shown[1][0])  # a capped task walks on ...
    assert sorted(sum((s[0] for s in shown[:4]), [])) == list(range(400))  # ... through all its examples
    assert shown[4][0] == shown[0][0]  # and comes round again
    assert len(set(sum((s[2] for s in shown), []))) == 500  # 5 epochs x 100 of the 1000


def test_the_schedule_refuses_empty_tasks_and_a_bad_cap() -> None:
    with pytest.raises(ValueError, match="at least one example"):
        MixtureSchedule([3, 0], 2)
    with pytest.raises(ValueError, match="positive integer"):
        MixtureSchedule([3], 0)
