"""docs/benchmarks.md's section 3 to 5 tables (the paper's Table 4 at model level, ``generate()`` through the Hugging
Face wrapper, the fused path's goals and its backends, the long-length goals) and docs/reliability.md's "Threads"
table, from the records of ``benchmarks/speed/measure_all.sh``; the helpers are ``bench.py``'s. Each is a function of
the newest entry of its record (``doc_tables/registry.py`` names the record), but for the goals of two records.

The goals each table is checked against are not in the records: they come from the constants below (each saying
what it bounds) or from ``synthformer.bench.goals`` (the fused path's and the long lengths'), so a verdict always
matches its numbers.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from doc_tables.bench import find, markdown, newest, note, placeholder, yes  # noqa: E402 - the shared helpers
from synthformer.bench.goals import (  # noqa: E402 - the fused path's goals, the ones attention.py --goals prints
    CAUSAL_KINDS,
    CAUSAL_LEN,
    CAUSAL_SPEEDUP,
    MEMORY_GOAL,
    MODEL_EFFICIENCY_GOAL,
    TIME_GOALS,
    speed_goals,
)

#: The goals for Syn (R)'s training speed: its steps/s at least this multiple of the named model's.
SYN_R_SPEED_GOALS: dict[str, float] = {"Transformer": 1.15, "Dynamic Conv": 1.6}
#: The Hugging Face wrapper's goals: its ``generate()`` costs at most this much over the native loop; R's cache
#: bytes per token are this fraction of V's.
HF_OVERHEAD_GOAL, HF_CACHE_RATIO_GOAL = 0.10, 0.5
#: the fused-backends record's configurations, as the table names them (benchmarks/speed/fused_backends.py's CONFIGS)
CONFIG_LABELS = {"256": "L=256", "1024": "L=1024", "1024-causal": "causal L=1024"}
GOAL_KINDS = list(dict.fromkeys(kind for kind, _ in TIME_GOALS))


def _float(value: Any) -> float:
    """A number of a CSV row (``""`` and ``nan`` are NaN)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _ratio(value: Any) -> str:
    number = _float(value)
    return "-" if math.isnan(number) else f"{number:.2f}"


def _model(row: dict[str, Any]) -> str:
    """A row's model as the paper names it, with the convolutions' kernel sizes."""
    return row["model"] + (f" (K={row['kernel_sizes']})" if row.get("kernel_sizes") else "")


def model_table(entry: dict[str, Any]) -> str:
    """Section 3's Table 4 (``synthformer bench``, fp32 or bf16): parameters, FLOPs, steps/s and its ratio, FLOP
    ratio, efficiency, peak memory and the paper's ratio (TPU), from the CSV rows the bench wrote."""
    body = []
    for r in entry["rows"]:
        peak = _float(r["peak_mib"])
        body.append([_model(r), f"{_float(r['params']) / 1e6:.2f}M", f"{_float(r['flops_per_step']):.2e}",
                     f"{_float(r['steps_per_s']):.3f}", _ratio(r["steps_per_s_ratio"]), _ratio(r["flop_ratio"]),
                     _ratio(r["efficiency"]), "-" if math.isnan(peak) else f"{peak:,.1f}",
                     _ratio(r.get("paper_steps_per_s_ratio"))])
    header = ["Model", "Params", "FLOPs/step", "Steps/s", "Steps/s vs Transformer", "FLOP ratio", "Efficiency",
              "Peak MiB", "Paper steps/s vs Transformer"]
    return markdown(header, body)


