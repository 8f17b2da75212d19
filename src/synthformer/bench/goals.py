"""The speed and memory goals of the fused attention path, checked against measured rows: each holds or not.

Module level (``benchmarks/speed/attention.py``): rows are dicts with ``L``, ``mode``, ``kind``, ``ratio_to_V``,
``peak_MiB``, ``causal`` and ``dtype``. Model level (``synthformer bench``): the result rows of
:func:`synthformer.bench.run_table`. No test asserts a timing; the goals are reported, not enforced.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

#: (kind, L) -> the largest forward+backward time ratio to V that meets the goal (fp32, bidirectional, B=16,
#: d_model 512, 8 heads).
TIME_GOALS: dict[tuple[str, int], float] = {
    ("D", 256): 0.85,
    ("D", 1024): 0.92,
    ("FD", 256): 0.78,
    ("FD", 1024): 0.70,
    ("R+V", 256): 1.05,
    ("R+V", 1024): 1.05,
    ("D+V", 256): 1.38,
    ("D+V", 1024): 1.45,
    ("GLU", 256): 1.08,
    ("GLU", 1024): 1.08,
}
#: causal layers at L=1024 at least this much faster than their own bidirectional time
CAUSAL_SPEEDUP, CAUSAL_KINDS, CAUSAL_LEN = 1.3, ("D", "FD", "R+V"), 1024
#: peak training memory of D at L=1024 at most this multiple of V's
MEMORY_GOAL = 1.5
#: model level: a row's steps/s ratio to the Transformer at least this fraction of its FLOP ratio
MODEL_EFFICIENCY_GOAL = 0.95

#: The long-length goals (``benchmarks/speed/speed_goals.py``): these kinds' forward+backward time within this factor of
#: their FLOP-ratio limit (the time they would take at V's efficiency), and their peak memory at most V's. The
#: threshold is counted from the shapes on every run (``flop_ratio``), not a table of one machine's times.
FLOP_LIMIT_KINDS, FLOP_LIMIT_SLACK = ("D", "FD", "R+V", "D+V", "GLU"), 1.10
#: ... and these kinds (no L x L matrix per sample) at most this fraction of V's time
LIGHT_KINDS, LIGHT_GOAL = ("R", "FR"), 0.55


def _verdict(ok: bool | None) -> str:
    return "not measured in this run" if ok is None else ("holds" if ok else "does not hold")


def _find(rows: Sequence[dict], **match: Any) -> dict | None:
    for r in rows:
        if all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def module_goals(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per speed and memory goal (docs/benchmarks.md), from the rows of ``benchmarks/speed/attention.py`` (any
    subset of runs)."""
    lines = []
    base = {"mode": "fwd+bwd", "causal": False, "dtype": "fp32"}
    for (kind, length), goal in TIME_GOALS.items():
        r = _find(rows, kind=kind, L=length, **base)
        got = "" if r is None else f" (measured {r['ratio_to_V']:.2f}, FLOP ratio {r['flop_ratio']:.2f})"
        ok = None if r is None else r["ratio_to_V"] <= goal
        lines.append(f"goal {kind} L={length} fwd+bwd <= {goal:.2f} of V{got}: {_verdict(ok)}")
    for kind in CAUSAL_KINDS:
        bidir = _find(rows, kind=kind, L=CAUSAL_LEN, **base)
        causal = _find(rows, kind=kind, L=CAUSAL_LEN, **{**base, "causal": True})
        ok, got = None, ""
        if bidir is not None and causal is not None:
            speedup = bidir["ms"] / causal["ms"]
            ok, got = speedup >= CAUSAL_SPEEDUP, f" (measured {speedup:.2f}x)"
        lines.append(
            f"goal causal {kind} L={CAUSAL_LEN} >= {CAUSAL_SPEEDUP}x faster than bidirectional{got}: {_verdict(ok)}"
        )
    d, v = _find(rows, kind="D", L=1024, **base), _find(rows, kind="V", L=1024, **base)
    ok, got = None, ""
    if d is not None and v is not None and not math.isnan(d["peak_MiB"]) and not math.isnan(v["peak_MiB"]):
        ratio = d["peak_MiB"] / v["peak_MiB"]
        ok, got = ratio <= MEMORY_GOAL, f" (measured {ratio:.2f}x)"
    lines.append(f"goal peak training memory of D at L=1024 <= {MEMORY_GOAL}x V's{got}: {_verdict(ok)}")
    lines.append(f"goal bf16 autocast keeps the fp32 ordering: {_verdict(_same_order(rows))}")
    return lines


