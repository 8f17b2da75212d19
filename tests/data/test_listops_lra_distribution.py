"""The project's ListOps generator at LRA's settings draws from the distribution of LRA's own script: lengths,
depths and labels of a generated sample against the shared sample that LRA's script made (two-sample tests at the
1% level; the seed is fixed, so a pass or a failure repeats exactly).

Every expression of 500+ tokens reaches the depth limit (10) in both samples, so the depth compared is the mean
depth of an expression's digits: how deep its leaves sit, which the leaf probability and argument counts set.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from scipy import stats

from synthformer.tasks.suites.lra import generate_listops, read_listops_tsv
from synthformer.tasks.suites.lra.listops import DIGITS, END, OPERATORS

#: configs/lra_listops.yaml's generator options
LRA = {"min_length": 500, "max_length": 2000, "max_depth": 10, "max_args": 10}
GENERATED = 80  # about 10 ms each
ALPHA = 0.01
#: one pytest-xdist worker runs the module: both samples (the module fixtures) are read and generated once
pytestmark = pytest.mark.xdist_group("listops-lra-samples")


def features(sources: list[str]) -> tuple[list[int], list[float], list[int]]:
    """Length in model tokens (parentheses dropped), mean digit depth and tree depth (the digit level counted)."""
    step = {**dict.fromkeys(OPERATORS, 1), END: -1}
    lengths, mean_depths, depths = [], [], []
    for source in sources:
        open_ops, length, leaves = 0, 0, []
        for tok in source.split():
            if tok in DIGITS:
                leaves.append(open_ops + 1)
            elif tok in step:
                open_ops += step[tok]
            else:
                continue  # "(" and ")": not model tokens
            length += 1
        lengths.append(length)
        mean_depths.append(sum(leaves) / len(leaves))
        depths.append(max(leaves))
    return lengths, mean_depths, depths


@pytest.fixture(scope="module")
def lra(shared_data: Path) -> tuple[list, ...]:
    folder = shared_data / "lra_listops_sample"
    sample = read_listops_tsv(folder / "basic_val.tsv")  # 200 expressions
    return (*features([ex.source for ex in sample]), [ex.target for ex in sample])


@pytest.fixture(scope="module")
def ours() -> tuple[list, ...]:
    sample = generate_listops(GENERATED, seed=2026, **LRA)
    return (*features([ex.source for ex in sample]), [ex.target for ex in sample])


def contingency_p(a: list[int], b: list[int], merge_below: int) -> float:
    """Chi-square test that ``a`` and ``b`` come from one categorical distribution; values rarer than
    ``merge_below`` in the pooled sample are merged into one category (the test needs expected counts >= 5)."""
    pooled = Counter(a + b)
    key = {v: (str(v) if n >= merge_below else "rare") for v, n in pooled.items()}
    cats = sorted(set(key.values()))
    table = [[Counter(key[v] for v in sample)[c] for c in cats] for sample in (a, b)]
    return float(stats.chi2_contingency(table).pvalue)


def test_lengths_follow_lra(lra, ours) -> None:
    assert all(LRA["min_length"] <= n <= LRA["max_length"] for n in ours[0])
    assert stats.ks_2samp(lra[0], ours[0]).pvalue > ALPHA


def test_depths_follow_lra(lra, ours) -> None:
    assert set(ours[2]) == set(lra[2]) == {LRA["max_depth"]}
    assert stats.ks_2samp(lra[1], ours[1]).pvalue > ALPHA


def test_labels_follow_lra(lra, ours) -> None:
    assert contingency_p(lra[3], ours[3], merge_below=20) > ALPHA