def model_goals_table() -> str:
    """The goals for Syn (R)'s speed: its steps/s against the Transformer's and Dynamic Conv's, fp32 and bf16."""
    entries = {dtype: newest(name) for dtype, name in (("fp32", "model"), ("bf16", "model_bf16"))}
    measured = {dtype: {r["model"]: _float(r["steps_per_s"]) for r in entry["rows"]}
                for dtype, (entry, _) in entries.items() if entry is not None}
    if not measured:
        return placeholder(entries["fp32"][1])
    body = []
    for other, goal in SYN_R_SPEED_GOALS.items():
        ratios = {dtype: m["Synthesizer (R)"] / m[other] for dtype, m in measured.items()}
        body.append([f"Syn (R) steps/s at least {goal:g}x {other}'s", *(f"{r:.2f}" for r in ratios.values()),
                     " / ".join(f"{dtype} {yes(r >= goal)}" for dtype, r in ratios.items())])
    notes = "\n\n".join(note(entry, record) for entry, record in entries.values() if entry is not None)
    return markdown(["goal", *(f"{d}: Syn (R) / it" for d in measured), "holds"], body) + "\n\n" + notes


def model_efficiency_table(entry: dict[str, Any]) -> str:
    """The fused path's model-level goal: every row's steps/s ratio to the Transformer at least 0.95 of its FLOP
    ratio."""
    body = []
    for r in entry["rows"]:
        efficiency = _float(r["efficiency"])
        body.append([r["model"], _ratio(r["steps_per_s_ratio"]), _ratio(r["flop_ratio"]), _ratio(efficiency),
                     "" if r["model"] == "Transformer" else yes(efficiency >= MODEL_EFFICIENCY_GOAL)])
    header = ["Model", "Steps/s vs Transformer", "FLOP ratio", "Efficiency", f"efficiency >= {MODEL_EFFICIENCY_GOAL}"]
    return markdown(header, body)


def hf_generate_table(entry: dict[str, Any]) -> str:
    """Section 4: tokens/s of the native decoders and of the wrapper's ``generate()``, the overhead, same tokens."""
    body = [[r["kind"], str(r["beams"]), f"{r['native_tokens_per_s']:,.1f}", f"{r['hf_tokens_per_s']:,.1f}",
             f"{100 * r['hf_overhead']:+.1f}%", yes(r["same_tokens"])] for r in entry["rows"]]
    header = ["kind", "beams", "native tokens/s", "HF `generate()` tokens/s", "HF overhead", "same tokens"]
    return markdown(header, body)


def hf_cache_table(entry: dict[str, Any]) -> str:
    """Section 4: the cache's bytes per token (per batch row and position) through HF's cache, and against V's."""
    sizes = entry["cache_bytes_per_token"]
    body = [[kind, f"{b:,.0f}", f"{b / sizes['V']:.2f}x" if "V" in sizes else "-"] for kind, b in sizes.items()]
    return markdown(["kind", "cache bytes per token", "vs V"], body)


def hf_goals_table(entry: dict[str, Any]) -> str:
    """The wrapper's goals: its largest overhead, R's cache against V's, and whether every row's tokens agree."""
    rows, sizes = entry["rows"], entry["cache_bytes_per_token"]
    worst = max(rows, key=lambda r: r["hf_overhead"])
    body = [[f"the wrapper costs at most {100 * HF_OVERHEAD_GOAL:.0f}%",
             f"at most {100 * worst['hf_overhead']:+.1f}% ({worst['kind']}, beam {worst['beams']})",
             yes(worst["hf_overhead"] <= HF_OVERHEAD_GOAL)]]
    if {"R", "V"} <= sizes.keys():
        ratio = sizes["R"] / sizes["V"]
        body.append([f"R's cache {HF_CACHE_RATIO_GOAL:g}x V's", f"{ratio:.2f}x",
                     yes(abs(ratio - HF_CACHE_RATIO_GOAL) < 0.005)])
    body.append(["the same tokens as the native decoder", f"{sum(r['same_tokens'] for r in rows)} of {len(rows)} rows",
                 yes(all(r["same_tokens"] for r in rows))])
    return markdown(["goal", "measured", "holds"], body, align="---")


