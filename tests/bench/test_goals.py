"""The benchmark goals (``bench.goals``, set by issue 15) are printed with a verdict each; the model table carries
the FLOP ratio and the efficiency."""

from __future__ import annotations

import math

import pytest

from synthformer.bench import main, run_table
from synthformer.bench.goals import TIME_GOALS, model_goals, module_goals


def _row(kind: str, length: int, ratio: float, causal: bool = False, dtype: str = "fp32", peak: float = 1.0) -> dict:
    return {
        "kind": kind, "L": length, "mode": "fwd+bwd", "causal": causal, "dtype": dtype, "ms": 100.0 * ratio,
        "ratio_to_V": ratio, "flop_ratio": 0.8, "peak_MiB": peak,
    }  # fmt: skip


def test_every_module_goal_gets_one_verdict():
    rows = [_row("V", 1024, 1.0, peak=100.0), _row("D", 256, 0.80), _row("D", 1024, 0.95, peak=140.0)]
    rows += [_row("D", 1024, 0.60, causal=True), _row("FD", 1024, 0.65), _row("FD", 1024, 0.60, causal=True)]
    lines = module_goals(rows)
    assert len(lines) == len(TIME_GOALS) + 3 + 1 + 1
    text = "\n".join(lines)
    assert "goal D L=256 fwd+bwd <= 0.85 of V (measured 0.80, FLOP ratio 0.80): holds" in text
    assert "goal D L=1024 fwd+bwd <= 0.92 of V (measured 0.95, FLOP ratio 0.80): does not hold" in text
    assert "goal causal D L=1024 >= 1.3x faster than bidirectional (measured 1.58x): holds" in text
    assert "goal causal FD L=1024 >= 1.3x faster than bidirectional (measured 1.08x): does not hold" in text
    assert "goal causal R+V L=1024 >= 1.3x faster than bidirectional: not measured in this run" in text
    assert "goal peak training memory of D at L=1024 <= 1.5x V's (measured 1.40x): holds" in text
    assert "goal bf16 autocast keeps the fp32 ordering: not measured in this run" in text


def test_bf16_ordering():
    fp32 = [_row("V", 256, 1.0), _row("D", 256, 0.8), _row("D+V", 256, 1.3)]
    same = [_row(r["kind"], 256, r["ratio_to_V"] * 0.9, dtype="bf16") for r in fp32]
    swapped = [_row(kind, 256, ratio, dtype="bf16") for kind, ratio in (("V", 1.0), ("D", 1.2), ("D+V", 1.1))]
    assert module_goals(fp32 + same)[-1].endswith(": holds")
    assert module_goals(fp32 + swapped)[-1].endswith(": does not hold")


@pytest.fixture(scope="module")
def results() -> list[dict]:
    tiny = {"n_layers": 1, "d_model": 32, "n_heads": 2, "d_ff": 64}
    run = dict(batch_size=2, seq_len=16, vocab_size=50, steps=1, warmup=0, repeats=1, overrides=tiny, threads=1)
    return run_table("lm-small", rows=["V", "R", "D+V"], **run)


def test_model_rows_carry_the_counted_flop_ratio_and_the_efficiency(results):
    base = results[0]
    assert base["flop_ratio"] == 1.0 and base["efficiency"] == pytest.approx(base["steps_per_s_ratio"])
    for r in results:
        assert r["flop_ratio"] == pytest.approx(base["flops_per_step"] / r["flops_per_step"])
        assert math.isclose(r["efficiency"], r["steps_per_s_ratio"] / r["flop_ratio"])
    lines = model_goals(results)
    assert len(lines) == len(results) - 1
    assert all(line.endswith((": holds", ": does not hold")) for line in lines)


def test_main_prints_the_goals(capsys):
    argv = [
        "--preset", "lm-small", "--rows", "V,R", "--set", "n_layers=1", "d_model=32", "n_heads=2", "d_ff=64",
        "--seq-len", "16", "--batch-size", "2", "--vocab-size", "50", "--steps", "1", "--repeats", "1",
        "--warmup", "0", "--threads", "1", "--no-progress",
    ]  # fmt: skip
    assert main(argv, prog="synthformer bench") == 0
    out = capsys.readouterr().out
    assert "| FLOP ratio | Efficiency |" in out
    assert "goal Synthesizer (R): steps/s ratio" in out
