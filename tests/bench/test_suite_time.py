"""benchmarks/speed/suite_time.py reads pytest's summary line, and the README's quoted suite time is the newest
passing record's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .scripts import load_script


def test_the_summary_counts(monkeypatch) -> None:
    timing = load_script("speed/suite_time", monkeypatch)
    assert timing.counts("....\n== 5219 passed, 4 skipped, 1 error in 650.12s (0:10:50) ==") == {
        "passed": 5219, "skipped": 4, "error": 1}
    assert timing.counts("3 failed, 10 passed in 2.0s") == {"failed": 3, "passed": 10}
    assert timing.counts("no summary here") == {}


def test_the_fact_is_the_newest_passing_timing(tmp_path: Path, monkeypatch) -> None:
    facts = load_script("doc_tables/results", monkeypatch)
    monkeypatch.setattr(facts, "RESULTS", tmp_path)
    assert "no passing timing recorded yet" in facts.suite_time()
    record = tmp_path / "suite_time.jsonl"
    # the newest line failed (status 1): the quoted time is the newest passing one, 171 s, not 150 s
    for wall, status in ((600.0, 0), (171.4, 0), (150.0, 1)):
        facts_line = {"table": "suite_time", "row": "suite", "wall_seconds": wall, "passed": 5300, "status": status,
                      "machine": "m", "date": "d"}
        with open(record, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(facts_line) + "\n")
    assert "| suite | 171 | 2.9 | 5300 | m | d |" in facts.suite_time()


def test_help_or_a_stray_argument_explains_and_starts_no_suite(monkeypatch, capsys) -> None:
    timing = load_script("speed/suite_time", monkeypatch)
    monkeypatch.setattr(timing.subprocess, "run", lambda *a, **k: pytest.fail("the suite was started"))
    for argv in (["--help"], ["--bogus"]):
        with pytest.raises(SystemExit):
            timing.main(argv)
    assert "usage: suite_time.py" in capsys.readouterr().out


def test_the_entry_says_whether_the_bytecode_caches_are_written(monkeypatch) -> None:
    timing = load_script("speed/suite_time", monkeypatch)
    assert timing.bytecode_cached({}) and timing.bytecode_cached({"PYTHONDONTWRITEBYTECODE": ""})
    assert not timing.bytecode_cached({"PYTHONDONTWRITEBYTECODE": "1"})
