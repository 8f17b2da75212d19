"""The out-of-reach table: the compute the tables no model learns here would need (``benchmarks/studies/reach.py``'s
record), one row per published recipe, with the rate it is priced at and where that rate was measured."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, latest, provenance  # noqa: E402

ORDER = ("pathfinder", "listops", "text", "t5-base")


def _steps(entry: dict) -> str:
    return " + ".join(f"{s['steps']:,} x {s['examples_per_step']}" for s in entry["stages"])


def reach_table() -> str:
    """Recipe, training FLOPs, the measured rate and the days on this CPU, per out-of-reach row."""
    found = latest(RESULTS / "reach.jsonl", "reach")
    rows = [found[name] for name in ORDER if name in found]
    if not rows:
        return "(no record yet: `python benchmarks/studies/reach.py`)"
    lines = ["| table | published recipe (steps x batch) | training FLOPs | rate here (GFLOP/s) "
             "| days on one core here |",
             "|---|---|---:|---:|---:|"]
    for e in rows:
        lines.append(f"| {e['label']} | {_steps(e)} | {e['flops']:.2e} | {e['flops_per_second'] / 1e9:.1f} | "
                     f"{e['days']:,.0f} |")
    rated = "; ".join(f"{e['row']}: `{e['measured_on']['record']}` row {e['measured_on']['row']} "
                      f"({e['measured_on']['steps']} steps in {e['measured_on']['train_s']:.0f} s, "
                      f"{e['measured_on']['threads']} thread)" for e in rows)
    return "\n".join(lines) + (
        "\n\nTraining FLOPs: forward + backward of every optimizer step of the recipe (FlopCounterMode on the meta "
        "device, `train --dry-run`'s count), evaluation left out. Rate: the FLOPs per second this project's "
        f"recorded CPU-size run of the same task reached ({rated}); larger models usually run faster per FLOP, so "
        "the days are the order of magnitude, not a schedule. Sources: "
        + "; ".join(f"{e['row']}: {e['source']}" for e in rows) + ".\n\n"
        + provenance(rows, "benchmarks/results/reach.jsonl"))


REACH_BUILDERS = {"out-of-reach": reach_table}
