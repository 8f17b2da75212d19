"""Builder of docs/benchmarks.md's long-length goals table from the newest entry of
``benchmarks/results/bench_speed_goals.jsonl`` (``benchmarks/speed/speed_goals.py``): per kind and length, for each
dropout setting, the time as a fraction of V's, its goal, whether it holds, and the peak memory against V's. The
verdicts come from ``synthformer.bench.goals.speed_goals``, the rule the script prints, so they always match the
numbers beside them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from doc_tables.bench import find, markdown, recorded, yes  # noqa: E402 - the sibling module
from synthformer.bench.goals import speed_goals  # noqa: E402


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


SPEED_GOALS_BUILDERS: dict[str, Callable[[], str]] = {"bench-speed-goals": recorded("speed_goals")(speed_goals_table)}
