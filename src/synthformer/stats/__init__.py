"""Statistics for reading tables of kinds trained with seeds: paired comparisons, Holm's correction, verdicts.

The rule every verdict of the result pages follows (each module documents its formulas and choices):

* :mod:`~synthformer.stats.paired`: a kind against the reference by paired differences over the seeds both have
  (the same seed gives every kind the same initialisation stream and batch order): mean difference, its 95%
  interval (Student t, or a seeded percentile bootstrap), the paired t-test's p-value and the minimum detectable
  effect at 80% power and α = 0.05 for that n and the observed standard deviation of the differences.
* :mod:`~synthformer.stats.holm`: Holm's step-down correction across the comparisons of one table.
* :mod:`~synthformer.stats.verdicts`: the verdict of each claim of a table, computed from its records:
  "holds", "reversed", "within noise (could not detect less than X)", "uninformative (no model beats the
  trivial baseline)" or "one seed: not read", and a Markdown rendering.

Example::

    from synthformer.stats import table_verdicts

    records = [("V", 0, 2.31), ("V", 1, 2.35), ("V", 2, 2.29),
               ("R", 0, 2.52), ("R", 1, 2.55), ("R", 2, 2.50)]
    table = table_verdicts(records, {"R": "R is worse than V"}, metric="loss", unit="nats")
    table.verdict("R").text   # "holds"
"""

from __future__ import annotations

from .holm import HolmResult, holm
from .paired import (
    BOOTSTRAP_MIN_PAIRS,
    PairedComparison,
    detectable_dz,
    minimum_detectable_effect,
    one_sided_p,
    paired_comparison,
    paired_t_power,
    summarize_differences,
)
from .verdicts import (
    HOLDS,
    ONE_SEED,
    REVERSED,
    UNINFORMATIVE,
    BaselineCheck,
    Claim,
    Record,
    TableVerdicts,
    Verdict,
    format_amount,
    parse_claim,
    resolve_direction,
    table_verdicts,
)

__all__ = [
    "BOOTSTRAP_MIN_PAIRS", "HOLDS", "ONE_SEED", "REVERSED", "UNINFORMATIVE", "BaselineCheck", "Claim",
    "HolmResult", "PairedComparison", "Record", "TableVerdicts", "Verdict", "detectable_dz", "format_amount",
    "holm", "minimum_detectable_effect", "one_sided_p", "paired_comparison", "paired_t_power", "parse_claim",
    "resolve_direction", "summarize_differences", "table_verdicts",
]
