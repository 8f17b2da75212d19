"""Verdicts of a table computed from constructed records: holds, reversed, within noise, Holm across the table,
zero variance, one seed, the trivial baseline, the noise floor, equivalence claims and the Markdown rendering."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synthformer.stats import (
    HOLDS,
    ONE_SEED,
    REVERSED,
    UNINFORMATIVE,
    Claim,
    Record,
    detectable_dz,
    parse_claim,
    resolve_direction,
    table_verdicts,
)

V_LOSS = [2.31, 2.35, 2.29, 2.33]


def rows(kind: str, values: list[float]) -> list[tuple[str, int, float]]:
    return [(kind, seed, value) for seed, value in enumerate(values)]


def with_differences(kind: str, diffs: list[float], ref: list[float] = V_LOSS) -> list[tuple[str, int, float]]:
    return rows(kind, [r + d for r, d in zip(ref, diffs, strict=True)])


def test_a_real_difference_is_detected():
    records = rows("V", V_LOSS) + with_differences("R", [0.21, 0.19, 0.22, 0.20])
    table = table_verdicts(records, {"R": "R is worse than V"}, metric="loss", unit="nats")
    v = table.verdict("R")
    assert v.outcome == "holds" and v.text == HOLDS
    assert v.comparison.mean == pytest.approx(0.205) and v.p_value < 0.001
    # the same numbers with the claim the other way round, or a higher-is-better metric, read reversed
    assert table_verdicts(records, ["R is better than V"], metric="loss").verdict("R").text == REVERSED
    assert table_verdicts(records, ["R is worse than V"], direction="max").verdict("R").text == REVERSED


def test_the_reverse_is_detected():
    records = rows("V", [0.86, 0.87, 0.85]) + rows("D", [0.83, 0.835, 0.82])
    v = table_verdicts(records, {"D": "D is better than V"}, metric="accuracy").verdict("D")
    assert v.outcome == "reversed" and v.text == REVERSED


def test_an_equal_pair_is_within_noise_with_the_difference_it_could_have_detected():
    diffs = [0.01, -0.01, 0.02, -0.02]
    records = rows("V", V_LOSS) + with_differences("FR", diffs)
    v = table_verdicts(records, ["FR is worse than V"], metric="eval_loss", unit="nats").verdict("FR")
    sd = (sum(d * d for d in diffs) / 3) ** 0.5  # the mean is 0
    mde = sd * 2.1279  # the exact paired-t dz for n = 4 at 80% power, alpha 0.05 (about 0.0389 nats)
    assert v.outcome == "within noise"
    assert v.detectable == pytest.approx(mde, rel=1e-3)
    assert v.text == f"within noise (could not detect less than {mde:.3f} nats)"


def test_holm_runs_across_the_table():
    a = [0.10, 0.20, 0.15, 0.05]  # paired t p = 0.030 alone
    records = (rows("V", V_LOSS) + with_differences("A", a) + with_differences("B", [0.05, -0.02, 0.1, 0.03])
               + with_differences("C", [0.04, -0.05, 0.08, 0.02]))
    alone = table_verdicts(records, ["A is worse than V"], metric="loss").verdict("A")
    assert alone.text == HOLDS and alone.p_value == pytest.approx(0.0305, abs=1e-4)
    table = table_verdicts(records, ["A is worse than V", "B is worse than V", "C is worse than V"], metric="loss")
    v = table.verdict("A")
    assert v.p_value == alone.p_value and v.p_adjusted == pytest.approx(3 * alone.p_value)
    assert v.outcome == "within noise"
    assert table.holm.m == 3 and table.holm.holds == (False, False, False)


def test_zero_variance_differences():
    records = rows("V", V_LOSS) + with_differences("R", [0.0625] * 4) + with_differences("D", [0.0] * 4)
    table = table_verdicts(records, ["R is worse than V", "D is worse than V"], metric="loss", unit="nats")
    r, d = table.verdict("R"), table.verdict("D")
    assert r.comparison.zero_variance and r.p_value == 0.0 and r.text == HOLDS
    assert d.comparison.zero_variance and d.p_value == 1.0
    assert d.text == "within noise (equal to V on every seed: no difference to read)" and d.outcome == "within noise"
    # a floor above the identical differences keeps them from holding
    floored = table_verdicts(records, ["R is worse than V"], metric="loss", unit="nats", noise_floor=0.07)
    assert floored.verdict("R").outcome == "within noise"


def test_one_seed_is_not_read_and_is_not_in_the_holm_family():
    records = rows("V", V_LOSS) + [("M", 2, 3.5)] + with_differences("R", [0.21, 0.19, 0.22, 0.20])
    table = table_verdicts(records, ["M is worse than V", "R is worse than V"], metric="loss")
    m = table.verdict("M")
    assert m.text == ONE_SEED and m.outcome == "one seed" and m.comparison.n == 1
    assert table.holm.m == 1 and table.verdict("R").p_adjusted == table.verdict("R").p_value


def test_a_table_no_model_of_which_beats_the_baseline_is_uninformative():
    # majority-class accuracy 0.5; every row at chance, although R is clearly below V
    records = rows("V", [0.502, 0.499, 0.503, 0.500]) + rows("R", [0.45, 0.44, 0.46, 0.45])
    table = table_verdicts(records, ["R is worse than V"], metric="accuracy", baseline=0.5)
    assert not table.informative and table.verdict("R").text == UNINFORMATIVE
    assert all(not check.beats for check in table.baseline_checks)
    # without the baseline the difference holds; with a row clearly above chance the table is read
    assert table_verdicts(records, ["R is worse than V"], metric="accuracy").verdict("R").text == HOLDS
    better = rows("V", [0.86, 0.87, 0.85, 0.86]) + rows("R", [0.80, 0.81, 0.79, 0.80])
    read = table_verdicts(better, ["R is worse than V"], metric="accuracy", baseline=0.5)
    assert read.informative and read.verdict("R").text == HOLDS


def test_beating_the_baseline_must_exceed_the_noise_floor_and_one_seed_needs_a_floor():
    records = rows("V", [6.00, 5.99, 6.00]) + rows("R", [6.02, 6.03, 6.02])  # unigram loss 6.014
    table = table_verdicts(records, ["R is worse than V"], metric="loss", baseline=6.014, noise_floor=0.017)
    assert not table.informative  # V is 0.01 below the unigram model: less than the floor
    lone = [("V", 0, 4.0), ("R", 0, 4.5)]
    assert table_verdicts(lone, ["R is worse than V"], metric="loss", baseline=6.0, noise_floor=0.017).informative
    # without a floor a one-seed row is not screened: a table of such rows is not called uninformative (that would
    # say no model beats the baseline, which no record shows: V is 2 nats below it), its claims are one seed
    unscreened = table_verdicts(lone, ["R is worse than V"], metric="loss", baseline=6.0)
    assert unscreened.informative and unscreened.verdict("R").text == ONE_SEED
    assert not any(check.screened for check in unscreened.baseline_checks)
    assert "not screened (one seed per row, no noise floor)" in unscreened.to_markdown()
    # a screened row that fails the check decides, whatever a lone row beside it shows
    mixed = rows("V", [6.01, 6.02, 6.015]) + rows("R", [6.03, 6.02, 6.04]) + [("D", 0, 3.0)]
    screened = table_verdicts(mixed, ["R is worse than V", "D is worse than V"], metric="loss", baseline=6.0)
    assert not screened.informative and screened.verdict("R").text == UNINFORMATIVE


def test_a_significant_difference_below_the_noise_floor_never_holds():
    diffs = [0.010, 0.011, 0.009, 0.010]  # significant alone (p < 0.001) but below a 0.017-nat floor
    records = rows("V", V_LOSS) + with_differences("R", diffs)
    plain = table_verdicts(records, ["R is worse than V"], metric="loss", unit="nats").verdict("R")
    assert plain.text == HOLDS
    v = table_verdicts(records, ["R is worse than V"], metric="loss", unit="nats", noise_floor=0.017).verdict("R")
    assert v.outcome == "within noise"
    assert v.text.startswith("within noise (the difference, 0.010 nats, is below the noise floor of 0.017 nats;")
    assert v.detectable == pytest.approx(0.017 + v.comparison.mde)


def test_a_difference_above_the_floor_but_not_significantly_so_names_the_floor():
    records = rows("V", V_LOSS) + with_differences("R", [0.01, 0.05, 0.02, 0.04])
    v = table_verdicts(records, ["R is worse than V"], metric="loss", unit="nats", noise_floor=0.017).verdict("R")
    assert v.outcome == "within noise" and "the noise floor 0.017 nats plus" in v.text
    far = table_verdicts(rows("V", V_LOSS) + with_differences("R", [0.21, 0.19, 0.22, 0.20]),
                         ["R is worse than V"], metric="loss", noise_floor=0.017)
    assert far.verdict("R").text == HOLDS


def test_equivalence_claims():
    close = rows("V", V_LOSS) + with_differences("D", [0.004, -0.003, 0.002, -0.001])
    assert table_verdicts(close, ["D matches V within 0.02"], metric="loss").verdict("D").text == HOLDS
    far = rows("V", V_LOSS) + with_differences("D", [0.21, 0.19, 0.22, 0.20])
    assert table_verdicts(far, ["D matches V within 0.02 nats"], metric="loss").verdict("D").text == REVERSED
    noisy = rows("V", V_LOSS) + with_differences("D", [0.04, -0.03, 0.02, -0.05])
    assert table_verdicts(noisy, ["D matches V within 0.02"], metric="loss").verdict("D").outcome == "within noise"
    # a margin below the noise floor cannot be resolved by these runs
    v = table_verdicts(close, ["D matches V within 0.01"], metric="loss", unit="nats",
                       noise_floor=0.017).verdict("D")
    assert v.text == "within noise (the margin of 0.010 nats is below the noise floor of 0.017 nats)"


def test_claims_are_read_and_checked():
    assert parse_claim("R+V is worse than V") == Claim("R+V", "worse", "V")
    assert parse_claim("D matches V within 0.02 nats") == Claim("D", "matches", "V", 0.02)
    assert Claim("D", "matches", "V", 0.02).text == "D matches V within 0.02"
    for bad in ("R beats V", "D matches V", "D matches V within -1"):
        with pytest.raises(ValueError):
            parse_claim(bad)
    records = rows("V", V_LOSS) + rows("R", V_LOSS)
    with pytest.raises(ValueError, match="reference is 'V'"):
        table_verdicts(records, ["R is worse than D"], metric="loss")
    with pytest.raises(ValueError, match="filed under"):
        table_verdicts(records, {"D": "R is worse than V"}, metric="loss")
    with pytest.raises(ValueError, match="no records of 'X'"):
        table_verdicts(records, ["X is worse than V"], metric="loss")


def test_records_are_checked():
    with pytest.raises(ValueError, match="two records"):
        table_verdicts([("V", 0, 1.0), ("V", 0, 1.1), ("R", 0, 1.0)], ["R is worse than V"], metric="loss")
    with pytest.raises(ValueError, match="R, seed 1"):
        table_verdicts([("V", 1, 1.0), ("R", 1, float("nan"))], ["R is worse than V"], metric="loss")
    mixed = [Record("V", 0, 1.0), {"kind": "V", "seed": 1, "value": 1.1}, ("R", 0, 1.2), ("R", 1, 1.3)]
    assert table_verdicts(mixed, ["R is worse than V"], metric="loss").verdict("R").comparison.n == 2


def test_directions():
    assert resolve_direction(metric="eval_loss") == "min" and resolve_direction(metric="bleu") == "max"
    assert resolve_direction("lower") == "min" and resolve_direction("higher") == "max"
    with pytest.raises(ValueError):
        resolve_direction()
    with pytest.raises(ValueError):
        resolve_direction("min", metric="loss")


def test_the_bootstrap_in_a_table_is_deterministic():
    ref = [1.0] * 12
    records = rows("V", ref) + with_differences("R", [0.1, 0.3, 0.05, 0.9, 0.2, 0.15, 0.4, 0.1, 2.0, 0.3, 0.2, 0.1],
                                                ref)
    a = table_verdicts(records, ["R is worse than V"], metric="loss", interval="bootstrap", bootstrap_seed=1)
    b = table_verdicts(list(reversed(records)), ["R is worse than V"], metric="loss", interval="bootstrap",
                       bootstrap_seed=1)
    assert a.to_markdown() == b.to_markdown() and a.verdict("R").text == HOLDS


def test_the_markdown_rendering():
    records = (rows("V", V_LOSS) + with_differences("R", [0.21, 0.19, 0.22, 0.20])
               + with_differences("FR", [0.01, -0.01, 0.02, -0.02]) + [("M", 0, 2.4)])
    table = table_verdicts(records, ["R is worse than V", "FR is worse than V", "M is worse than V"],
                           metric="loss", unit="nats", noise_floor=0.017, baseline=6.014)
    text = table.to_markdown()
    lines = text.splitlines()
    assert lines[0] == "| kind | claim | seeds | Δ vs V (nats) [95% interval] | p | p (Holm) | verdict |"
    # sd of the differences 0.0129, t_{0.975, 3} = 3.182: half-width 0.0205
    assert lines[2] == "| R | R is worse than V | 4 | +0.205 [+0.184, +0.226] | <0.001 | <0.001 | holds |"
    assert lines[4] == "| M | M is worse than V | 1 | +0.090 | — | — | one seed: not read |"
    assert "noise floor 0.017 nats" in lines[-1] and "beaten by V, R, FR, M" in lines[-1]
    assert table.verdict_column() == {"R": HOLDS, "FR": table.verdict("FR").text, "M": ONE_SEED}


@given(st.lists(st.floats(-0.5, 0.5, allow_nan=False), min_size=2, max_size=8), st.sampled_from(["min", "max"]))
@settings(max_examples=150, deadline=None)
def test_the_two_directional_claims_never_both_hold(diffs, direction):
    ref = [1.0 + 0.1 * i for i in range(len(diffs))]
    records = rows("V", ref) + with_differences("R", diffs, ref)
    better = table_verdicts(records, ["R is better than V"], direction=direction).verdict("R")
    worse = table_verdicts(records, ["R is worse than V"], direction=direction).verdict("R")
    assert better.outcome == {"holds": "reversed", "reversed": "holds", "within noise": "within noise"}[worse.outcome]
    assert better.p_value == worse.p_value


def test_detectable_dz_is_what_the_verdicts_quote():
    diffs = [0.03, -0.01, 0.02]
    records = rows("V", V_LOSS[:3]) + with_differences("R", diffs, V_LOSS[:3])
    v = table_verdicts(records, ["R is worse than V"], metric="loss").verdict("R")
    assert v.detectable == pytest.approx(v.comparison.sd * detectable_dz(3))