def speed_goals(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The long-length goals, one verdict per measured (kind, L, dropout) of :data:`FLOP_LIMIT_KINDS` and
    :data:`LIGHT_KINDS`. ``rows`` hold ``kind``, ``L``, ``dropout``, ``ratio_to_V``, ``flop_ratio`` and
    ``peak_MiB`` (``benchmarks/speed/speed_goals.py``), V's row among them for the memory goal. Each verdict: the
    time goal (``time_goal``, ``time_holds``) and, for the FLOP-limit kinds, the memory one (``peak_to_V``,
    ``memory_holds``: None where a peak was not measured)."""
    verdicts = []
    for r in rows:
        if r["kind"] not in FLOP_LIMIT_KINDS + LIGHT_KINDS:
            continue
        light = r["kind"] in LIGHT_KINDS
        goal = LIGHT_GOAL if light else FLOP_LIMIT_SLACK * r["flop_ratio"]
        verdict = {"kind": r["kind"], "L": r["L"], "dropout": r["dropout"], "ratio_to_V": r["ratio_to_V"],
                   "flop_ratio": r["flop_ratio"], "time_goal": goal, "time_holds": r["ratio_to_V"] <= goal,
                   "peak_to_V": None, "memory_holds": None}
        v = _find(rows, kind="V", L=r["L"], dropout=r["dropout"])
        if not light and v is not None and not math.isnan(r["peak_MiB"]) and not math.isnan(v["peak_MiB"]):
            verdict["peak_to_V"] = r["peak_MiB"] / v["peak_MiB"]
            verdict["memory_holds"] = r["peak_MiB"] <= v["peak_MiB"]
        verdicts.append(verdict)
    return verdicts


def _same_order(rows: Sequence[dict[str, Any]]) -> bool | None:
    """Whether, at every (L, mode) measured in both fp32 and bf16 (bidirectional), the kinds rank the same."""
    verdicts = []
    for length, mode in {(r["L"], r["mode"]) for r in rows}:
        order = {}
        for dtype in ("fp32", "bf16"):
            sel = [r for r in rows if (r["L"], r["mode"], r["dtype"], r["causal"]) == (length, mode, dtype, False)]
            order[dtype] = [r["kind"] for r in sorted(sel, key=lambda r: r["ratio_to_V"])]
        if order["fp32"] and order["bf16"] and set(order["fp32"]) == set(order["bf16"]):
            verdicts.append(order["fp32"] == order["bf16"])
    return all(verdicts) if verdicts else None


def model_goals(results: Sequence[dict[str, Any]]) -> list[str]:
    """One line per row of ``synthformer bench``: steps/s ratio >= 0.95 of its FLOP ratio to the Transformer."""
    lines = []
    for r in results[1:]:  # the first row is the Transformer itself
        ok = r["steps_per_s_ratio"] >= MODEL_EFFICIENCY_GOAL * r["flop_ratio"]
        lines.append(
            f"goal {r['model']}: steps/s ratio {r['steps_per_s_ratio']:.2f} >= {MODEL_EFFICIENCY_GOAL} x FLOP ratio "
            f"{r['flop_ratio']:.2f} (efficiency {r['efficiency']:.2f}): {_verdict(ok)}"
        )
    return lines
