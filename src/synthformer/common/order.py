"""Seeded orders of ``[0, n)`` that cost O(1) memory: a keyed Feistel bijection evaluated lazily.

An epoch of a map-style dataset is a permutation of its example indices. Drawing it whole
(``np.random.permutation(n)``) holds ``n`` int64s: 0.5 GB for C4's 365 M documents' worth of pieces, in every
process. :class:`FeistelPermutation` instead computes ``perm(i)`` for any array of positions ``i`` on demand:

* a balanced Feistel network on ``2h`` bits (``4**h >= n``, so the domain is less than ``4 n``) with ``ROUNDS``
  rounds, each round ``L, R -> R, L xor F(R, key_r)`` with ``F`` a 64-bit integer mix (splitmix64's finaliser)
  cut to ``h`` bits: a bijection of ``[0, 4**h)`` whatever ``F`` is;
* *cycle walking*: a position mapped outside ``[0, n)`` is mapped again until it lands inside. Because the
  network is a bijection of the larger domain, this is a bijection of ``[0, n)`` (each cycle of the big
  permutation, restricted to the points below ``n``, is a cycle of the small one); it takes fewer than 4 rounds
  of the network on average.

The round keys come from ``np.random.default_rng(key)``, so the order is a function of the key only (for an
epoch: the seed and the epoch), not of the process that evaluates it or of how many processes share it.

:func:`epoch_order` picks the order of one epoch: the drawn permutation that :class:`~synthformer.train.loader.
BatchStream` always used for datasets up to :data:`LAZY_ORDER_MIN` examples (so every existing seeded result keeps
its numbers), the Feistel order above that or when asked (``lazy=True``: the prepared-corpus datasets).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["LAZY_ORDER_MIN", "DrawnPermutation", "FeistelPermutation", "Identity", "Order", "epoch_order",
           "seeded_order"]

#: Datasets with more examples than this get the lazy order (``2**22`` int64s would be 32 MiB per process).
LAZY_ORDER_MIN = 2**22
#: Feistel rounds: 4 already give a pseudo-random permutation (Luby-Rackoff); 6 mix small domains better.
ROUNDS = 6

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray, key: np.uint64) -> np.ndarray:
    """splitmix64's finaliser of ``x + key`` (uint64, wrapping)."""
    z = x + key
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


class Order:
    """A permutation of ``[0, n)``: ``order.take(positions) -> indices`` (int64 arrays of the same shape)."""

    n: int

    def take(self, positions: np.ndarray | Sequence[int]) -> np.ndarray:
        raise NotImplementedError

    def __len__(self) -> int:
        return self.n


class Identity(Order):
    """The examples in their stored order."""

    def __init__(self, n: int) -> None:
        self.n = n

    def take(self, positions: np.ndarray | Sequence[int]) -> np.ndarray:
        return np.asarray(positions, dtype=np.int64)


class DrawnPermutation(Order):
    """The whole permutation held in memory (``n`` int64s): ``np.random.default_rng(key).permutation(n)``."""

    def __init__(self, n: int, key: Sequence[int]) -> None:
        self.n = n
        self.perm = np.random.default_rng(list(key)).permutation(n)

    def take(self, positions: np.ndarray | Sequence[int]) -> np.ndarray:
        return self.perm[np.asarray(positions, dtype=np.int64)]


class FeistelPermutation(Order):
    """A seeded bijection of ``[0, n)`` computed per position (see the module docstring); O(1) memory.

    Args:
        n: the size of the domain (>= 1).
        key: seeds the round keys (e.g. ``[seed, epoch]``).
    """

    def __init__(self, n: int, key: Sequence[int]) -> None:
        if n < 1:
            raise ValueError(f"a permutation needs n >= 1, got {n}")
        self.n = n
        self.half_bits = max(1, ((n - 1).bit_length() + 1) // 2)  # 4**half_bits >= n
        self._mask = np.uint64((1 << self.half_bits) - 1)
        self._keys = [np.uint64(k) for k in np.random.default_rng(list(key)).integers(0, 2**63, size=ROUNDS)]

    def _network(self, x: np.ndarray) -> np.ndarray:
        shift = np.uint64(self.half_bits)
        left, right = x >> shift, x & self._mask
        for key in self._keys:
            left, right = right, left ^ (_mix(right, key) & self._mask)
        return (left << shift) | right

    def take(self, positions: np.ndarray | Sequence[int]) -> np.ndarray:
        pos = np.asarray(positions, dtype=np.int64)
        if pos.size and (pos.min() < 0 or pos.max() >= self.n):
            raise IndexError(f"positions must be in [0, {self.n})")
        out = self._network(pos.astype(np.uint64))
        outside = out >= np.uint64(self.n)
        while outside.any():  # cycle walking: at most a few rounds (the domain is < 4 n)
            out[outside] = self._network(out[outside])
            outside = out >= np.uint64(self.n)
        return out.astype(np.int64)


def seeded_order(n: int, key: Sequence[int], *, lazy: bool | None = None) -> Order:
    """A permutation of ``[0, n)`` fixed by ``key``: drawn whole, or (``lazy``, or None and more than
    :data:`LAZY_ORDER_MIN` items) the O(1)-memory Feistel order."""
    if lazy is None:
        lazy = n > LAZY_ORDER_MIN
    return FeistelPermutation(n, key) if lazy else DrawnPermutation(n, key)


def epoch_order(n: int, seed: int, epoch: int, *, shuffle: bool = True, lazy: bool | None = None) -> Order:
    """The order of the examples of one epoch, a function of ``(seed, epoch)`` only.

    ``lazy``: True for the Feistel order, False for the drawn permutation, None (default) for the Feistel order
    only above :data:`LAZY_ORDER_MIN` examples. Without ``shuffle``: the identity.
    """
    return seeded_order(n, [seed, epoch], lazy=lazy) if shuffle else Identity(n)
