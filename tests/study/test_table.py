"""The results table's numbers against numpy and scipy on known values, and its three forms."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest
from scipy import stats

from synthformer.study import RunRecord, Variant, mean_std, summarize, welch_p
from synthformer.study.table import format_csv, format_markdown, write_tables

V = [1.50, 1.52, 1.49]
R = [1.61, 1.65, 1.63]
D = [1.505, 1.515, 1.51]


def record(variant: str, seed: int, value: float, test: float | None = None) -> RunRecord:
    return RunRecord(variant=variant, seed=seed, run_dir=f"/runs/{variant}/seed{seed}", parameters=1000,
                     steps=10, metric="bits_per_character", valid_metric=value, valid_loss=value * 0.69,
                     test_metric=test, steps_per_second=5.0 + seed, wall_seconds=2.0 * (seed + 1))


def test_mean_std_and_welch_match_numpy_and_scipy() -> None:
    mean, std = mean_std(V)
    assert mean == pytest.approx(np.mean(V)) and std == pytest.approx(np.std(V, ddof=1))
    assert welch_p(R, V) == pytest.approx(stats.ttest_ind(R, V, equal_var=False).pvalue)
    # by hand: Welch's t and its Satterthwaite degrees of freedom
    va, vb = np.var(R, ddof=1) / 3, np.var(V, ddof=1) / 3
    t = (np.mean(R) - np.mean(V)) / math.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 2)
    assert welch_p(R, V) == pytest.approx(2 * stats.t.sf(abs(t), dof))
    assert math.isnan(mean_std([2.0])[1]) and mean_std([2.0])[0] == 2.0
    assert math.isnan(welch_p([1.0], [1.0, 2.0]))


def test_summarize_rows_differences_and_significance() -> None:
    variants = [Variant("V"), Variant("R"), Variant("D")]
    records = [record(n, s, x, test=x + 0.1) for n, xs in (("V", V), ("R", R), ("D", D)) for s, x in enumerate(xs)]
    table = summarize(records, variants, "bits_per_character")
    rows = {r.variant: r for r in table.rows}
    assert [r.label for r in table.rows] == ["Vanilla (V)", "Random (R)", "Dense (D)"]
    assert rows["V"].reference is None and rows["V"].diff is None
    assert rows["R"].valid_mean == pytest.approx(np.mean(R)) and rows["R"].valid_std == pytest.approx(np.std(R, ddof=1))
    assert rows["R"].diff == pytest.approx(np.mean(R) - np.mean(V))
    assert rows["R"].p_value == pytest.approx(stats.ttest_ind(R, V, equal_var=False).pvalue)
    assert rows["R"].significant is True and rows["D"].significant is False  # R is clearly worse, D is not
    assert rows["D"].test_mean == pytest.approx(np.mean(D) + 0.1)
    assert rows["V"].steps_per_second == pytest.approx(6.0) and rows["V"].wall_seconds == pytest.approx(4.0)
    md = format_markdown(table)
    assert "| Random (R) | 3 | 1.6300 ± 0.0200 | 1.7300 ± 0.0200 | +0.1267 |" in md
    assert " * |" in md.splitlines()[3] and "test bits/char" in md.splitlines()[0]


def test_one_seed_says_n_a_and_csv_json_agree(tmp_path) -> None:
    variants = [Variant("V"), Variant("R+V")]
    table = summarize([record("V", 0, 1.5), record("R+V", 0, 1.4)], variants, "bits_per_character")
    assert "| n/a |" in format_markdown(table)
    assert table.rows[1].p_value is not None and math.isnan(table.rows[1].p_value)
    paths = write_tables(table, tmp_path)
    rows = list(csv.DictReader(io.StringIO(paths["csv"].read_text())))
    assert [r["variant"] for r in rows] == ["V", "R+V"] and rows[1]["p_value"] == "" and rows[1]["valid_std"] == ""
    assert float(rows[1]["diff"]) == pytest.approx(-0.1)
    data = json.loads(paths["json"].read_text())  # strict JSON: NaN written as null
    assert data["rows"][1]["p_value"] is None and data["rows"][1]["significant"] is None
    assert len(data["runs"]) == 2 and data["lower_is_better"] is True
    assert format_csv(table).startswith("metric,variant,label,seeds,valid_mean")


def test_reference_is_v_at_the_same_grid_point() -> None:
    variants = [Variant(k, (("model.n_heads", h),)) for k in ("V", "R") for h in ("2", "4")]
    records = [record(v.name, s, 1.0 + i + 0.01 * s) for i, v in enumerate(variants) for s in range(2)]
    table = summarize(records, variants, "accuracy")
    rows = {r.variant: r for r in table.rows}
    assert rows["R model.n_heads=4"].reference == "V model.n_heads=4"
    assert rows["R model.n_heads=4"].label == "Random (R), n_heads=4"
    assert "%" in format_markdown(table)  # accuracy in percent


def test_a_grid_of_one_kind_without_v_compares_each_point_with_the_first() -> None:
    # the paper's Table 9: R over n_heads, no V anywhere; each row is compared with n_heads=2
    variants = [Variant("R", (("model.n_heads", h),)) for h in ("2", "4", "8")]
    records = [record(v.name, s, 10.0 + i + 0.1 * s) for i, v in enumerate(variants) for s in range(2)]
    table = summarize(records, variants, "bleu")
    rows = {r.variant: r for r in table.rows}
    assert rows["R model.n_heads=2"].reference is None
    assert rows["R model.n_heads=8"].reference == "R model.n_heads=2"
    assert rows["R model.n_heads=8"].diff == pytest.approx(2.0)
    text = format_markdown(table)
    assert text.count("(reference)") == 1 and "+2.00 vs R model.n_heads=2" in text
