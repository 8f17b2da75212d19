"""Statistics of attention weights, accumulated over batches: histograms (paper Figures 2-3) and the pattern by
relative distance (does a Random Synthesizer learn a local window? paper section 5.1).

Only the (query, key) pairs a layer may attend count (:func:`allowed_pairs`): real tokens on both sides and, in a
causal layer, keys at or before the query. The zeros of masked pairs would otherwise swamp every histogram, and the
histograms also leave out queries with a single allowed key (weight 1 whatever the model).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

__all__ = [
    "HISTOGRAM_BINS",
    "LOCAL_WINDOW",
    "DistanceProfile",
    "WeightHistogram",
    "allowed_pairs",
    "relative_distances",
]

#: Bin edges of the histograms: 50 equal bins over [0, 1] (attention weights are probabilities).
HISTOGRAM_BINS = 50
#: Distance (in tokens, |query - key|) within which attention counts as local.
LOCAL_WINDOW = 4


def allowed_pairs(valid: Tensor, causal: bool) -> Tensor:
    """(B, 1, L, L) bool: True where query q may attend key k and both are real tokens.

    Args:
        valid: (B, L) bool, True at real tokens.
        causal: keep only keys at or before the query.
    """
    pairs = valid[:, :, None] & valid[:, None, :]  # (B, L, L): query axis, then key axis
    if causal:
        length = valid.shape[1]
        pairs = pairs & torch.ones(length, length, dtype=torch.bool, device=valid.device).tril()
    return pairs[:, None]  # (B, 1, L, L), broadcast over heads


def relative_distances(length: int, device: torch.device | None = None) -> Tensor:
    """(L, L) long: query minus key, ``d[q, k] = q - k`` (positive: the key lies in the past)."""
    pos = torch.arange(length, device=device)
    return pos[:, None] - pos[None, :]


@dataclass
class WeightHistogram:
    """Histogram of the allowed attention weights of one layer (all heads together), with running moments.

    Attributes:
        counts: (HISTOGRAM_BINS,) counts of weights in each bin of [0, 1].
        n, total, total_sq, maximum: the count, sum, sum of squares and largest value of the weights.
        above: weights >= 0.1 (the paper reads the share of values in the 0.1-0.2 range and above).
    """

    counts: Tensor = field(default_factory=lambda: torch.zeros(HISTOGRAM_BINS, dtype=torch.float64))
    n: int = 0
    total: float = 0.0
    total_sq: float = 0.0
    maximum: float = 0.0
    above: int = 0

    def add(self, weights: Tensor, allowed: Tensor) -> None:
        """Count the weights of one batch: weights (B, H, L, L), allowed (B, 1, L, L) bool.

        Query rows with a single allowed key (a causal layer's first query) are left out: their weight is 1
        whatever the model learned, and would only add a spike at 1.
        """
        allowed = allowed & (allowed.sum(-1, keepdim=True) > 1)  # (B, 1, L, L) rows with a choice to make
        values = weights.masked_select(allowed.expand_as(weights)).double()  # (number of allowed entries,)
        if values.numel() == 0:
            return
        self.counts += torch.histc(values, bins=HISTOGRAM_BINS, min=0.0, max=1.0)
        self.n += values.numel()
        self.total += float(values.sum())
        self.total_sq += float((values * values).sum())
        self.maximum = max(self.maximum, float(values.max()))
        self.above += int((values >= 0.1).sum())

    def summary(self) -> dict[str, Any]:
        """Mean, standard deviation, maximum, share of weights >= 0.1 and the bin counts."""
        if self.n == 0:
            return {"count": 0}
        mean = self.total / self.n
        var = max(self.total_sq / self.n - mean * mean, 0.0)
        return {"count": self.n, "mean": mean, "std": var**0.5, "max": self.maximum,
                "share_at_least_0.1": self.above / self.n, "bins": HISTOGRAM_BINS,
                "counts": [int(c) for c in self.counts.tolist()]}


@dataclass
class DistanceProfile:
    """Attention by relative distance ``q - k`` for one layer, per head, accumulated over batches.

    Args:
        max_len: the longest sequence the layer takes (fixes the distance axis: ``-(max_len-1) .. max_len-1``).
        n_heads: the layer's heads.
        window: the local window for :meth:`local_mass` (|q - k| <= window).
    """

    max_len: int
    n_heads: int
    window: int = LOCAL_WINDOW
    sums: Tensor = field(init=False)
    pairs: Tensor = field(init=False)
    mass: Tensor = field(init=False)
    rows: int = field(init=False, default=0)
    uniform: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        span = 2 * self.max_len - 1
        self.sums = torch.zeros(self.n_heads, span, dtype=torch.float64)  # (H, 2M-1) summed weights by distance
        self.pairs = torch.zeros(span, dtype=torch.float64)  # (2M-1,) allowed (sample, q, k) pairs by distance
        self.mass = torch.zeros(self.n_heads, dtype=torch.float64)  # (H,) summed local mass over query rows
        self.uniform_sums = torch.zeros(span, dtype=torch.float64)  # (2M-1,) the same sums for uniform attention

    def add(self, weights: Tensor, allowed: Tensor) -> None:
        """Accumulate one batch: weights (B, H, L, L), allowed (B, 1, L, L) bool."""
        b, h, length, _ = weights.shape
        if length > self.max_len or h != self.n_heads:
            raise ValueError(f"expected weights of at most {self.max_len} positions and {self.n_heads} heads, got "
                             f"shape {tuple(weights.shape)}")
        kept = weights * allowed  # (B, H, L, L), disallowed pairs zeroed (in the weights' dtype: memory)
        dist = relative_distances(length, weights.device) + self.max_len - 1  # (L, L) index on the distance axis
        summed = kept.sum(0).double().reshape(h, length * length)  # (H, L, L) -> (H, L*L)
        self.sums.index_add_(1, dist.flatten(), summed)
        self.pairs.index_add_(0, dist.flatten(), allowed.sum((0, 1)).flatten().double())  # (L, L) -> (L*L,)
        near = (relative_distances(length, weights.device).abs() <= self.window) & allowed  # (B, 1, L, L)
        rows = allowed.any(-1)  # (B, 1, L) query rows with at least one key
        self.mass += (kept * near).sum(-1).masked_fill(~rows, 0.0).double().sum((0, 2))  # (B, H, L) -> (H,)
        self.rows += int(rows.sum())
        # what uniform attention over the allowed keys would put in the window: the reference the mass beats
        keys = allowed.sum(-1, keepdim=True).clamp(min=1).double()  # (B, 1, L, 1) allowed keys per query row
        ratio = near.sum(-1, keepdim=True).double() / keys  # (B, 1, L, 1)
        self.uniform += float(ratio.masked_fill(~rows[..., None], 0.0).sum())
        uniform = allowed.double() / keys  # (B, 1, L, L): 1/keys on each allowed pair
        self.uniform_sums.index_add_(0, dist.flatten(), uniform.sum((0, 1)).flatten())  # (L, L) -> (L*L,)

    def distances(self) -> list[int]:
        """The distance axis ``q - k`` of :meth:`mean_by_distance`, restricted to distances seen."""
        seen = (self.pairs > 0).nonzero().flatten()
        return [int(i) - (self.max_len - 1) for i in seen]

    def mean_by_distance(self) -> Tensor:
        """(H, D) mean weight at each distance of :meth:`distances` (per allowed pair), per head."""
        seen = self.pairs > 0
        return (self.sums[:, seen] / self.pairs[seen]).float()  # (H, D)

    def uniform_by_distance(self) -> Tensor:
        """(D,) the mean weight at each distance of :meth:`distances` under uniform attention over the same keys
        (the chance level: in a causal layer early queries have few keys, so short distances weigh more anyway)."""
        seen = self.pairs > 0
        return (self.uniform_sums[seen] / self.pairs[seen]).float()  # (D,)

    def local_mass(self) -> Tensor:
        """(H,) mean attention mass within the window (|q - k| <= window) per query row, per head."""
        return (self.mass / max(self.rows, 1)).float()

    def uniform_local_mass(self) -> float:
        """The window's mass under uniform attention over the same allowed keys (the chance level)."""
        return self.uniform / max(self.rows, 1)

    def summary(self) -> dict[str, Any]:
        """Local mass (per head and mean over heads), its chance level, the query rows counted (samples x real
        positions) and the mean weight by distance (and under uniform attention)."""
        mass = self.local_mass()
        return {
            "window": self.window,
            "query_rows": self.rows,
            "local_mass": float(mass.mean()),
            "local_mass_per_head": [float(v) for v in mass],
            "uniform_local_mass": self.uniform_local_mass(),
            "distances": self.distances(),
            "mean_weight_by_distance": [float(v) for v in self.mean_by_distance().mean(0)],
            "uniform_weight_by_distance": [float(v) for v in self.uniform_by_distance()],
        }