def _goal_rows(entry: dict[str, Any], causal: bool = False, dtype: str = "fp32") -> list[dict[str, Any]]:
    return [r for r in entry["rows"] if r["mode"] == "fwd+bwd" and r["causal"] == causal and r["dtype"] == dtype]


def goals_table(entry: dict[str, Any]) -> str:
    """Section 5: the fused path's time goals (fp32, bidirectional, forward+backward) at each length: time ratio to
    V, FLOP ratio, efficiency, the goal and whether it holds; V's ms in its own row."""
    rows = _goal_rows(entry)
    lengths = sorted({n for _, n in TIME_GOALS})
    body = [["V (ms)", *(c for n in lengths for c in (f"{find(rows, kind='V', L=n)['ms']:,.0f}", "", "", "", ""))]]
    for kind in GOAL_KINDS:
        cells = []
        for n in lengths:
            r, goal = find(rows, kind=kind, L=n), TIME_GOALS[kind, n]
            cells += ["", "", "", f"<= {goal:.2f}", ""] if r is None else [
                f"{r['ratio_to_V']:.2f}", f"{r['flop_ratio']:.2f}", f"{r['efficiency']:.2f}", f"<= {goal:.2f}",
                yes(r["ratio_to_V"] <= goal)]
        body.append([kind, *cells])
    header = ["kind", *(f"L={n} {c}" for n in lengths for c in ("time / V", "FLOP ratio", "efficiency", "goal",
                                                                "holds"))]
    return markdown(header, body)


def _order(rows: list[dict[str, Any]]) -> list[str]:
    return [r["kind"] for r in sorted(rows, key=lambda r: r["ratio_to_V"]) if r["kind"] != "V"]


def goals_other_table(entry: dict[str, Any]) -> str:
    """Section 5: the fused path's other goals: causal against bidirectional at L=1024, D's peak memory, bf16's
    order."""
    fp32, causal = _goal_rows(entry), _goal_rows(entry, causal=True)
    pairs = {k: (find(fp32, kind=k, L=CAUSAL_LEN), find(causal, kind=k, L=CAUSAL_LEN)) for k in ["V", *CAUSAL_KINDS]}
    speedups = {k: b["ms"] / c["ms"] for k, (b, c) in pairs.items() if b is not None and c is not None}
    gains = ", ".join(f"{k} {s:.2f}x" for k, s in speedups.items() if k != "V")
    body = [[f"causal {', '.join(CAUSAL_KINDS)} at L={CAUSAL_LEN} at least {CAUSAL_SPEEDUP}x faster than "
             "bidirectional", gains + (f" (V through SDPA: {speedups['V']:.2f}x)" if "V" in speedups else ""),
             yes(all(speedups.get(k, 0.0) >= CAUSAL_SPEEDUP for k in CAUSAL_KINDS))]]
    d, v = find(fp32, kind="D", L=1024), find(fp32, kind="V", L=1024)
    if d is not None and v is not None:
        ratio = d["peak_MiB"] / v["peak_MiB"]
        body.append([f"peak training memory of D at L=1024 at most {MEMORY_GOAL}x V's",
                     f"{d['peak_MiB']:,.0f} MiB against V's {v['peak_MiB']:,.0f}: {ratio:.2f}x",
                     yes(ratio <= MEMORY_GOAL)])
    at256 = [r for r in fp32 if r["L"] == 256]
    bf16 = [r for r in _goal_rows(entry, dtype="bf16") if r["L"] == 256]
    if bf16:
        shown = ", ".join(f"{r['kind']} {r['ratio_to_V']:.2f}" for r in bf16 if r["kind"] != "V")
        orders = {"bf16": _order(bf16), "fp32": _order(at256)}
        measured = f"bf16: {shown}; order " + ", ".join(f"{d}: {' < '.join(o)}" for d, o in orders.items())
        body.append(["bf16 autocast keeps the fp32 ordering (L=256)", measured, yes(orders["bf16"] == orders["fp32"])])
    return markdown(["goal", "measured", "holds"], body, align="---")


