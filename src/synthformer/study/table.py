"""The results table of a study: per variant, mean and standard deviation over seeds, and the difference to V.

Each row gives the task's main metric on the validation split (at the end of training) and, when evaluated, on
the test split, as ``mean ± std`` over the seeds (the sample standard deviation, ``ddof=1``), with parameters,
training steps per second and wall time (means over seeds). The difference to the reference (V at the same grid
point; without V there, the first kind at that point, or the first grid point when each point has one kind) is
tested with Welch's t-test (unequal variances) on the per-seed validation values; ``*`` marks p < 0.05. With one
seed there is no spread and no test ("n/a").
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .manifest import Variant
from .runs import RunRecord

__all__ = ["METRIC_NAMES", "PERCENT_METRICS", "StudyTable", "VariantRow", "format_value", "mean_std", "summarize",
           "welch_p", "write_tables"]

#: How a metric is named in table headers.
METRIC_NAMES = {"bits_per_character": "bits/char", "bits_per_byte": "bits/byte", "accuracy": "accuracy",
                "bleu": "BLEU", "chrf": "chrF", "exact_match": "exact match", "loss": "loss"}
#: Metrics that are fractions, shown in percent.
PERCENT_METRICS = ("accuracy", "exact_match")
_LOWER_IS_BETTER = ("loss", "bits_per_character", "bits_per_byte", "perplexity")
SIGNIFICANCE = 0.05


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (``ddof=1``; nan for fewer than 2 values) of the finite values."""
    import numpy as np

    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if x.size == 0:
        return math.nan, math.nan
    return float(x.mean()), float(x.std(ddof=1)) if x.size > 1 else math.nan


def welch_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of Welch's t-test (``scipy.stats.ttest_ind(equal_var=False)``); nan with fewer than 2
    values on a side, or when both sides have no spread."""
    from scipy import stats

    a = [v for v in a if math.isfinite(v)]
    b = [v for v in b if math.isfinite(v)]
    if len(a) < 2 or len(b) < 2:
        return math.nan
    return float(stats.ttest_ind(a, b, equal_var=False).pvalue)


@dataclass
class VariantRow:
    """One row of the table."""

    variant: str
    label: str
    seeds: int
    valid: list[float]
    """Per seed, in seed order."""
    valid_mean: float
    valid_std: float
    test: list[float] | None
    test_mean: float | None
    test_std: float | None
    valid_loss_mean: float
    parameters: int
    steps_per_second: float
    wall_seconds: float
    reference: str | None
    """The variant the difference is taken to (None for the reference itself)."""
    diff: float | None = None
    """Mean validation metric minus the reference's."""
    p_value: float | None = None
    """Welch's t-test of the difference (nan: not testable, e.g. one seed)."""

    @property
    def significant(self) -> bool | None:
        """p < 0.05; None when there is no test."""
        if self.p_value is None or not math.isfinite(self.p_value):
            return None
        return self.p_value < SIGNIFICANCE


@dataclass
class StudyTable:
    """The rows and what they measure."""

    metric: str
    rows: list[VariantRow]
    runs: list[RunRecord] = field(default_factory=list)

    @property
    def has_test(self) -> bool:
        """True if any run was evaluated on a test split."""
        return any(r.test is not None for r in self.rows)

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict (``results.json``)."""
        rows = [{**asdict(r), "significant": r.significant} for r in self.rows]
        return {"metric": self.metric, "lower_is_better": self.metric in _LOWER_IS_BETTER,
                "significance_level": SIGNIFICANCE, "rows": rows, "runs": [r.to_json() for r in self.runs]}


def _reference(variant: Variant, variants: Sequence[Variant]) -> Variant:
    """V at the same grid point; else the first kind at that point when it has several; else the first variant.

    The last case is a grid without V at its points, such as the paper's Table 9 (R over ``model.n_heads``): each
    point then compares with the first point, instead of every row being its own reference with no difference.
    """
    same_point = [v for v in variants if v.point == variant.point]
    for v in same_point:
        if v.kind == "V":
            return v
    return same_point[0] if len(same_point) > 1 else variants[0]


def summarize(records: Sequence[RunRecord], variants: Sequence[Variant], metric: str) -> StudyTable:
    """Aggregate the runs' records into one row per variant (variants without a record are left out)."""
    by_variant: dict[str, list[RunRecord]] = {}
    for record in records:
        by_variant.setdefault(record.variant, []).append(record)
    rows = []
    for variant in variants:
        runs = sorted(by_variant.get(variant.name, []), key=lambda r: r.seed)
        if not runs:
            continue
        valid = [r.valid_metric for r in runs]
        tests = [r.test_metric for r in runs if r.test_metric is not None]
        test = [float(t) for t in tests] if tests else None
        test_mean, test_std = mean_std(test) if test else (None, None)
        ref = _reference(variant, variants)
        rows.append(VariantRow(
            variant=variant.name, label=variant.label, seeds=len(runs), valid=valid,
            valid_mean=mean_std(valid)[0], valid_std=mean_std(valid)[1], test=test, test_mean=test_mean,
            test_std=test_std, valid_loss_mean=mean_std([r.valid_loss for r in runs])[0],
            parameters=runs[0].parameters, steps_per_second=mean_std([r.steps_per_second for r in runs])[0],
            wall_seconds=mean_std([r.wall_seconds for r in runs])[0],
            reference=None if ref.name == variant.name else ref.name,
        ))
    means = {r.variant: r for r in rows}
    for row in rows:
        ref_row = means.get(row.reference) if row.reference else None
        if ref_row is not None:
            row.diff = row.valid_mean - ref_row.valid_mean
            row.p_value = welch_p(row.valid, ref_row.valid)
    return StudyTable(metric, rows, list(records))


