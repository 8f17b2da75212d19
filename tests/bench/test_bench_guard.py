"""``benchmarks/speed/bench_guard.py``: the current tree against a commit in alternating rounds, each tree in a process
of its own, one record line per (kind, L, dropout, causal); the verdict rule; and ``doc_tables/guard.py``'s table.
No timing is asserted: only the structure, and that the numbers are finite and positive."""

from __future__ import annotations

import json
import math
import subprocess

import pytest

from .scripts import BENCH, load_script


@pytest.fixture()
def guard(monkeypatch):
    return load_script("speed/bench_guard", monkeypatch)


TINY = ["--lengths", "16", "--batch", "2", "--d-model", "16", "--heads", "2", "--rounds", "3", "--repeats", "1",
        "--warmup", "0", "--threads", "1", "--dropout", "0", "0.1"]


def test_quick_against_head_records_one_line_per_row_with_its_ratios(guard, tmp_path, capsys):
    record = tmp_path / "bench_guard.jsonl"
    # the commit named by its hash: HEAD itself may move meanwhile (other work commits in this tree)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=BENCH.parent, capture_output=True, text=True,
                          check=True).stdout.strip()
    argv = ["--quick", "--against", head, "--kinds", "R", "Nope", *TINY, "--causal", "causal", "--record", str(record)]
    assert guard.main(argv) == 0
    entries = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(e["kind"], e["dropout"]) for e in entries] == [(k, p) for p in (0.0, 0.1) for k in ("V", "R", "Nope")]
    assert len({e["run"] for e in entries}) == 1 and all(e["against"] == head[:12] for e in entries)
    for e in entries:
        assert e["table"] == "bench_guard" and e["causal"] is True and e["L"] == 16 and e["quick"] is True
        assert {"command", "date", "machine", "commit", "threads", "load_1min"} <= e.keys()
    measured = [e for e in entries if e["kind"] != "Nope"]
    for e in measured:
        numbers = [e["new_ms"], e["old_ms"], e["ratio"], e["ratio_min"], e["ratio_max"], e["new_vs_V"], e["old_vs_V"]]
        assert all(math.isfinite(x) and x > 0 for x in numbers)
        assert e["ratio_min"] <= e["ratio_q1"] <= e["ratio"] <= e["ratio_q3"] <= e["ratio_max"]
        assert len(e["round_ratios"]) == len(e["new_round_ms"]) == 3 and e["verdict"] in ("slower", "faster", "same")
    assert all(e["new_vs_V"] == e["old_vs_V"] == 1.0 for e in measured if e["kind"] == "V")
    # a kind the commit does not know is reported for its row; the other rows are measured anyway
    unknown = [e for e in entries if e["kind"] == "Nope"]
    assert all(e["error"].startswith("old tree: ValueError") and "ratio" not in e for e in unknown)
    assert "2 not called" in capsys.readouterr().out


def test_a_worker_that_imported_another_tree_is_refused(guard, tmp_path):
    """The check behind every run: a tree's worker must have imported the package under that tree's ``src``
    (without it, a missing or shadowed package would compare one tree with itself and call it a clean result)."""
    (tmp_path / "old" / "src" / "synthformer").mkdir(parents=True)
    old = tmp_path / "old" / "src"
    guard.check_import("old", {"synthformer": str(old / "synthformer" / "__init__.py")}, old)
    with pytest.raises(RuntimeError, match="imported .*/main/src/synthformer/__init__.py, not the package under"):
        guard.check_import("old", {"synthformer": "/work/main/src/synthformer/__init__.py"}, old)


def test_a_difference_is_called_only_beyond_the_spread_of_the_rounds(guard):
    assert guard.verdict([1.10, 1.20, 1.15], 0.02) == "slower"
    assert guard.verdict([0.80, 0.90, 0.85, 0.95, 0.90], 0.02) == "faster"
    assert guard.verdict([0.90, 1.05, 0.95], 0.02) == "same"  # one round on the other side of 1
    assert guard.verdict([1.01, 1.01, 1.015], 0.02) == "same"  # all above 1, but within the tolerance
    assert guard.verdict([1.5, 1.6], 0.02) == "not called"  # too few rounds to call anything
    row = guard.summarize({"new": [2.0, 4.0, 3.0], "old": [1.0, 2.0, 3.0]}, {"new": [1.0, 2.0, 1.0],
                                                                            "old": [1.0, 1.0, 1.0]}, 0.02)
    assert row["round_ratios"] == [2.0, 2.0, 1.0] and row["ratio"] == 2.0 and row["ratio_min"] == 1.0
    assert row["new_vs_V"] == 2.0 and row["old_vs_V"] == 2.0 and row["verdict"] == "same"


