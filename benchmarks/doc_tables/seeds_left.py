"""What seed studies have left to train (``benchmarks/studies/seed_studies.py``): per kind, the seeds its record
holds and the ones its plan still lacks, what its recorded runs took (the median of their ``wall_seconds``, one
process on one core, beside other work where they ran so) and the CPU-hours the missing seeds would take at that
pace, in all and up to three seeds (the fewest the noise rule reads)."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import latest  # noqa: E402
from studies import seed_studies  # noqa: E402

#: the fewest seeds the noise rule reads a claim on (fewer: "one seed: not read", or too wide an interval)
READ_SEEDS = 3


def seeds_left_table(*names: str) -> str:
    """A row per kind of the studies ``names`` (a kind with no recorded run has no pace: its hours are unknown),
    then the totals."""
    entries = [e for e in latest(seed_studies.RECORD, seed_studies.TABLE).values() if e["study"] in names]
    lines = ["| study | kind | seeds recorded | seeds left | minutes per run | CPU-hours left | CPU-hours to "
             f"{READ_SEEDS} seeds |", "|---|---|---|---:|---:|---:|---:|"]
    total = to_read = 0.0
    for name in names:
        plan = seed_studies.study(name)
        for kind in plan.kinds:
            runs = [e for e in entries if e["study"] == name and e["variant"] == kind]
            have = sorted({int(e["seed"]) for e in runs})
            left = [s for s in plan.seeds if s not in have]
            short = max(0, READ_SEEDS - len(have))
            if not runs:
                lines.append(f"| {name} | {kind} | none | {len(left)} | — | — | — |")
                continue
            minutes = statistics.median(float(e["wall_seconds"]) for e in runs) / 60
            total += len(left) * minutes / 60
            to_read += short * minutes / 60
            lines.append(f"| {name} | {kind} | {', '.join(map(str, have))} | {len(left)} | {minutes:.0f} | "
                         f"{len(left) * minutes / 60:.1f} | {short * minutes / 60:.1f} |")
    lines.append(f"| all | | | | | {total:.1f} | {to_read:.1f} |")
    return "\n".join(lines) + ("\n\nMinutes per run: the median wall time of the kind's recorded runs (one process "
                               "on one core; other work shared the CPU where the record says so). Record: "
                               "`benchmarks/results/seed_studies.jsonl`.")
