"""Builder of docs/benchmarks.md's regression-guard table from ``benchmarks/results/bench_guard.jsonl``
(``benchmarks/speed/bench_guard.py``): the newest full run (a ``--quick`` run only while there is no full one), one row
per kind and length, one column per (causality, dropout), each cell the new/old time ratio with its spread over the
rounds and the verdict when a difference was called; and each tree's time as a fraction of its own V's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, read_entries  # noqa: E402
from speed.bench_guard import batch_label  # noqa: E402 - the guard's own label of its batches

from doc_tables.bench import markdown, note  # noqa: E402 - the sibling module

TABLE = "bench_guard"
COMMAND = "python benchmarks/speed/bench_guard.py"


def newest_run(path: Path) -> list[dict[str, Any]]:
    """The entries of the newest full run in ``path`` (runs are named by their start time: the newest sorts last);
    the newest ``--quick`` run while there is no full one; a row measured twice in a run: its last entry."""
    runs: dict[str, dict[str, dict[str, Any]]] = {}
    for entry in read_entries(path):
        if entry.get("table") == TABLE and "run" in entry and "row" in entry:
            runs.setdefault(str(entry["run"]), {})[str(entry["row"])] = entry
    if not runs:
        return []
    full = [name for name, rows in runs.items() if not any(e.get("quick") for e in rows.values())]
    return list(runs[max(full or runs)].values())


def _columns(entries: list[dict[str, Any]]) -> list[tuple[bool, float]]:
    return sorted({(bool(e["causal"]), float(e["dropout"])) for e in entries})


def _label(causal: bool, dropout: float) -> str:
    return f"{'causal' if causal else 'bidirectional'}, dropout {dropout:g}"


def _grid(entries: list[dict[str, Any]], cell: Callable[[dict[str, Any]], str]) -> str:
    """Rows (kind, L) in the record's order, a column per (causality, dropout), ``cell(entry)`` in each."""
    columns = _columns(entries)
    found = {(e["kind"], e["L"], bool(e["causal"]), float(e["dropout"])): e for e in entries}
    keys = sorted(dict.fromkeys((e["kind"], e["L"]) for e in entries),
                  key=lambda k: (k[1], [e["kind"] for e in entries].index(k[0])))
    body = [[f"{kind}, L={length}", *(cell(found[kind, length, c, p]) if (kind, length, c, p) in found else ""
                                      for c, p in columns)] for kind, length in keys]
    return markdown(["kind, length", *(_label(c, p) for c, p in columns)], body)


def _ratio(entry: dict[str, Any]) -> str:
    if "error" in entry:
        return "error (" + str(entry["error"]).split(":")[0] + ")"
    called = {"slower": " **slower**", "faster": " **faster**"}.get(entry.get("verdict", ""), "")
    return f"{entry['ratio']:.2f} ({entry['ratio_min']:.2f}-{entry['ratio_max']:.2f}){called}"


def _v_fraction(entry: dict[str, Any]) -> str:
    if "new_vs_V" not in entry or "old_vs_V" not in entry:
        return ""
    return f"{entry['new_vs_V']:.2f} ({entry['old_vs_V']:.2f})"


def guard_table() -> str:
    """The newest run's new/old ratios with their spreads, and each tree's time as a fraction of its V's."""
    path = RESULTS / f"{TABLE}.jsonl"
    record = str(path.relative_to(ROOT))
    entries = newest_run(path)
    if not entries:
        return f"(not measured yet: `{COMMAND}` writes `{record}`)"
    first = entries[0]
    batch = batch_label({e["L"]: e["batch"] for e in entries})
    settings = (f"This tree against commit `{first['against']}` (`{first['against_ref']}`), "
                f"{'a --quick run, ' if first.get('quick') else ''}{first['rounds']} alternating rounds, each "
                f"measurement the median of {first['repeats']} step(s) after {first['warmup']}; {batch}, "
                f"d_model {first['d_model']}, {first['heads']} heads, forward + backward.")
    return "\n\n".join([
        "New/old time ratio, median over the rounds (min-max over the rounds); a difference is called only where "
        "it exceeds that spread:", _grid(entries, _ratio),
        "Time as a fraction of V's in the same tree and rounds, this tree (the commit's):",
        _grid(entries, _v_fraction), settings + " " + note(first, record)])
