"""Paired comparisons of two kinds over the seeds both were trained with.

The same seed gives every kind the same initialisation stream and batch order, so the runs of two kinds are
paired by seed: what is compared is the differences ``d_i = x_i - y_i`` (kind minus reference) on the seeds
``i = 1..n`` both have, not the two samples as if independent (Welch's test throws the pairing away, and with it
the seed-to-seed variation the two kinds share).

Formulas (``m`` the mean of the differences, ``s`` their sample standard deviation with ``n - 1`` in the
denominator, ``se = s / sqrt(n)``, ``df = n - 1``, ``t_q`` the ``q`` quantile of Student's t with ``df``):

* **interval** ("t"): ``m ± t_{(1 + c)/2} · se`` for confidence ``c`` (0.95 by default).
* **p-value** ("t"): two-sided, ``H0: E[d] = 0``: ``p = 2 · min(P(T ≥ m/se), P(T ≤ m/se))``, the paired t-test
  (``scipy.stats.ttest_rel`` gives the same numbers).
* **one-sided p against a shifted null** ``H0: E[d] ≤ δ0`` ("greater"): ``P(T ≥ (m - δ0)/se)``; "less" mirrors it.
  The verdicts use these for noise floors and equivalence margins (:mod:`synthformer.stats.verdicts`).
* **minimum detectable effect** (MDE): the smallest true mean difference ``δ`` that a two-sided paired t-test at
  level ``α`` (0.05) rejects with probability ``1 - β`` (power 0.8), given ``n`` and taking the observed ``s`` as
  the true standard deviation of the differences. With ``λ = δ sqrt(n) / s`` the noncentrality and ``c_t =
  t_{1 - α/2}``, the power of the test is (noncentral t with ``df`` degrees of freedom)::

      power(δ) = P(T'_{df, λ} > c_t) + P(T'_{df, λ} < -c_t)
               = E_S[ Φ(λ - c_t S) + Φ(-λ - c_t S) ],   S = sqrt(χ²_df / df)

  and ``MDE = s · dz(n)`` where ``dz(n)`` solves ``power = 1 - β``. The expectation is integrated numerically
  (Gauss-Legendre over the density of ``S``), because scipy's noncentral t returns nan for some arguments. For
  large ``n`` this tends to the normal approximation ``(z_{1-α/2} + z_{1-β}) s / sqrt(n)``; for small ``n`` it is
  much larger: ``dz`` is 11.55 for n = 2, 3.26 for n = 3, 1.68 for n = 5, 0.996 for n = 10 (the textbook value
  of a paired t-test's detectable standardised effect at n = 10), 0.529 for n = 30. Two seeds detect only a
  difference of about twelve standard deviations of the seed-to-seed differences.
* **bootstrap** (``interval="bootstrap"``, for skewed metrics): ``B`` resamples (10 000) of the ``n`` differences
  with replacement, drawn by ``numpy.random.default_rng(bootstrap_seed)`` over the seeds in sorted order (the
  result depends neither on the order of the records nor on anything global); the interval is the percentile
  interval of the resampled means, and the p-values are the ones that interval inverts:
  ``P("greater", δ0) = (1 + #{means* ≤ δ0}) / (B + 1)`` (the ``+1`` keeps a p-value off zero), the two-sided
  ``p = min(1, 2 · min(P("greater", 0), P("less", 0)))``. The MDE stays the t formula above.

Choices where the statistics are ambiguous:

* **n = 1** (one seed in common): no standard deviation, so no interval, no p-value and no MDE (all nan);
  :attr:`PairedComparison.readable` is False and the verdict is "one seed: not read".
* **n = 2**: the t machinery applies (``df = 1``) and is honest about it: the interval is ``m ± 12.71 · se`` and
  the MDE about 11.5 standard deviations. Nothing is read from n = 2 that the t-test does not support.
* **zero variance** (every difference identical, tested exactly): the t statistic is ``m / 0``. The limit
  ``s → 0`` is taken: interval ``[m, m]``, MDE 0, ``p = 0`` when ``m ≠ 0`` and ``p = 1`` when ``m = 0``; a
  one-sided p against ``δ0`` is 0 when ``m`` is strictly on the alternative's side and 1 otherwise (a tie at the
  null counts against the alternative). :attr:`PairedComparison.zero_variance` marks it. Quantised metrics
  (accuracy on a finite set) can tie by chance on few seeds: pass a noise floor of at least one quantum.
* **ties** in the bootstrap (resampled means equal to the null) count against the alternative (``≤`` and ``≥``).
* **bootstrap with few seeds**: the percentile interval of ``n`` resampled differences has far less than its
  nominal coverage when ``n`` is small (two seeds give three distinct resampled means), so the bootstrap is
  refused below :data:`BOOTSTRAP_MIN_PAIRS` pairs; use the t interval there.
* values must be finite (a diverged run's nan loss is refused with its kind and seed named, not averaged).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import optimize, special
from scipy import stats as sps

__all__ = ["BOOTSTRAP_MIN_PAIRS", "PairedComparison", "detectable_dz", "minimum_detectable_effect",
           "one_sided_p", "paired_comparison", "paired_t_power", "summarize_differences"]

Interval = Literal["t", "bootstrap"]
Alternative = Literal["greater", "less"]

#: Fewest pairs the percentile bootstrap is computed for (below it, its coverage is far from nominal).
BOOTSTRAP_MIN_PAIRS = 10

_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(24)


@dataclass(frozen=True)
class PairedComparison:
    """The paired differences (kind minus reference) over the seeds both have, and what they support.

    ``low``/``high``/``p_value``/``mde``/``sd`` are nan when ``n == 1``.
    """

    seeds: tuple[Hashable, ...]
    differences: tuple[float, ...]
    mean: float
    sd: float
    low: float
    high: float
    p_value: float
    mde: float
    confidence: float
    interval: Interval
    alpha: float
    power: float
    _boot_means: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def n(self) -> int:
        """The number of pairs (seeds both kinds have)."""
        return len(self.differences)

    @property
    def readable(self) -> bool:
        """Whether there are at least two pairs (one pair gives no estimate of the noise)."""
        return self.n >= 2

    @property
    def zero_variance(self) -> bool:
        """Whether every difference is identical (n >= 2): the limit s -> 0 is used (see the module's notes)."""
        return self.n >= 2 and self.sd == 0.0


def _sorted_seeds(seeds: set[Hashable]) -> list[Hashable]:
    try:
        return sorted(seeds)  # type: ignore[type-var]
    except TypeError:  # mixed types: a stable order all the same
        return sorted(seeds, key=lambda s: (type(s).__name__, repr(s)))


def _check_finite(values: Mapping[Hashable, float], name: str) -> None:
    for seed, value in values.items():
        if not isinstance(value, (int, float, np.floating, np.integer)) or not math.isfinite(float(value)):
            raise ValueError(f"{name}, seed {seed!r}: expected a finite number, got {value!r}")


def paired_comparison(kind: Mapping[Hashable, float], reference: Mapping[Hashable, float], *,
                      confidence: float = 0.95, interval: Interval = "t", alpha: float = 0.05,
                      power: float = 0.8, n_resamples: int = 10_000, bootstrap_seed: int = 0,
                      kind_name: str = "kind", reference_name: str = "reference") -> PairedComparison:
    """Compare ``kind`` with ``reference`` (each: seed -> metric value) on the seeds both have.

    Differences are ``kind - reference``; seeds only one side has are left out.

    Raises:
        ValueError: no seed in common, a non-finite value, or a bad option.
    """
    _check_finite(kind, kind_name)
    _check_finite(reference, reference_name)
    common = _sorted_seeds(set(kind) & set(reference))
    if not common:
        raise ValueError(f"{kind_name} and {reference_name} share no seed ({kind_name}: "
                         f"{_sorted_seeds(set(kind))}, {reference_name}: {_sorted_seeds(set(reference))})")
    diffs = [float(kind[s]) - float(reference[s]) for s in common]
    return summarize_differences(diffs, seeds=common, confidence=confidence, interval=interval, alpha=alpha,
                                 power=power, n_resamples=n_resamples, bootstrap_seed=bootstrap_seed)


def summarize_differences(differences: Sequence[float], *, seeds: Sequence[Hashable] | None = None,
                          confidence: float = 0.95, interval: Interval = "t", alpha: float = 0.05,
                          power: float = 0.8, n_resamples: int = 10_000,
                          bootstrap_seed: int = 0) -> PairedComparison:
    """The :class:`PairedComparison` of given paired differences (in seed order; ``seeds`` default 0..n-1)."""
    d = np.asarray(differences, dtype=float)
    if d.ndim != 1 or d.size == 0:
        raise ValueError(f"expected a non-empty sequence of differences, got {differences!r}")
    if not np.isfinite(d).all():
        raise ValueError(f"differences must be finite, got {differences!r}")
    if not 0.0 < confidence < 1.0 or not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"confidence, alpha and power must lie in (0, 1); got {confidence}, {alpha}, {power}")
    if interval not in ("t", "bootstrap"):
        raise ValueError(f"interval must be 't' or 'bootstrap', got {interval!r}")
    seeds_t = tuple(seeds) if seeds is not None else tuple(range(d.size))
    if len(seeds_t) != d.size:
        raise ValueError(f"{len(seeds_t)} seeds for {d.size} differences")
    n = int(d.size)
    mean = float(d.mean())
    common = dict(seeds=seeds_t, differences=tuple(float(x) for x in d), mean=mean, confidence=confidence,
                  interval=interval, alpha=alpha, power=power)
    nan = math.nan
    if n == 1:
        return PairedComparison(sd=nan, low=nan, high=nan, p_value=nan, mde=nan, **common)
    zero = bool(np.ptp(d) == 0.0)
    sd = 0.0 if zero else float(d.std(ddof=1))
    mde = minimum_detectable_effect(n, sd, alpha=alpha, power=power)
    if interval == "bootstrap":
        if n < BOOTSTRAP_MIN_PAIRS:
            raise ValueError(f"the bootstrap needs at least {BOOTSTRAP_MIN_PAIRS} pairs (got {n}): its interval "
                             "undercovers with fewer; use interval='t'")
        if n_resamples < 100:
            raise ValueError(f"n_resamples must be at least 100, got {n_resamples}")
        rng = np.random.default_rng(bootstrap_seed)
        boot = d[rng.integers(0, n, size=(n_resamples, n))].mean(axis=1)
        low, high = (float(q) for q in np.quantile(boot, [(1 - confidence) / 2, (1 + confidence) / 2]))
        partial = PairedComparison(sd=sd, low=low, high=high, p_value=nan, mde=mde, _boot_means=boot, **common)
    else:
        if zero:
            low = high = mean
        else:
            half = float(sps.t.ppf((1 + confidence) / 2, n - 1)) * sd / math.sqrt(n)
            low, high = mean - half, mean + half
        partial = PairedComparison(sd=sd, low=low, high=high, p_value=nan, mde=mde, **common)
    p = min(1.0, 2.0 * min(one_sided_p(partial, 0.0, "greater"), one_sided_p(partial, 0.0, "less")))
    return PairedComparison(sd=sd, low=low, high=high, p_value=p, mde=mde,
                            _boot_means=partial._boot_means, **common)


