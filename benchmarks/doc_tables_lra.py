"""Builders of docs/benchmarks.md's "LRA Table 2" section from ``benchmarks/results/bench_lra_table2.jsonl``
(``benchmarks/lra_table2.py``, step 6 of ``measure_all.sh``), through the same functions that print the tables in
``synthformer bench --lra-table2`` (:mod:`synthformer.bench.lra_report`), so the docs and the command agree.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from doc_tables_bench import newest, note  # noqa: E402 - the sibling module

from synthformer.bench.lra_report import causal_markdown, table2_markdown  # noqa: E402

#: the record's name (``bench_NAME.jsonl``) and the command that writes it
NAME = "lra_table2"
COMMAND = f"python benchmarks/lra_table2.py --record benchmarks/results/bench_{NAME}.jsonl"


def _built(table: Callable[[list[dict[str, Any]]], str], needs_causal: bool) -> Callable[[], str]:
    """A builder: ``table(rows)`` over the newest entry with the provenance line under it, or the command that
    fills it while there is no record (or the record has no causal rows, for the causal table)."""

    def build() -> str:
        entry, record = newest(NAME)
        if entry is None or (needs_causal and not any(r["causal"] for r in entry["rows"])):
            return f"(not measured yet: `{COMMAND}`, step 6 of `bash benchmarks/measure_all.sh`, writes `{record}`)"
        return table(entry["rows"]) + "\n\n" + note(entry, record)

    build.__doc__ = table.__doc__
    return build


LRA_BUILDERS: dict[str, Callable[[], str]] = {
    "bench-lra-table2": _built(table2_markdown, needs_causal=False),
    "bench-lra-causal": _built(causal_markdown, needs_causal=True),
}