def test_quick_fills_only_the_options_not_given_and_records_only_when_asked(guard):
    quick = guard.parse_args(["--quick", "--lengths", "64"])
    assert quick.lengths == [64] and quick.kinds == guard.QUICK["kinds"] and quick.record is None
    full = guard.parse_args(["--kinds", "D", "V", "D"])
    assert full.kinds == ["V", "D"] and full.lengths == [256, 1024] and full.record == guard.RECORD
    assert guard.parse_args(["--no-record"]).record is None
    assert full.batch == {256: 16, 1024: 16}


def test_the_batch_can_be_set_per_length_and_a_wrong_one_is_named(guard, capsys):
    assert guard.parse_args(["--batch", "256=16", "1024=4"]).batch == {256: 16, 1024: 4}
    assert guard.parse_args(["--lengths", "64", "--batch", "3"]).batch == {64: 3}
    for bad, message in ((["--batch", "256=16"], "names lengths [256] but the lengths measured are [256, 1024]"),
                         (["--batch", "1024=four", "256=1"], "'1024=four': expected L=B"),
                         (["--batch", "0"], "'0': expected a positive whole number")):
        with pytest.raises(SystemExit):
            guard.parse_args(bad)
        assert message in capsys.readouterr().err


def _entry(run: str, kind: str, causal: bool, quick: bool = False, **numbers) -> dict:
    base = {"table": "bench_guard", "row": f"{kind} L=256 dropout=0 {causal}", "run": run, "kind": kind, "L": 256,
            "dropout": 0.0, "causal": causal, "against": "abc123456789", "against_ref": "HEAD", "quick": quick,
            "rounds": 5, "repeats": 3, "warmup": 1, "batch": 16, "d_model": 512, "heads": 8, "date": run[:16],
            "commit": "def4567", "machine": "AMD EPYC, 2 CPUs", "torch": "2.13.0+cpu", "threads": 2,
            "shared_cpu": False, "command": "python benchmarks/speed/bench_guard.py"}
    ratio = numbers.get("ratio", 1.0)
    return {**base, "ratio": ratio, "ratio_min": ratio - 0.05, "ratio_max": ratio + 0.05, "verdict": "same",
            "new_vs_V": 0.5, "old_vs_V": 0.6, **numbers}


def test_the_doc_table_shows_the_newest_full_run_with_spreads_and_verdicts(monkeypatch, tmp_path):
    builder = load_script("doc_tables/guard", monkeypatch)
    monkeypatch.setattr(builder, "ROOT", tmp_path)
    monkeypatch.setattr(builder, "RESULTS", tmp_path / "results")
    assert builder.guard_table().startswith("(not measured yet: `python benchmarks/speed/bench_guard.py`")
    old, new, quick = "2026-11-27 10:00:00 UTC", "2026-11-28 10:00:00 UTC", "2026-11-29 10:00:00 UTC"
    lines = [_entry(old, "D", False, ratio=1.50),
             _entry(new, "V", False), _entry(new, "D", False, ratio=1.20, verdict="slower"),
             _entry(new, "D", True, ratio=0.80, verdict="faster"),
             {**_entry(new, "R", False), "error": "old tree: ValueError: unknown kind"},
             _entry(quick, "D", False, quick=True, ratio=9.0)]
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "bench_guard.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    text = builder.guard_table()
    assert "| kind, length | bidirectional, dropout 0 | causal, dropout 0 |" in text
    assert "| D, L=256 | 1.20 (1.15-1.25) **slower** | 0.80 (0.75-0.85) **faster** |" in text
    assert "| R, L=256 | error (old tree) |  |" in text and "| D, L=256 | 0.50 (0.60) | 0.50 (0.60) |" in text
    assert "1.50" not in text and "9.00" not in text  # the older run and the quick run are not shown
    assert "commit `abc123456789` (`HEAD`)" in text and "Record: `results/bench_guard.jsonl`" in text
    assert "; B=16, d_model 512" in text


def test_the_doc_table_names_each_lengths_batch_when_they_differ(monkeypatch, tmp_path):
    builder = load_script("doc_tables/guard", monkeypatch)
    monkeypatch.setattr(builder, "ROOT", tmp_path)
    monkeypatch.setattr(builder, "RESULTS", tmp_path / "results")
    run = "2026-11-28 10:00:00 UTC"
    long = {**_entry(run, "V", False), "L": 1024, "batch": 4, "row": "V L=1024 dropout=0 False"}
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "bench_guard.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in (_entry(run, "V", False), long)))
    assert "; B=16 at L=256, 4 at L=1024, d_model 512" in builder.guard_table()
