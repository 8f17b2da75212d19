"""Verdicts computed from a table's records, never typed: holds, reversed, within noise, uninformative, one seed.

A table has rows ``(kind, seed, value)``, a reference kind (usually V) and a claim per compared kind, e.g.
"R is worse than V" or "D matches V within 0.02". Each claimed kind is compared with the reference by paired
differences ``d = kind - reference`` over the seeds both have (:func:`~synthformer.stats.paired.paired_comparison`),
each comparison gives one p-value, and Holm's correction (:func:`~synthformer.stats.holm.holm`) runs across the
comparisons of the table. The verdict of a claim, in this order:

1. ``"uninformative (no model beats the trivial baseline)"``: a ``baseline`` was given (the majority class's
   accuracy, a unigram model's loss) and no row of the table beats it by more than its noise; then every claim of
   the table gets this verdict. A row (any kind in the records, the reference and unclaimed kinds included) beats
   the baseline when its improvement ``u = ±(value - baseline)`` (sign by the direction) has, over its seeds, a
   one-sided t-test of ``H0: E[u] ≤ floor`` significant at ``α`` (``floor`` the noise floor, 0 without one; no
   Holm here: the check screens the table, it is not one of its claims). A row with one seed has no estimate of
   its noise: it beats the baseline only when its improvement exceeds a given noise floor, and without one it is
   not screened at all. A table none of whose rows could be screened (every row one seed, no floor) is not called
   uninformative, which would say what no record shows: its claims go on to rule 2.
2. ``"one seed: not read"``: the kind and the reference share one seed (no interval, no test).
3. A **directional claim** ("K is better/worse than REF") is tested two-sided, with the noise floor ``f`` (0 if
   none) as a shifted null: ``p = min(1, 2 · min(P(E[d] > f), P(E[d] < -f)))`` (the ordinary paired t-test when
   ``f = 0``), so a difference is read only when it exceeds the floor significantly, and "a difference smaller
   than the floor" can never hold. Significant after Holm: ``"holds"`` when ``d`` points the way the claim says
   (better: higher for a higher-is-better metric, lower for a lower-is-better one), ``"reversed"`` otherwise.
   Not significant: ``"within noise (could not detect less than X)"`` with ``X = f + MDE`` (the smallest true
   difference the test detects with 80% power at ``α``: see :mod:`synthformer.stats.paired`); with a floor the
   text names it, and says so when the observed difference is below it; pairs tied on every seed (a ceiling both
   reach) read ``"within noise (equal to REF on every seed: no difference to read)"``.
4. An **equivalence claim** ("K matches REF within X"): two one-sided tests (TOST) of ``|E[d]| < X``:
   ``p_eq = max(P(E[d] > -X), P(E[d] < X))`` (the 90% interval inside ``±X`` at ``α = 0.05``), against the test of
   the complement on the side the mean lies, ``p_out = P(E[d] > X)`` (``m ≥ 0``) or ``P(E[d] < -X)``; the claim's
   p-value is ``min(p_eq, p_out)``. Only one of the two can be below 1/2 (``p_eq < 1/2`` needs ``|m| < X``,
   ``p_out < 1/2`` needs ``|m| > X``), so each wrong conclusion has probability at most ``α``, and the pair is
   one member of the Holm family. Significant: ``"holds"`` (inside the margin) or ``"reversed"`` (outside).
   A margin below the noise floor cannot be resolved by these runs and never holds. Not significant:
   ``"within noise (could not detect less than MDE)"``.

Choices: the MDE is computed at the uncorrected ``α`` (0.05) as the brief of the rule states; after Holm the
detectable difference is larger, so the X of "could not detect less than X" is a lower bound. Comparisons with one
seed are not members of the Holm family. Records with a repeated (kind, seed), or a non-finite value, are
refused: a diverged run is named, not averaged.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .holm import HolmResult, holm
from .paired import Interval, PairedComparison, one_sided_p, paired_comparison, summarize_differences

__all__ = ["HOLDS", "ONE_SEED", "REVERSED", "UNINFORMATIVE", "BaselineCheck", "Claim", "Record",
           "TableVerdicts", "Verdict", "format_amount", "parse_claim", "resolve_direction", "table_verdicts"]

Direction = Literal["min", "max"]
Relation = Literal["better", "worse", "matches"]
Outcome = Literal["holds", "reversed", "within noise", "uninformative", "one seed"]

HOLDS = "holds"
REVERSED = "reversed"
ONE_SEED = "one seed: not read"
UNINFORMATIVE = "uninformative (no model beats the trivial baseline)"

_DIRECTIONS = {"min": "min", "lower": "min", "max": "max", "higher": "max"}
_DIRECTIONAL = re.compile(r"^\s*(?P<kind>\S+)\s+is\s+(?P<rel>better|worse)\s+than\s+(?P<ref>\S+)\s*$")
_MATCHES = re.compile(r"^\s*(?P<kind>\S+)\s+matches\s+(?P<ref>\S+)\s+within\s+"
                      r"(?P<margin>[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)(?:\s+\S.*)?\s*$")


def resolve_direction(direction: str | None = None, metric: str | None = None) -> Direction:
    """``"min"`` (lower is better) or ``"max"``, from ``direction`` ("min"/"lower"/"max"/"higher") or from a metric
    name through :func:`synthformer.train.best.metric_direction` (loss, bits, perplexity: min; accuracy, BLEU: max).

    Raises:
        ValueError: neither or both given, or an unknown direction or metric.
    """
    if (direction is None) == (metric is None):
        raise ValueError("give the metric's direction ('min' or 'max') or its name, exactly one of them")
    if direction is not None:
        if direction not in _DIRECTIONS:
            raise ValueError(f"direction must be one of {', '.join(_DIRECTIONS)}, got {direction!r}")
        return _DIRECTIONS[direction]  # type: ignore[return-value]
    from synthformer.train import metric_direction  # imported where used: only metric names need train

    return metric_direction(metric)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Claim:
    """What a table says of ``kind`` against ``reference``: better, worse, or matches within ``margin``."""

    kind: str
    relation: Relation
    reference: str
    margin: float | None = None

    def __post_init__(self) -> None:
        if self.relation not in ("better", "worse", "matches"):
            raise ValueError(f"a claim's relation is better, worse or matches, got {self.relation!r}")
        if self.relation == "matches":
            if self.margin is None or not math.isfinite(self.margin) or self.margin <= 0:
                raise ValueError(f"'{self.kind} matches {self.reference}' needs a positive margin, "
                                 f"got {self.margin!r}")
        elif self.margin is not None:
            raise ValueError(f"a {self.relation} claim has no margin, got {self.margin!r}")
        if self.kind == self.reference:
            raise ValueError(f"a claim compares two kinds, got {self.kind!r} against itself")

    @property
    def text(self) -> str:
        """The claim in words ("R is worse than V", "D matches V within 0.02")."""
        if self.relation == "matches":
            return f"{self.kind} matches {self.reference} within {self.margin:g}"
        return f"{self.kind} is {self.relation} than {self.reference}"


def parse_claim(text: str) -> Claim:
    """``"K is better than REF"``, ``"K is worse than REF"`` or ``"K matches REF within X [unit]"``."""
    if (hit := _DIRECTIONAL.match(text)) is not None:
        return Claim(hit["kind"], hit["rel"], hit["ref"])  # type: ignore[arg-type]
    if (hit := _MATCHES.match(text)) is not None:
        return Claim(hit["kind"], "matches", hit["ref"], float(hit["margin"]))
    raise ValueError(f"cannot read the claim {text!r}: expected 'K is better than REF', 'K is worse than REF' "
                     "or 'K matches REF within X'")


@dataclass(frozen=True)
class Record:
    """One run's reading: the kind, its seed and the metric's value."""

    kind: str
    seed: Hashable
    value: float


@dataclass(frozen=True)
class BaselineCheck:
    """Whether ``kind`` beats the trivial baseline by more than its noise (see the module's rule 1)."""

    kind: str
    n: int
    improvement: float
    lower_bound: float
    beats: bool
    screened: bool = True  # False: one seed and no noise floor, so the row can neither pass nor fail the check


@dataclass(frozen=True)
class Verdict:
    """The reading of one claim: its comparison, the p-value that entered Holm, the adjusted one, the verdict."""

    claim: Claim
    comparison: PairedComparison
    p_value: float
    p_adjusted: float
    outcome: Outcome
    text: str
    detectable: float

    @property
    def kind(self) -> str:
        """The compared kind."""
        return self.claim.kind


def format_amount(value: float, unit: str = "", precision: int = 3) -> str:
    """``value`` at ``precision`` decimals with its unit ("0.021 nats", "1.50%")."""
    if math.isnan(value):
        return "nan"
    number = f"{value:.{precision}f}"
    if not unit:
        return number
    return f"{number}{unit}" if unit.startswith("%") else f"{number} {unit}"


def _format_p(p: float) -> str:
    if math.isnan(p):
        return "—"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


@dataclass(frozen=True)
class TableVerdicts:
    """The verdicts of one table, in the claims' order, with what they were computed from."""

    reference: str
    direction: Direction
    verdicts: tuple[Verdict, ...]
    holm: HolmResult
    baseline: float | None
    baseline_checks: tuple[BaselineCheck, ...]
    noise_floor: float | None
    unit: str
    precision: int
    alpha: float
    confidence: float
    interval: Interval

    @property
    def informative(self) -> bool:
        """False when a baseline was given, some row could be screened and no row beats it by more than its
        noise."""
        return _informative(self.baseline, self.baseline_checks)

    def verdict(self, kind: str) -> Verdict:
        """The verdict of ``kind``'s claim."""
        for v in self.verdicts:
            if v.kind == kind:
                return v
        raise KeyError(f"no claim about {kind!r}; claims about: {', '.join(v.kind for v in self.verdicts)}")

    def verdict_column(self) -> dict[str, str]:
        """kind -> verdict text, in the claims' order."""
        return {v.kind: v.text for v in self.verdicts}

    def to_markdown(self, *, notes: bool = True) -> str:
        """A Markdown table (kind, claim, seeds, Δ and interval, p and Holm's p, verdict) and, with ``notes``, a
        line saying how the verdicts were computed."""
        unit = f" ({self.unit})" if self.unit else ""
        level = f"{self.confidence:.0%}"
        lines = [f"| kind | claim | seeds | Δ vs {self.reference}{unit} [{level} interval] | p | p (Holm) | verdict |",
                 "|---|---|---:|---|---:|---:|---|"]
        for v in self.verdicts:
            c = v.comparison
            delta = f"{c.mean:+.{self.precision}f}"
            if c.readable:
                delta += f" [{c.low:+.{self.precision}f}, {c.high:+.{self.precision}f}]"
            lines.append(f"| {v.kind} | {v.claim.text} | {c.n} | {delta} | {_format_p(v.p_value)} | "
                         f"{_format_p(v.p_adjusted)} | {v.text} |")
        if notes:
            test = "percentile bootstrap" if self.interval == "bootstrap" else "paired t"
            note = (f"Differences are kind minus {self.reference} on the seeds both have ({test}); Holm's "
                    f"correction across the {self.holm.m} tested comparisons at α = {self.alpha:g}")
            if self.noise_floor:
                note += (f"; noise floor {format_amount(self.noise_floor, self.unit, self.precision)} (p of a "
                         "better/worse claim tests a difference beyond it)")
            if self.baseline is not None:
                beaten = [b.kind for b in self.baseline_checks if b.beats]
                screened = any(b.screened for b in self.baseline_checks)
                note += (f"; trivial baseline {self.baseline:.{self.precision}f}, " + (
                    f"beaten by {', '.join(beaten) if beaten else 'no row'}" if screened
                    else "not screened (one seed per row, no noise floor)"))
            lines += ["", note + "."]
        return "\n".join(lines)


def _as_record(row: Any) -> Record:
    if isinstance(row, Record):
        return row
    if isinstance(row, Mapping):
        missing = [k for k in ("kind", "seed", "value") if k not in row]
        if missing:
            raise ValueError(f"a record needs kind, seed and value; {row!r} lacks {', '.join(missing)}")
        return Record(str(row["kind"]), row["seed"], row["value"])
    if isinstance(row, (tuple, list)) and len(row) == 3:
        return Record(str(row[0]), row[1], row[2])
    raise ValueError(f"a record is a Record, a mapping with kind, seed and value, or a (kind, seed, value) "
                     f"tuple; got {row!r}")


def _group(records: Iterable[Any]) -> dict[str, dict[Hashable, float]]:
    values: dict[str, dict[Hashable, float]] = {}
    for row in records:
        r = _as_record(row)
        if isinstance(r.value, bool) or not isinstance(r.value, numbers.Real) or not math.isfinite(r.value):
            raise ValueError(f"{r.kind}, seed {r.seed!r}: expected a finite number, got {r.value!r}")
        seeds = values.setdefault(r.kind, {})
        if r.seed in seeds:
            raise ValueError(f"{r.kind}, seed {r.seed!r}: two records (which one is the reading?)")
        seeds[r.seed] = float(r.value)
    return values


def _claims(claims: Mapping[str, str | Claim] | Sequence[str | Claim], reference: str) -> list[Claim]:
    items = list(claims.items()) if isinstance(claims, Mapping) else [(None, c) for c in claims]
    out: list[Claim] = []
    for key, claim in items:
        c = claim if isinstance(claim, Claim) else parse_claim(claim)
        if key is not None and key != c.kind:
            raise ValueError(f"the claim {c.text!r} is filed under {key!r}")
        if c.reference != reference:
            raise ValueError(f"the claim {c.text!r} names {c.reference!r}, but the table's reference is "
                             f"{reference!r}")
        if any(o.kind == c.kind for o in out):
            raise ValueError(f"two claims about {c.kind!r}")
        out.append(c)
    if not out:
        raise ValueError("a table needs at least one claim")
    return out


def _baseline_check(kind: str, values: Mapping[Hashable, float], baseline: float, sign: float,
                    floor: float, has_floor: bool, alpha: float) -> BaselineCheck:
    gains = [sign * (v - baseline) for v in values.values()]
    if len(gains) == 1:
        return BaselineCheck(kind, 1, gains[0], math.nan, has_floor and gains[0] > floor, screened=has_floor)
    c = summarize_differences(gains, confidence=1 - 2 * alpha, alpha=alpha)  # its low: one-sided 1 - α bound
    return BaselineCheck(kind, c.n, c.mean, c.low, one_sided_p(c, floor, "greater") <= alpha)


def _informative(baseline: float | None, checks: Sequence[BaselineCheck]) -> bool:
    """Rule 1's screen: no baseline, a row that beats it, or no row that could be screened."""
    return baseline is None or any(ch.beats for ch in checks) or not any(ch.screened for ch in checks)


def _directional_p(c: PairedComparison, floor: float) -> float:
    if not c.readable:
        return math.nan
    return min(1.0, 2.0 * min(one_sided_p(c, floor, "greater"), one_sided_p(c, -floor, "less")))


def _matches_p(c: PairedComparison, margin: float) -> float:
    if not c.readable:
        return math.nan
    p_eq = max(one_sided_p(c, -margin, "greater"), one_sided_p(c, margin, "less"))
    p_out = one_sided_p(c, margin, "greater") if c.mean >= 0 else one_sided_p(c, -margin, "less")
    return min(p_eq, p_out)


def _read(claim: Claim, c: PairedComparison, p: float, p_adj: float, significant: bool, sign: float,
          floor: float, fmt: Any, informative: bool) -> Verdict:
    def verdict(outcome: Outcome, text: str, detectable: float) -> Verdict:
        return Verdict(claim, c, p, p_adj, outcome, text, detectable)

    if not informative:
        return verdict("uninformative", UNINFORMATIVE, math.nan)
    if not c.readable:
        return verdict("one seed", ONE_SEED, math.nan)
    size = abs(c.mean)
    if claim.relation == "matches":
        margin = float(claim.margin)  # type: ignore[arg-type]
        if significant and size < margin:
            if margin < floor:
                return verdict("within noise", f"within noise (the margin of {fmt(margin)} is below the noise "
                                               f"floor of {fmt(floor)})", c.mde)
            return verdict("holds", HOLDS, c.mde)
        if significant:
            if size < floor:
                return verdict("within noise", f"within noise (the difference, {fmt(size)}, is below the noise "
                                               f"floor of {fmt(floor)})", c.mde)
            return verdict("reversed", REVERSED, c.mde)
        return verdict("within noise", f"within noise (could not detect less than {fmt(c.mde)})", c.mde)
    detectable = floor + c.mde
    if significant:
        claimed = sign if claim.relation == "better" else -sign  # the sign d takes if the claim is right
        return verdict("holds", HOLDS, detectable) if c.mean * claimed > 0 else verdict("reversed", REVERSED,
                                                                                        detectable)
    if c.zero_variance and c.mean == 0.0:
        # every pair tied (a ceiling both reach, e.g. accuracy 1.0): "could not detect less than 0" would read as
        # a contradiction, so the text says what the record shows
        text = f"within noise (equal to {claim.reference} on every seed: no difference to read)"
    elif floor == 0.0:
        text = f"within noise (could not detect less than {fmt(detectable)})"
    elif size < floor:
        text = (f"within noise (the difference, {fmt(size)}, is below the noise floor of {fmt(floor)}; could not "
                f"detect less than {fmt(detectable)})")
    else:
        text = (f"within noise (could not detect less than {fmt(detectable)}: the noise floor {fmt(floor)} plus "
                f"{fmt(c.mde)})")
    return verdict("within noise", text, detectable)


def table_verdicts(records: Iterable[Record | Mapping[str, Any] | tuple[str, Hashable, float]],
                   claims: Mapping[str, str | Claim] | Sequence[str | Claim], *, reference: str = "V",
                   direction: str | None = None, metric: str | None = None, baseline: float | None = None,
                   noise_floor: float | None = None, unit: str = "", precision: int = 3, alpha: float = 0.05,
                   confidence: float = 0.95, power: float = 0.8, interval: Interval = "t",
                   n_resamples: int = 10_000, bootstrap_seed: int = 0) -> TableVerdicts:
    """The verdicts of one table (the module's rules), from its records and its claims.

    Args:
        records: ``(kind, seed, value)`` rows (:class:`Record`, mappings with those keys, or tuples).
        claims: per kind, a :class:`Claim` or its text ("R is worse than V", "D matches V within 0.02").
        reference: the kind every claim is compared with.
        direction / metric: exactly one: "min"/"max" (or "lower"/"higher"), or a metric name.
        baseline: the task's trivial baseline on this metric (majority class, unigram model), or None.
        noise_floor: the largest difference same-seed reruns show (e.g. across CPUs), or None.
        unit / precision: how amounts are written in the verdicts ("nats", 3 decimals).
        alpha / confidence / power: the test's level, the interval's confidence, the MDE's power.
        interval: "t" or "bootstrap" (seeded by ``bootstrap_seed``, ``n_resamples`` resamples).

    Raises:
        ValueError: unreadable records or claims, a claimed kind or the reference without records, a kind with no
            seed in common with the reference, a negative noise floor or a non-finite baseline.
    """
    sign = 1.0 if resolve_direction(direction, metric) == "max" else -1.0
    dir_name: Direction = "max" if sign > 0 else "min"
    if noise_floor is not None and (not math.isfinite(noise_floor) or noise_floor < 0):
        raise ValueError(f"a noise floor is a finite amount >= 0, got {noise_floor!r}")
    if baseline is not None and not math.isfinite(baseline):
        raise ValueError(f"a baseline is a finite value, got {baseline!r}")
    floor = float(noise_floor or 0.0)
    values = _group(records)
    wanted = _claims(claims, reference)
    for name in [reference, *(c.kind for c in wanted)]:
        if name not in values:
            raise ValueError(f"no records of {name!r}; records of: {', '.join(values) or 'nothing'}")
    checks: tuple[BaselineCheck, ...] = ()
    if baseline is not None:
        checks = tuple(_baseline_check(kind, seeds, float(baseline), sign, floor, noise_floor is not None, alpha)
                       for kind, seeds in values.items())
    informative = _informative(baseline, checks)
    comparisons = [paired_comparison(values[c.kind], values[reference], confidence=confidence, interval=interval,
                                     alpha=alpha, power=power, n_resamples=n_resamples,
                                     bootstrap_seed=bootstrap_seed, kind_name=c.kind, reference_name=reference)
                   for c in wanted]
    p_values = [_matches_p(comp, c.margin) if c.margin is not None else _directional_p(comp, floor)
                for c, comp in zip(wanted, comparisons, strict=True)]
    corrected = holm(p_values, alpha=alpha)

    def fmt(x: float) -> str:
        return format_amount(x, unit, precision)

    verdicts = tuple(_read(c, comp, p, p_adj, held, sign, floor, fmt, informative)
                     for c, comp, p, p_adj, held in zip(wanted, comparisons, p_values, corrected.adjusted,
                                                        corrected.holds, strict=True))
    return TableVerdicts(reference=reference, direction=dir_name, verdicts=verdicts, holm=corrected,
                         baseline=None if baseline is None else float(baseline), baseline_checks=checks,
                         noise_floor=noise_floor, unit=unit, precision=precision, alpha=alpha,
                         confidence=confidence, interval=interval)
