"""The LRA Table 2 rows of :func:`synthformer.bench.lra.run_lra_table2` as Markdown tables and goal verdicts.

``synthformer bench --lra-table2`` prints these, and docs/benchmarks.md's generated blocks are built by the same
functions from the recorded rows (``benchmarks/doc_tables/registry.py``), so the printed and the published tables
cannot differ. Rows may come from JSON (a record), so every number is read with :func:`_num`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .lra import SPEED_TOLERANCE

__all__ = ["CAUSAL_AIM", "CAUSAL_AIM_FROM", "causal_markdown", "goal_lines", "table2_markdown"]

#: The aim for causal training: this much faster than bidirectional from this length on (2K-4K).
CAUSAL_AIM, CAUSAL_AIM_FROM = 1.3, 2048


def _num(value: Any) -> float:
    """A number of a row (None, "" and NaN read as NaN)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _find(rows: Sequence[dict[str, Any]], kind: str, length: int, causal: bool) -> dict[str, Any] | None:
    return next((r for r in rows if r["kind"] == kind and int(r["L"]) == length and bool(r["causal"]) == causal),
                None)


def _lengths(rows: Sequence[dict[str, Any]]) -> list[int]:
    return sorted({int(r["L"]) for r in rows})


def _kinds(rows: Sequence[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["kind"] for r in rows))


def _label(length: int) -> str:
    return f"{length // 1024}K" if length % 1024 == 0 else str(length)