def format_value(metric: str, value: float | None, std: float | None = None, signed: bool = False) -> str:
    """``1.2345 ± 0.0100`` (accuracy in percent: ``81.20 ± 0.50%``); ``-`` for no value."""
    if value is None or not math.isfinite(value):
        return "-"
    scale, unit, digits = (100.0, "%", 2) if metric in PERCENT_METRICS else (1.0, "", 2 if metric in ("bleu", "chrf")
                                                                                  else 4)
    text = f"{scale * value:{'+' if signed else ''}.{digits}f}"
    if std is not None and math.isfinite(std):
        text += f" ± {scale * std:.{digits}f}"
    return text + unit


def _diff_text(row: VariantRow, metric: str) -> tuple[str, str]:
    if row.reference is None:
        return "(reference)", ""
    diff = format_value(metric, row.diff, signed=True)
    if row.p_value is None or not math.isfinite(row.p_value):
        return diff, "n/a"
    return diff, f"{row.p_value:.3f}" + (" *" if row.significant else "")


def table_cells(table: StudyTable) -> tuple[list[str], list[list[str]]]:
    """Headers and formatted cells of the table (shared by the Markdown and HTML forms)."""
    name = METRIC_NAMES.get(table.metric, table.metric)
    headers = ["model", "seeds", f"valid {name}"] + ([f"test {name}"] if table.has_test else [])
    headers += [f"Δ valid {name}", "p (Welch)", "params", "steps/s", "wall s"]
    body = []
    for row in table.rows:
        diff, p = _diff_text(row, table.metric)
        if row.reference is not None and row.reference.split(" ")[0] != "V":  # the note says "to V"
            diff += f" vs {row.reference}"
        cells = [row.label, str(row.seeds), format_value(table.metric, row.valid_mean, row.valid_std)]
        if table.has_test:
            cells.append(format_value(table.metric, row.test_mean, row.test_std))
        cells += [diff, p, f"{row.parameters:,}", f"{row.steps_per_second:.2f}", f"{row.wall_seconds:.1f}"]
        body.append(cells)
    return headers, body


def table_note(table: StudyTable) -> str:
    """The sentence under the table saying what the numbers are."""
    better = "lower" if table.metric in _LOWER_IS_BETTER else "higher"
    return (f"Mean ± sample standard deviation over seeds ({better} is better). Δ: difference of the mean "
            "validation metric to V at the same grid point (or to the variant named after 'vs'); p: Welch's "
            f"t-test on the per-seed values, * p < {SIGNIFICANCE}; n/a with one seed.")


def format_markdown(table: StudyTable) -> str:
    """The table in Markdown, with its note."""
    headers, body = table_cells(table)
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return "\n".join([*lines, "", table_note(table)])


def format_csv(table: StudyTable) -> str:
    """One line per variant with unformatted numbers (NaN as empty)."""
    fields = ["variant", "label", "seeds", "valid_mean", "valid_std", "test_mean", "test_std", "valid_loss_mean",
              "reference", "diff", "p_value", "significant", "parameters", "steps_per_second", "wall_seconds"]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["metric", *fields])

    def cell(value: Any) -> Any:
        return "" if value is None or (isinstance(value, float) and not math.isfinite(value)) else value

    for row in table.rows:
        data = {**asdict(row), "significant": row.significant}
        writer.writerow([table.metric, *(cell(data[f]) for f in fields)])
    return buf.getvalue()


def _json_safe(value: Any) -> Any:
    """NaN and infinities as null (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def write_tables(table: StudyTable, out: Path) -> dict[str, Path]:
    """Write ``results.md``, ``results.csv`` and ``results.json`` into ``out``; returns the paths by format."""
    from synthformer.common import atomic_write_text

    paths = {"md": out / "results.md", "csv": out / "results.csv", "json": out / "results.json"}
    atomic_write_text(paths["md"], format_markdown(table) + "\n")
    atomic_write_text(paths["csv"], format_csv(table))
    atomic_write_text(paths["json"], json.dumps(_json_safe(table.to_json()), indent=1) + "\n")
    return paths
