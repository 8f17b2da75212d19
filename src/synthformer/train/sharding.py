"""Evaluation shared across processes: which part of a validation sample this process evaluates, and gathering.

Under ``torchrun`` / ``accelerate launch`` every process runs the periodic evaluation. The validation *sample*
(which examples are scored) is defined without the number of processes: it is the sample one process would
evaluate with the same config. An :class:`EvalShard` gives each process a contiguous, disjoint part of it
(:meth:`EvalShard.part`); the partial results are then gathered in rank order (:meth:`EvalShard.sum` for sums of
losses and counts, :meth:`EvalShard.concat` for lists such as decoded hypotheses), so every process ends with the
metrics of the whole sample: the same on 1 or N processes up to the order of float sums, and decoding-based
metrics N times faster.

With one process (``EvalShard()``, the default everywhere) nothing is split or gathered: the code paths and the
numbers are exactly the single-process ones.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch.distributed as dist

__all__ = ["EvalShard", "accepts_shard"]

T = TypeVar("T")


@dataclass(frozen=True)
class EvalShard:
    """This process's share of an evaluation: ``rank`` of ``world_size`` processes.

    Every process must call the gathering methods (:meth:`gather`, :meth:`concat`, :meth:`sum`) the same number of
    times in the same order: they are collectives (``torch.distributed.all_gather_object``) when
    ``world_size > 1``, and return their argument unchanged otherwise.
    """

    rank: int = 0
    world_size: int = 1

    def __post_init__(self) -> None:
        if self.world_size < 1 or not 0 <= self.rank < self.world_size:
            raise ValueError(f"EvalShard: rank {self.rank} of world_size {self.world_size} is not a process")

    @classmethod
    def current(cls) -> EvalShard:
        """The shard of this process in the initialised default process group (one process without one)."""
        if dist.is_available() and dist.is_initialized():
            return cls(dist.get_rank(), dist.get_world_size())
        return cls()

    @property
    def whole(self) -> bool:
        """True with one process: nothing is split or gathered."""
        return self.world_size == 1

    def bounds(self, n: int) -> tuple[int, int]:
        """``(start, stop)`` of this process's contiguous part of ``n`` items: ``[n * rank // world_size,
        n * (rank + 1) // world_size)``, so parts differ by at most one item and together cover ``range(n)`` in
        order."""
        return n * self.rank // self.world_size, n * (self.rank + 1) // self.world_size

    def part(self, items: Sequence[T]) -> Sequence[T]:
        """This process's contiguous part of ``items`` (all of them with one process)."""
        if self.whole:
            return items
        start, stop = self.bounds(len(items))
        return items[start:stop]

    def gather(self, obj: Any) -> list[Any]:
        """``obj`` of every process, in rank order (collective)."""
        if self.whole:
            return [obj]
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def concat(self, items: list[T]) -> list[T]:
        """The lists of every process concatenated in rank order (collective): the parts of :meth:`part` back in
        the order of the whole."""
        if self.whole:
            return items
        return [item for part in self.gather(list(items)) for item in part]

    def sum(self, *values: float) -> tuple[float, ...]:
        """Each value summed over the processes, in rank order (collective; the values of this process alone with
        one process). Python floats: no device or dtype to agree on between backends."""
        if self.whole:
            return values
        parts = self.gather([float(v) for v in values])
        return tuple(sum(p[i] for p in parts) for i in range(len(values)))


def accepts_shard(fn: Callable[..., Any]) -> bool:
    """True if ``fn`` takes a ``shard`` keyword (an evaluation that splits its work and gathers the results);
    callables without it are called as before and evaluate everything on every process."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin or C callable: no signature to read
        return False
    return "shard" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
