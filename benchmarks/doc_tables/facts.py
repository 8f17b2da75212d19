"""Small tables of single facts that the docs quote inline (``<!-- n:NAME | ROW | COLUMN -->``) without showing the
table: each is computed from a committed record at generation time, so a number quoted in prose (the README,
docs/reliability.md) is the record's, not a hand-typed copy."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, latest  # noqa: E402

COMPARE_KINDS = ["V", "R", "D", "R+V"]  # the kinds of the no-argument `synthformer compare`


def compare_job() -> str:
    """The whole ``synthformer compare`` job from ``compare.jsonl``: its four ``compare --kinds KIND`` processes'
    wall time together, in seconds and minutes (the number the README and both ``--help`` texts round)."""
    found = latest(RESULTS / "compare.jsonl", "compare")
    entries = [found[k] for k in COMPARE_KINDS if k in found]
    if len(entries) < len(COMPARE_KINDS):
        return "(no complete record yet: `python benchmarks/studies/results_runs.py --table compare`)"
    total = sum(e["process_wall_s"] for e in entries)
    rows = ["| job | seconds | minutes |", "|---|---:|---:|", f"| compare | {total:.0f} | {total / 60:.1f} |"]
    return "\n".join(rows)


def suite_time() -> str:
    """The newest ``python -m pytest`` timing of ``suite_time.jsonl`` (``benchmarks/speed/suite_time.py``): seconds,
    minutes, tests passed."""
    found = latest(RESULTS / "suite_time.jsonl", "suite_time")
    if "suite" not in found:
        return "(no timing recorded yet: `python benchmarks/speed/suite_time.py`)"
    e = found["suite"]
    rows = ["| run | seconds | minutes | passed | machine | date |", "|---|---:|---:|---:|---|---|",
            f"| suite | {e['wall_seconds']:.0f} | {e['wall_seconds'] / 60:.1f} | {e.get('passed', 0)} | "
            f"{e['machine']} | {e['date']} |"]
    return "\n".join(rows)


FACTS_BUILDERS: dict[str, Callable[[], str]] = {"compare-job": compare_job, "suite-time": suite_time}
