"""Builders of docs/benchmarks.md's "LRA Table 2" section from ``benchmarks/results/bench_lra_table2.jsonl``
(``benchmarks/speed/lra_table2.py``, step 6 of ``measure_all.sh``), through the same functions that print the tables in
``synthformer bench --lra-table2`` (:mod:`synthformer.bench.lra_report`), so the docs and the command agree; and
of its "Where the time goes" table from ``bench_lra_profile.jsonl`` (``benchmarks/speed/lra_profile.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from doc_tables.bench import newest, note  # noqa: E402 - the sibling module
from synthformer.bench.lra_profile import profile_markdown  # noqa: E402
from synthformer.bench.lra_report import causal_markdown, table2_markdown  # noqa: E402


def _command(name: str) -> str:
    """The command that writes ``bench_NAME.jsonl``."""
    return f"python benchmarks/speed/{name}.py --record benchmarks/results/bench_{name}.jsonl"


def _built(name: str, table: Callable[[list[dict[str, Any]]], str], needs_causal: bool = False,
           command: str | None = None) -> Callable[[], str]:
    """A builder: ``table(rows)`` over the newest entry of ``bench_NAME.jsonl`` with the provenance line under it,
    or the command that fills it (``command``, default ``benchmarks/NAME.py``'s) while there is no record (or the
    record has no causal rows, for the causal table)."""

    def build() -> str:
        entry, record = newest(name)
        if entry is None or (needs_causal and not any(r["causal"] for r in entry["rows"])):
            return f"(not measured yet: `{command or _command(name)}` writes `{record}`)"
        return table(entry["rows"]) + "\n\n" + note(entry, record)

    build.__doc__ = table.__doc__
    return build


LRA_BUILDERS: dict[str, Callable[[], str]] = {
    "bench-lra-table2": _built("lra_table2", table2_markdown),
    "bench-lra-causal": _built("lra_table2", causal_markdown, needs_causal=True),
    "bench-lra-profile": _built("lra_profile", profile_markdown),
    # the same profile with attention dropout 0 (`lra_profile.py --set attention_dropout=0`), where V keeps SDPA's
    # fused kernel: the setting in which most long-length goals miss (docs/benchmarks.md, "Long lengths")
    "bench-lra-profile-no-dropout": _built(
        "lra_profile_no_dropout", profile_markdown,
        command="python benchmarks/speed/lra_profile.py --set attention_dropout=0 --record "
                "benchmarks/results/bench_lra_profile_no_dropout.jsonl"),
}