def one_sided_p(c: PairedComparison, null: float, alternative: Alternative) -> float:
    """p-value of ``H0: E[d] <= null`` against ``E[d] > null`` ("greater"), or the mirror ("less").

    t: ``P(T >= (m - null)/se)``; bootstrap: ``(1 + #{means* <= null}) / (B + 1)``; zero variance: 0 when ``m`` is
    strictly on the alternative's side of ``null``, else 1. nan for one pair.
    """
    if alternative not in ("greater", "less"):
        raise ValueError(f"alternative must be 'greater' or 'less', got {alternative!r}")
    if not c.readable:
        return math.nan
    if c._boot_means is not None:
        boot = c._boot_means
        count = int(np.count_nonzero(boot <= null if alternative == "greater" else boot >= null))
        return (1 + count) / (boot.size + 1)
    if c.zero_variance:
        beyond = c.mean > null if alternative == "greater" else c.mean < null
        return 0.0 if beyond else 1.0
    t = (c.mean - null) / (c.sd / math.sqrt(c.n))
    df = c.n - 1
    return float(sps.t.sf(t, df) if alternative == "greater" else sps.t.cdf(t, df))


def _scaled_chi_grid(df: int, panels: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights integrating over the density of ``S = sqrt(chi2_df / df)`` (composite Gauss-Legendre on
    the central 1 - 2e-17 of its mass; smooth for every df >= 1, unlike the chi-square density at 0)."""
    lo = math.sqrt(float(sps.chi2.ppf(1e-17, df)) / df)
    hi = math.sqrt(float(sps.chi2.isf(1e-17, df)) / df)
    edges = np.linspace(lo, hi, panels + 1)
    a, b = edges[:-1, None], edges[1:, None]
    s = (a + b) / 2 + (b - a) / 2 * _GL_NODES
    log_density = (math.log(2.0) + (df / 2) * math.log(df / 2) - float(special.gammaln(df / 2))
                   + (df - 1) * np.log(s) - df * s * s / 2)
    return s.ravel(), ((b - a) / 2 * _GL_WEIGHTS * np.exp(log_density)).ravel()


def paired_t_power(dz: float, n: int, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t-test at level ``alpha`` with ``n`` pairs for a true standardised mean
    difference ``dz = δ / σ`` (see the module's formula)."""
    if n < 2:
        raise ValueError(f"a paired t-test needs at least 2 pairs, got {n}")
    df = n - 1
    lam = abs(dz) * math.sqrt(n)
    crit = float(sps.t.ppf(1 - alpha / 2, df))
    s, w = _scaled_chi_grid(df)
    return float(np.clip(np.sum(w * (special.ndtr(lam - crit * s) + special.ndtr(-lam - crit * s))), 0.0, 1.0))


@functools.lru_cache(maxsize=256)
def detectable_dz(n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The standardised mean difference ``dz`` a two-sided paired t-test with ``n`` pairs detects with ``power``."""
    if n < 2:
        raise ValueError(f"a paired t-test needs at least 2 pairs, got {n}")
    if paired_t_power(0.0, n, alpha) >= power:
        return 0.0
    hi = 1.0
    while paired_t_power(hi, n, alpha) < power:
        hi *= 2.0
    return float(optimize.brentq(lambda x: paired_t_power(x, n, alpha) - power, 0.0, hi, xtol=1e-12))


def minimum_detectable_effect(n: int, sd: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """``sd · dz(n)``: the smallest true mean difference detected with ``power`` (nan for n < 2; 0 for sd 0)."""
    if n < 2 or not math.isfinite(sd):
        return math.nan
    if sd < 0:
        raise ValueError(f"a standard deviation is not negative, got {sd}")
    return 0.0 if sd == 0.0 else sd * detectable_dz(n, alpha, power)
