"""``attention.dropout_masks``: the keep masks of the fast paths, four 16-bit lanes per random word (issue 31's
profile: drawing masks was the largest operator of every synthesized kind's step at 2K)."""

from __future__ import annotations

import math

import pytest
import torch

from synthformer.attention.fast import dropout_masks
from synthformer.attention.fast.dropout_masks import LEVELS, drop_probability, dropout, keep_mask


@pytest.mark.parametrize("p", [0.05, 0.1, 0.5, 0.9])
def test_the_share_kept_is_one_minus_p_within_sampling_error(p):
    n = 400_000
    mask = keep_mask((n,), p, "cpu", torch.Generator().manual_seed(3))
    assert mask.dtype == torch.bool and mask.shape == (n,)
    q = drop_probability(p)
    assert abs(q - p) <= 0.5 / LEVELS
    dropped = (~mask).float().mean().item()
    assert abs(dropped - q) < 5 * math.sqrt(q * (1 - q) / n)  # 5 standard errors


def test_every_lane_of_a_word_is_used_and_independent_of_its_neighbours():
    # lanes 0..3 of each word decide entries 4i..4i+3: each position class keeps its share, and neighbouring
    # entries are uncorrelated (a lane read twice, or a constant sign bit, would show here)
    n = 4 * 100_000
    keep = keep_mask((n,), 0.5, "cpu", torch.Generator().manual_seed(0)).view(-1, 4).float()  # (words, lanes)
    se = 5 * math.sqrt(0.25 / keep.shape[0])
    assert torch.all((keep.mean(0) - 0.5).abs() < se)
    centered = keep - keep.mean(0)
    corr = (centered.T @ centered) / keep.shape[0] / 0.25  # (4, 4)
    off = corr - torch.diag(torch.diag(corr))
    assert off.abs().max() < se * 2


def test_a_reseeded_generator_redraws_the_mask_and_shapes_not_a_multiple_of_four_work():
    shape = (3, 5, 7)  # 105 entries: 27 words, the last one partly used
    a = keep_mask(shape, 0.1, "cpu", torch.Generator().manual_seed(11))
    b = keep_mask(shape, 0.1, "cpu", torch.Generator().manual_seed(11))
    c = keep_mask(shape, 0.1, "cpu", torch.Generator().manual_seed(12))
    assert a.shape == shape and torch.equal(a, b) and not torch.equal(a, c)


def test_dropout_zeroes_the_dropped_scales_the_kept_and_its_gradient_follows_the_mask():
    probs = torch.rand(4, 64, 64, dtype=torch.float64, requires_grad=True)
    out = dropout(probs, 0.25, torch.Generator().manual_seed(5))
    keep = keep_mask(tuple(probs.shape), 0.25, "cpu", torch.Generator().manual_seed(5))
    expected = torch.where(keep, probs / 0.75, torch.zeros_like(probs))
    torch.testing.assert_close(out, expected)
    (g,) = torch.autograd.grad(out.sum(), probs)
    torch.testing.assert_close(g, keep.double() / 0.75)
    assert dropout(probs, 0.0) is probs


def test_dropout_without_a_generator_follows_torch_manual_seed():
    x = torch.ones(1000)
    torch.manual_seed(7)
    a = dropout(x, 0.1)
    torch.manual_seed(7)
    assert torch.equal(a, dropout(x, 0.1))


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5])
def test_a_probability_outside_zero_one_is_named(p):
    with pytest.raises(ValueError, match=rf"dropout probability must be in \[0, 1\), got {p}"):
        keep_mask((4,), p, "cpu")
    with pytest.raises(ValueError, match="dropout probability"):
        dropout(torch.ones(4), p)


def test_fused_keep_mask_is_drawn_here(monkeypatch):
    from synthformer.attention.fast import fused

    seen = []
    real = dropout_masks.keep_mask
    monkeypatch.setattr(dropout_masks, "keep_mask", lambda *a, **k: seen.append(a) or real(*a, **k))
    mask = fused.keep_mask(100, 2, (2, 3), 0.1, torch.empty(1))
    assert seen and torch.equal(mask, real((2, 3), 0.1, "cpu", torch.Generator().manual_seed(102)))