def _markdown(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    return "\n".join([*lines, *("| " + " | ".join(cells) + " |" for cells in body)])


def _missing(row: dict[str, Any] | None) -> str | None:
    """What a cell shows for a row that has no measurement (None when it has one)."""
    if row is None:
        return ""
    return None if row["status"] == "measured" else str(row["status"])


def _at(lengths: list[int]) -> str:
    return ", ".join(_label(n) for n in lengths)


def _verdict(failed: list[int], measured: int) -> str:
    if not measured:
        return "not measured"
    return "yes" if not failed else f"no at {_at(failed)}"


def _notes(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per row that was skipped or ran out of memory, with its reason."""
    return [f"- {r['kind']} at L={r['L']}{' (causal)' if r['causal'] else ''}: {r['status']}: {r['reason']}"
            for r in rows if r["status"] != "measured"]


def table2_markdown(rows: Sequence[dict[str, Any]], causal: bool = False) -> str:
    """LRA's Table 2 layout: per kind and length, speed relative to V with its FLOP-ratio limit in parentheses and
    memory relative to V; V's own step time and peak memory in the first row; then whether the speed is within 10%
    of the limit and the memory at most V's at every length, and the skipped models with their reasons."""
    sel = [r for r in rows if bool(r["causal"]) == causal]
    lengths = _lengths(sel)
    body = []
    for kind in _kinds(sel):
        cells, slow, heavy, measured, weighed = [], [], [], 0, 0
        for n in lengths:
            r = _find(sel, kind, n, causal)
            missing = _missing(r)
            if missing is not None:
                cells += [missing, missing]
                continue
            measured += 1
            speed, limit, memory = _num(r["speed_vs_V"]), _num(r["speed_limit"]), _num(r["memory_vs_V"])
            if kind == "V":
                ms, mib = _num(r["step_ms"]), _num(r["peak_mib"])
                cells += [f"{ms:,.0f} ms" if ms >= 100 else f"{ms:.1f} ms",
                          "-" if math.isnan(mib) else f"{mib:,.0f} MiB" if mib >= 100 else f"{mib:.1f} MiB"]
                continue
            cells += [f"{speed:.2f} ({limit:.2f})" if not math.isnan(limit) else f"{speed:.2f}",
                      "-" if math.isnan(memory) else f"{memory:.2f}"]
            if not math.isnan(limit) and speed < (1 - SPEED_TOLERANCE) * limit:
                slow.append(n)
            if memory > 1.0:
                heavy.append(n)
            weighed += not math.isnan(memory)
        tail = ["", ""] if kind == "V" else [_verdict(slow, measured), _verdict(heavy, weighed)]
        body.append([kind, *cells, *tail])
    header = ["kind", *(c for n in lengths for c in (f"{_label(n)} speed (limit)", f"{_label(n)} memory")),
              f"speed within {SPEED_TOLERANCE:.0%} of limit", "memory at most V's"]
    notes = _notes(sel)
    return _markdown(header, body) + ("\n\n" + "\n".join(notes) if notes else "")


def causal_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """Causal against bidirectional training per kind and length: the bidirectional step time over the causal one
    (above 1: causal is faster), with the limit from the multiply-adds in parentheses; whether causal is at least
    as fast at every length, and at least 1.3x from 2K on."""
    sel = [r for r in rows if bool(r["causal"])]
    lengths = _lengths(sel)
    body = []
    for kind in _kinds(sel):
        cells, slower, short, measured = [], [], [], 0
        for n in lengths:
            r = _find(sel, kind, n, True)
            missing = _missing(r)
            speedup = math.nan if missing is not None else _num(r.get("causal_speedup"))
            if missing is not None or math.isnan(speedup):
                cells.append(missing or "-")
                continue
            measured += 1
            limit = _num(r.get("causal_limit"))
            cells.append(f"{speedup:.2f}x" + ("" if math.isnan(limit) else f" ({limit:.2f})"))
            if speedup < 1.0:
                slower.append(n)
            if n >= CAUSAL_AIM_FROM and speedup < CAUSAL_AIM:
                short.append(n)
        aimed = [n for n in lengths if n >= CAUSAL_AIM_FROM]
        body.append([kind + (" (SDPA)" if kind == "V" else ""), *cells, _verdict(slower, measured),
                     _verdict(short, measured) if aimed else "-"])
    header = ["kind", *(f"{_label(n)} bidirectional / causal time (limit)" for n in lengths),
              "causal at least as fast", f"at least {CAUSAL_AIM}x from {_label(CAUSAL_AIM_FROM)}"]
    notes = _notes(sel)
    return _markdown(header, body) + ("\n\n" + "\n".join(notes) if notes else "")


def goal_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The goals, one line each: every synthesized kind within 10% of its FLOP-ratio limit and at most V's
    peak memory (bidirectional), and causal training at least as fast as bidirectional (1.3x aimed at 2K-4K)."""
    lines = []
    synthesized = [k for k in _kinds(rows) if k not in ("V", "Linformer")]
    for kind in synthesized:
        bidir = [r for r in rows if r["kind"] == kind and not r["causal"] and r["status"] == "measured"]
        if bidir:
            slow = [int(r["L"]) for r in bidir if not r["within_10pct"]]
            heavy = [int(r["L"]) for r in bidir if _num(r["memory_vs_V"]) > 1.0]
            weighed = any(not math.isnan(_num(r["memory_vs_V"])) for r in bidir)
            memory = "not measured" if not weighed else "holds" if not heavy else "does not hold at " + _at(heavy)
            lines.append(f"goal {kind}: speed within {SPEED_TOLERANCE:.0%} of its FLOP-ratio limit: "
                         f"{'holds' if not slow else 'does not hold at ' + _at(slow)}; peak memory at most V's: "
                         f"{memory}")
        causal = [r for r in rows if r["kind"] == kind and r["causal"]]
        causal = [r for r in causal if not math.isnan(_num(r.get("causal_speedup")))]
        if causal:
            slower = [int(r["L"]) for r in causal if _num(r["causal_speedup"]) < 1.0]
            aimed = [r for r in causal if int(r["L"]) >= CAUSAL_AIM_FROM]
            short = [int(r["L"]) for r in aimed if _num(r["causal_speedup"]) < CAUSAL_AIM]
            aim = "not measured" if not aimed else "holds" if not short else "does not hold at " + _at(short)
            lines.append(f"goal causal {kind}: at least as fast as bidirectional: "
                         f"{'holds' if not slower else 'does not hold at ' + _at(slower)}; {CAUSAL_AIM}x from "
                         f"{_label(CAUSAL_AIM_FROM)}: {aim}")
    return lines
