"""Holm's step-down correction (Holm-Bonferroni) across the comparisons of one table.

A table that compares ``m`` kinds with the reference tests ``m`` hypotheses; reading each at ``α`` alone makes
"at least one false discovery" far likelier than ``α``. Holm's procedure controls that family-wise error rate at
``α`` under any dependence between the tests, and is uniformly more powerful than Bonferroni.

Formula: sort the p-values ``p_(1) ≤ ... ≤ p_(m)``; the adjusted p-values are::

    p~_(i) = max_{j ≤ i} min(1, (m - j + 1) · p_(j))

and hypothesis ``(i)`` is rejected ("holds") when ``p~_(i) ≤ α``; this is the step-down rule "reject
``(1), ..., (k)`` for the largest ``k`` with ``p_(j) ≤ α / (m - j + 1)`` for every ``j ≤ k``". The adjusted
values are those of ``statsmodels.stats.multitest.multipletests(method="holm")``.

Choices:

* **ties** among p-values: the sort is stable, and the running maximum makes the adjusted values of tied
  p-values equal whatever their order, so the result does not depend on the order of the input.
* **nan** p-values (comparisons that were not tested, e.g. one seed) are not members of the family: ``m``
  counts the finite ones, a nan's adjusted value is nan and it never holds.
* ``p ≤ α`` rejects (the boundary counts as significant, as in statsmodels).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["HolmResult", "holm"]


@dataclass(frozen=True)
class HolmResult:
    """Raw and Holm-adjusted p-values, in the input's order, and which hypotheses hold at ``alpha``."""

    raw: tuple[float, ...]
    adjusted: tuple[float, ...]
    holds: tuple[bool, ...]
    alpha: float

    @property
    def m(self) -> int:
        """The size of the family (the finite p-values)."""
        return sum(1 for p in self.raw if not math.isnan(p))


def holm(p_values: Sequence[float], alpha: float = 0.05) -> HolmResult:
    """Holm-adjust ``p_values`` (nan: not tested) and reject at ``alpha``.

    Raises:
        ValueError: a p-value outside [0, 1] (or infinite), or ``alpha`` outside (0, 1).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    raw = tuple(float(p) for p in p_values)
    for p in raw:
        if not math.isnan(p) and not 0.0 <= p <= 1.0:
            raise ValueError(f"a p-value lies in [0, 1], got {p}")
    tested = sorted((i for i, p in enumerate(raw) if not math.isnan(p)), key=lambda i: raw[i])
    m = len(tested)
    adjusted = [math.nan] * len(raw)
    running = 0.0
    for rank, i in enumerate(tested):  # rank j - 1
        running = max(running, min(1.0, (m - rank) * raw[i]))
        adjusted[i] = running
    holds = tuple(not math.isnan(a) and a <= alpha for a in adjusted)
    return HolmResult(raw=raw, adjusted=tuple(adjusted), holds=holds, alpha=alpha)
