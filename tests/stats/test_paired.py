"""Paired comparisons: the interval, the p-value, the minimum detectable effect, n = 1, zero variance, bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from synthformer.stats import (
    BOOTSTRAP_MIN_PAIRS,
    detectable_dz,
    minimum_detectable_effect,
    one_sided_p,
    paired_comparison,
    paired_t_power,
    summarize_differences,
)

KIND = {0: 2.52, 1: 2.55, 2: 2.50, 3: 2.61, 4: 2.49}
REF = {0: 2.31, 1: 2.35, 2: 2.29, 3: 2.33, 4: 2.40}


def test_interval_and_p_value_are_the_paired_t_tests_of_scipy():
    c = paired_comparison(KIND, REF)
    seeds = sorted(KIND)
    res = stats.ttest_rel([KIND[s] for s in seeds], [REF[s] for s in seeds])
    ci = res.confidence_interval(0.95)
    assert c.n == 5 and c.seeds == (0, 1, 2, 3, 4)
    assert c.mean == pytest.approx(np.mean([KIND[s] - REF[s] for s in seeds]))
    assert (c.low, c.high) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert c.p_value == pytest.approx(res.pvalue, rel=1e-10)
    # Welch's test on the same numbers (the pairing thrown away) is not what is computed
    assert c.p_value != pytest.approx(stats.ttest_ind(list(KIND.values()), list(REF.values()),
                                                      equal_var=False).pvalue, rel=1e-3)


def test_only_the_seeds_both_kinds_have_are_paired():
    c = paired_comparison({0: 1.0, 1: 2.0, 7: 9.0}, {0: 0.5, 1: 1.0, 3: 4.0})
    assert c.seeds == (0, 1) and c.differences == (0.5, 1.0)


def test_one_seed_gives_no_interval_and_says_so():
    c = paired_comparison({0: 1.0, 1: 3.0}, {1: 2.0, 5: 0.0})
    assert c.n == 1 and not c.readable and c.mean == 1.0
    assert all(math.isnan(x) for x in (c.sd, c.low, c.high, c.p_value, c.mde))
    assert math.isnan(one_sided_p(c, 0.0, "greater"))


def test_no_seed_in_common_and_non_finite_values_are_refused():
    with pytest.raises(ValueError, match="share no seed"):
        paired_comparison({0: 1.0}, {1: 1.0})
    with pytest.raises(ValueError, match="R, seed 1"):
        paired_comparison({0: 1.0, 1: math.nan}, {0: 1.0, 1: 1.0}, kind_name="R")


def test_zero_variance_takes_the_limit():
    c = summarize_differences([0.25, 0.25, 0.25])
    assert c.zero_variance and c.sd == 0.0
    assert (c.low, c.high) == (c.mean, c.mean) == pytest.approx((0.25, 0.25))
    assert c.p_value == 0.0 and c.mde == 0.0
    assert one_sided_p(c, 0.3, "greater") == 1.0 and one_sided_p(c, 0.3, "less") == 0.0
    z = summarize_differences([0.0, 0.0])
    assert z.zero_variance and z.p_value == 1.0 and z.mde == 0.0
    assert one_sided_p(z, 0.0, "greater") == 1.0  # a tie at the null counts against the alternative
    # nearly equal is not equal: the t-test applies
    assert not summarize_differences([0.25, 0.25 + 1e-9, 0.25]).zero_variance


# ----------------------------------------------------------------------------------- minimum detectable effect
@pytest.mark.parametrize(("n", "dz"), [(10, 0.9960), (30, 0.5292), (20, 0.6604)])
def test_detectable_effect_matches_the_textbook_paired_t_values(n, dz):
    """Exact noncentral-t values of the standardised effect a two-sided paired t-test at α = 0.05 detects with
    80% power (what G*Power computes: 0.996 for 10 pairs); the normal approximation says 0.886 for n = 10."""
    assert detectable_dz(n) == pytest.approx(dz, abs=1e-4)


def test_power_agrees_with_scipys_noncentral_t_where_that_is_finite():
    for n, dz in [(3, 2.0), (5, 1.5), (10, 1.0), (30, 0.5), (100, 0.3)]:
        df, crit = n - 1, stats.t.ppf(0.975, n - 1)
        nct = stats.nct.sf(crit, df, dz * math.sqrt(n)) + stats.nct.cdf(-crit, df, dz * math.sqrt(n))
        assert np.isfinite(nct)
        assert paired_t_power(dz, n) == pytest.approx(nct, abs=1e-8)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_the_mde_is_detected_80_percent_of_the_time_in_simulation(n):
    sd = 0.03
    mde = minimum_detectable_effect(n, sd)
    rng = np.random.default_rng(12345)
    diffs = rng.normal(mde, sd, size=(40_000, n))
    rejected = stats.ttest_1samp(diffs, 0.0, axis=1).pvalue <= 0.05
    assert rejected.mean() == pytest.approx(0.80, abs=0.012)  # binomial sd 0.002
    # half the MDE is detected far less often
    half = stats.ttest_1samp(rng.normal(mde / 2, sd, size=(40_000, n)), 0.0, axis=1).pvalue <= 0.05
    assert half.mean() < 0.6


def test_the_mde_is_the_observed_sd_times_dz_and_two_seeds_need_about_twelve_sds():
    c = paired_comparison(KIND, REF)
    assert c.mde == pytest.approx(c.sd * detectable_dz(5))
    assert detectable_dz(2) == pytest.approx(11.55, abs=0.01)
    large = 2000  # the normal approximation's regime
    assert detectable_dz(large) * math.sqrt(large) == pytest.approx(stats.norm.ppf(0.975) + stats.norm.ppf(0.8),
                                                                     rel=2e-3)
    assert math.isnan(minimum_detectable_effect(1, 0.1))


@given(sd=st.floats(1e-6, 1e3), k=st.floats(0.1, 10), n=st.integers(2, 60))
@settings(max_examples=60, deadline=None)
def test_the_mde_scales_with_sd_and_shrinks_with_n(sd, k, n):
    assert minimum_detectable_effect(n, k * sd) == pytest.approx(k * minimum_detectable_effect(n, sd), rel=1e-9)
    assert minimum_detectable_effect(n + 1, sd) < minimum_detectable_effect(n, sd)


# --------------------------------------------------------------------------------------------------- properties
differences = st.lists(st.floats(-100, 100, allow_nan=False), min_size=2, max_size=12)


@given(differences)
@settings(max_examples=200, deadline=None)
def test_the_interval_contains_the_mean_difference_and_p_is_a_probability(d):
    c = summarize_differences(d)
    assert c.low <= c.mean <= c.high
    assert 0.0 <= c.p_value <= 1.0
    assert c.mde >= 0.0


@given(differences)
@settings(max_examples=200, deadline=None)
def test_the_95_interval_excludes_zero_exactly_when_p_is_below_005(d):
    c = summarize_differences(d)
    if c.zero_variance or abs(c.p_value - 0.05) < 1e-9:
        return
    assert (c.low > 0 or c.high < 0) == (c.p_value < 0.05)


# ---------------------------------------------------------------------------------------------------- bootstrap
SKEWED = {s: float(x) for s, x in enumerate(np.random.default_rng(7).lognormal(0.0, 1.0, size=14))}
ZEROS = dict.fromkeys(SKEWED, 0.0)


def test_the_bootstrap_is_seeded_and_deterministic():
    a = paired_comparison(SKEWED, ZEROS, interval="bootstrap", bootstrap_seed=3)
    b = paired_comparison(dict(reversed(list(SKEWED.items()))), ZEROS, interval="bootstrap", bootstrap_seed=3)
    other = paired_comparison(SKEWED, ZEROS, interval="bootstrap", bootstrap_seed=4)
    assert (a.low, a.high, a.p_value) == (b.low, b.high, b.p_value)  # record order does not matter
    assert (a.low, a.high) != (other.low, other.high)  # the seed does
    assert a.low < a.mean < a.high
    t = paired_comparison(SKEWED, ZEROS)
    assert (a.low, a.high) != pytest.approx((t.low, t.high), rel=1e-3)
    # the interval is the percentile interval of B resampled means, by numpy's default_rng(seed)
    d = np.array([SKEWED[s] for s in sorted(SKEWED)])
    boot = d[np.random.default_rng(3).integers(0, d.size, size=(10_000, d.size))].mean(axis=1)
    assert (a.low, a.high) == tuple(np.quantile(boot, [0.025, 0.975]))


def test_the_bootstrap_p_value_inverts_its_interval():
    c = paired_comparison(SKEWED, ZEROS, interval="bootstrap")
    assert c.p_value == pytest.approx(2 / 10_001)  # every resampled mean is above 0
    shifted = paired_comparison({s: v - c.mean for s, v in SKEWED.items()}, ZEROS, interval="bootstrap")
    assert shifted.p_value > 0.5 and shifted.low < 0 < shifted.high


def test_the_bootstrap_refuses_few_pairs():
    few = {s: float(s) for s in range(BOOTSTRAP_MIN_PAIRS - 1)}
    with pytest.raises(ValueError, match="at least 10 pairs"):
        paired_comparison(few, dict.fromkeys(few, 0.0), interval="bootstrap")
