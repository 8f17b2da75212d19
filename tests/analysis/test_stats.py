"""Statistics on hand-built attention: local mass, mean weight by distance, histogram moments."""

from __future__ import annotations

import pytest
import torch

from synthformer.analysis import DistanceProfile, WeightHistogram, allowed_pairs, relative_distances


def _causal_band(length: int, width: int) -> torch.Tensor:
    """(1, 1, L, L): each query attends uniformly to itself and the ``width - 1`` keys before it."""
    d = relative_distances(length)
    band = ((d >= 0) & (d < width)).double()
    return (band / band.sum(-1, keepdim=True))[None, None]


def test_identity_attention_is_fully_local() -> None:
    length = 8
    w = torch.eye(length)[None, None].expand(2, 3, length, length)  # (B=2, H=3, L, L)
    allowed = allowed_pairs(torch.ones(2, length, dtype=torch.bool), causal=True)
    profile = DistanceProfile(max_len=10, n_heads=3, window=0)
    profile.add(w, allowed)
    assert profile.distances() == list(range(length))  # causal: keys at or before the query
    mean = profile.mean_by_distance()  # (H, D)
    assert torch.allclose(mean[:, 0], torch.ones(3)) and (mean[:, 1:] == 0).all()
    assert torch.allclose(profile.local_mass(), torch.ones(3))
    # uniform attention puts 1/(q+1) on the query itself
    assert profile.uniform_local_mass() == pytest.approx(sum(1 / (q + 1) for q in range(length)) / length)
    # the histogram leaves out the first query, whose only key gets weight 1 whatever the model
    hist = WeightHistogram()
    hist.add(w, allowed)
    s = hist.summary()
    assert s["count"] == 2 * 3 * sum(q + 1 for q in range(1, length))
    assert s["counts"][-1] == 2 * 3 * (length - 1) and s["counts"][0] == s["count"] - s["counts"][-1]


def test_band_attention_local_mass_and_profile() -> None:
    length = 10
    w = _causal_band(length, width=2).float()  # rows: 1 at q=0, then 1/2 on q and q-1
    allowed = allowed_pairs(torch.ones(1, length, dtype=torch.bool), causal=True)
    profile = DistanceProfile(max_len=length, n_heads=1, window=0)
    profile.add(w, allowed)
    assert float(profile.local_mass()[0]) == pytest.approx((1 + 0.5 * (length - 1)) / length)
    profile4 = DistanceProfile(max_len=length, n_heads=1, window=4)
    profile4.add(w, allowed)
    assert float(profile4.local_mass()[0]) == pytest.approx(1.0)
    summary = profile4.summary()
    assert summary["local_mass"] == pytest.approx(1.0) and summary["window"] == 4
    # mean weight at distance 1: 1/2 on each of the L-1 pairs at that distance; at distance 0: (1 + 9/2) / 10
    assert summary["mean_weight_by_distance"][:2] == pytest.approx([(1 + 0.5 * 9) / 10, 0.5])
    assert summary["mean_weight_by_distance"][2:] == pytest.approx([0.0] * (length - 2))


def test_padding_is_left_out() -> None:
    length = 6
    valid = torch.tensor([[True] * 4 + [False] * 2])
    allowed = allowed_pairs(valid, causal=False)  # (1, 1, L, L)
    assert allowed.shape == (1, 1, length, length)
    assert int(allowed.sum()) == 16
    w = torch.full((1, 2, length, length), 1.0 / length)
    hist = WeightHistogram()
    hist.add(w, allowed)
    s = hist.summary()
    assert s["count"] == 2 * 16 and s["mean"] == pytest.approx(1 / length) and s["std"] == pytest.approx(0, abs=1e-9)
    assert sum(s["counts"]) == 32 and s["max"] == pytest.approx(1 / length)
    profile = DistanceProfile(max_len=8, n_heads=2)
    profile.add(w, allowed)
    assert profile.distances() == list(range(-3, 4))  # only pairs of the 4 real tokens
    with pytest.raises(ValueError, match="at most 8 positions and 2 heads"):
        profile.add(torch.zeros(1, 3, 4, 4), allowed_pairs(torch.ones(1, 4, dtype=torch.bool), False))
