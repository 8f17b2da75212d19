"""Holm's step-down correction: a hand-computed table, ties, untested comparisons, and its properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synthformer.stats import holm


def test_a_hand_computed_example():
    # sorted: 0.01 (x4 = 0.04), 0.02 (x3 = 0.06), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> running max 0.06)
    result = holm([0.03, 0.01, 0.04, 0.02], alpha=0.05)
    assert result.adjusted == pytest.approx((0.06, 0.04, 0.06, 0.06))
    assert result.holds == (False, True, False, False)
    assert result.m == 4
    # each of 0.02, 0.03 and 0.04 passes alone at 0.05 and fails after the correction
    assert all(p < 0.05 for p in result.raw) and sum(result.holds) == 1


def test_adjusted_values_are_capped_at_one_and_the_boundary_rejects():
    result = holm([0.5, 0.9, 0.025])
    assert result.adjusted == pytest.approx((1.0, 1.0, 0.075))
    assert holm([0.025, 0.5]).holds == (True, False)  # 2 x 0.025 = 0.05 <= alpha


def test_ties_get_equal_adjusted_values_whatever_their_order():
    a = holm([0.01, 0.01, 0.2])
    assert a.adjusted == pytest.approx((0.03, 0.03, 0.2))
    assert holm([0.2, 0.01, 0.01]).adjusted == pytest.approx((0.2, 0.03, 0.03))


def test_untested_comparisons_are_not_members_of_the_family():
    result = holm([0.02, math.nan, 0.04])
    assert result.m == 2
    assert result.adjusted[0] == pytest.approx(0.04) and math.isnan(result.adjusted[1])
    assert result.holds == (True, False, True)
    assert holm([]).adjusted == ()


def test_bad_p_values_are_refused():
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        holm([0.1, 1.5])
    with pytest.raises(ValueError, match="alpha"):
        holm([0.1], alpha=0.0)


def test_agrees_with_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    ps = [0.001, 0.04, 0.03, 0.2, 0.011, 0.04]
    reject, adjusted, _, _ = multitest.multipletests(ps, alpha=0.05, method="holm")
    result = holm(ps)
    assert result.adjusted == pytest.approx(tuple(adjusted))
    assert result.holds == tuple(bool(r) for r in reject)


p_lists = st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=15)


@given(p_lists, st.floats(0.001, 0.2))
@settings(max_examples=300, deadline=None)
def test_adjusted_p_values_are_monotone_at_least_raw_at_most_bonferroni(ps, alpha):
    result = holm(ps, alpha=alpha)
    m = len(ps)
    for p, adj in zip(ps, result.adjusted, strict=True):
        assert p <= adj <= min(1.0, m * p) + 1e-15
    order = sorted(range(m), key=lambda i: ps[i])
    adjusted_in_order = [result.adjusted[i] for i in order]
    assert adjusted_in_order == sorted(adjusted_in_order)


@given(p_lists, st.floats(0.001, 0.2))
@settings(max_examples=300, deadline=None)
def test_rejections_are_those_of_the_step_down_rule(ps, alpha):
    """Reject p_(1), ..., p_(k) for the largest k with p_(j) <= alpha / (m - j + 1) for every j <= k."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    expected = [False] * m
    for j, i in enumerate(order):
        if ps[i] > alpha / (m - j):
            break
        expected[i] = True
    assert list(holm(ps, alpha=alpha).holds) == expected


@given(p_lists, st.randoms(use_true_random=False))
@settings(max_examples=200, deadline=None)
def test_the_result_does_not_depend_on_the_order_of_the_comparisons(ps, rnd):
    perm = list(range(len(ps)))
    rnd.shuffle(perm)
    a, b = holm(ps), holm([ps[i] for i in perm])
    assert [b.adjusted[k] for k in range(len(ps))] == [a.adjusted[i] for i in perm]