def fused_backends_table(entry: dict[str, Any]) -> str:
    """Section 5: each backend of a fused block, time ratio to V, and (in parentheses) to the torch backend's."""
    rows = [r for r in entry["rows"] if r["kind"] != "V"]
    configs = list(dict.fromkeys(r["config"] for r in rows))
    backends = list(dict.fromkeys(r["backend"] for r in rows))
    body = []
    for kind in dict.fromkeys(r["kind"] for r in rows):
        cells = []
        for config in configs:
            for backend in backends:
                r = find(rows, kind=kind, config=config, backend=backend)
                cells.append("" if r is None else f"{r['ratio_to_V']:.2f}" + (
                    "" if backend == "torch" else f" ({r['vs_torch']:.2f})"))
        body.append([kind, *cells])
    header = ["kind", *(f"{CONFIG_LABELS.get(c, c)} {b}" for c in configs for b in backends)]
    return markdown(header, body)


def threads_table(entry: dict[str, Any]) -> str:
    """docs/reliability.md's "Threads": tokens/s per process and in total when 1 to 3 trainings share the cores."""
    body = [[r["scenario"], str(r["threads"]), " / ".join(f"{t:,.0f}" for t in r["tokens_per_s"]),
             f"{sum(r['tokens_per_s']):,.0f}"] for r in entry["rows"]]
    header = ["scenario", "threads each", "tokens/s per process", "total tokens/s"]
    return markdown(header, body)


def _cell_peak(goal: dict[str, Any]) -> str:
    if goal["memory_holds"] is None:
        return ""
    return f"{goal['peak_to_V']:.2f} ({yes(goal['memory_holds'])})"


def speed_goals_table(entry: dict[str, Any]) -> str:
    """Rows kind x L (V's own time first), for each dropout: time / V, the goal, holds, peak / V (holds)."""
    rows = entry["rows"]
    dropouts = sorted({r["dropout"] for r in rows})
    lengths = sorted({r["L"] for r in rows})
    goals = {(g["kind"], g["L"], g["dropout"]): g for g in speed_goals(rows)}
    header = ["kind, length (batch)"]
    for p in dropouts:
        header += [f"dropout {p:g}: time / V", "goal", "holds", "peak / V (<= 1)"]
    body = []
    for length in lengths:
        v_cells = []
        for p in dropouts:
            v = find(rows, kind="V", L=length, dropout=p)
            v_cells += ["" if v is None else f"{v['ms']:,.0f} ms", "", "", ""]
        batch = next(r["batch"] for r in rows if r["L"] == length)
        body.append([f"V, L={length} (B={batch})", *v_cells])
        kinds = list(dict.fromkeys(r["kind"] for r in rows if r["L"] == length and (r["kind"], length,
                                                                                      r["dropout"]) in goals))
        for kind in kinds:
            cells = []
            for p in dropouts:
                g = goals.get((kind, length, p))
                cells += (["", "", "", ""] if g is None else
                          [f"{g['ratio_to_V']:.2f}", f"<= {g['time_goal']:.2f}", yes(g["time_holds"]), _cell_peak(g)])
            body.append([f"{kind}, L={length}", *cells])
    capability = entry.get("cpu_capability", "unknown")
    thresholds = entry.get("thresholds")
    in_force = "" if not thresholds else (
        " Length thresholds in force: " + ", ".join(f"`{k}` {v}" for k, v in thresholds.items())
        + (f" (calibrated for this machine: `{entry['calibration']}`)." if entry.get("calibration")
           else " (the library's defaults)."))
    return (markdown(header, body) + f"\n\nCPU capability (torch): {capability}. The goal of D, FD, R+V, D+V and "
            "GLU is 1.10 x the FLOP ratio counted from the shapes; that of R and FR is 0.55." + in_force)
