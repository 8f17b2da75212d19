"""docs/reliability.md's "Long runs" table is the one the long-run tests inject (long_runs.py): each row's count of
injections is the number of cases its test runs, and each case asserts survival (and a bit-exact resume where the
row says so)."""

from __future__ import annotations

from pathlib import Path

from .long_runs import FAULTS, table

DOC = Path(__file__).resolve().parents[2] / "docs" / "reliability.md"


def test_the_long_runs_table_of_the_doc_is_the_tests():
    text = DOC.read_text(encoding="utf-8")
    assert table() in text, f"docs/reliability.md: replace the 'Long runs' table by\n{table()}"
    total = sum(len(f.cases) for f in FAULTS)
    assert f"**{total} faults injected, {total} survived with their checkpoints intact**" in text


def test_every_row_has_cases_of_its_own():
    ids = [case for f in FAULTS for case in f.cases]
    assert len(ids) == len(set(ids)) and all(f.cases for f in FAULTS)
