"""``benchmarks/doc_tables_bench.py``: docs/benchmarks.md's tables built from the newest ``bench_*.jsonl`` entry,
with the provenance line saying whether the CPU was shared; a placeholder until a record exists."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture()
def bench(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("doc_tables_bench", BENCH / "doc_tables_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["doc_tables_bench"] = module
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "RESULTS", tmp_path / "results")
    (tmp_path / "results").mkdir()
    return module


def _entry(name: str, rows: list[dict], date: str, shared: bool = False) -> str:
    return json.dumps({"table": name, "row": name, "rows": rows, "date": date, "commit": "abc1234",
                       "machine": "AMD EPYC, 2 CPUs", "torch": "2.13.0+cpu", "threads": 2, "shared_cpu": shared,
                       "command": "python benchmarks/attention.py"})


def test_the_module_table_is_the_newest_entry_pivoted_by_length(bench, tmp_path):
    row = {"mode": "fwd+bwd", "causal": False}
    old = [{**row, "L": 256, "kind": "V", "ratio_to_V": 1.0}, {**row, "L": 256, "kind": "D", "ratio_to_V": 0.95}]
    new = [{**row, "L": 256, "kind": "V", "ratio_to_V": 1.0}, {**row, "L": 256, "kind": "D", "ratio_to_V": 0.87},
           {**row, "L": 1024, "kind": "V", "ratio_to_V": 1.0}, {**row, "L": 1024, "kind": "D", "ratio_to_V": 1.05}]
    (tmp_path / "results" / "bench_module.jsonl").write_text(
        _entry("bench_module", old, "2026-11-24 09:00 UTC") + "\n" + _entry("bench_module", new, "2026-11-26 09:00 UTC",
                                                                            shared=True) + "\n")
    text = bench.BENCH_BUILDERS["bench-module-fwdbwd"]()
    assert "| kind | L=256 | L=1024 |" in text and "| D | 0.87 | 1.05 |" in text and "0.95" not in text
    assert "2026-11-26 09:00 UTC" in text and "not a publishable timing" in text


def test_without_a_record_a_builder_says_how_to_measure(bench):
    assert "bash benchmarks/measure_all.sh" in bench.BENCH_BUILDERS["bench-decode"]()


def test_the_model_table_reads_the_bench_csv_rows(bench, tmp_path):
    rows = [{"model": "Transformer", "params": "35590000", "flops_per_step": "4.56e11", "steps_per_s": "0.311",
             "steps_per_s_ratio": "1.0", "flop_ratio": "1.0", "efficiency": "1.0", "peak_mib": "1264.7",
             "paper_steps_per_s_ratio": "1.0"},
            {"model": "Synthesizer (R)", "params": "35590000", "flops_per_step": "4.08e11", "steps_per_s": "0.386",
             "steps_per_s_ratio": "1.24", "flop_ratio": "1.12", "efficiency": "1.11", "peak_mib": "nan",
             "paper_steps_per_s_ratio": "1.09"}]
    (tmp_path / "results" / "bench_model.jsonl").write_text(_entry("bench_model", rows, "2026-11-26 10:00 UTC") + "\n")
    text = bench.BENCH_BUILDERS["bench-model"]()
    assert "| Synthesizer (R) | 35.59M | 4.08e+11 | 0.386 | 1.24 | 1.12 | 1.11 | - | 1.09 |" in text
    assert "nothing else running" in text
