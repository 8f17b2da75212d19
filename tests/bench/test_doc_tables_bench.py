"""``benchmarks/doc_tables_bench.py`` and ``doc_tables_bench_goals.py``: docs/benchmarks.md's tables built from the
newest ``bench_*.jsonl`` entry, with the provenance line saying whether the CPU was shared, a placeholder until a
record exists, and each goal's verdict computed from the same numbers the table shows."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str, monkeypatch):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def bench(tmp_path, monkeypatch):
    module = _load("doc_tables_bench", monkeypatch)
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "RESULTS", tmp_path / "results")
    (tmp_path / "results").mkdir()
    return module


@pytest.fixture()
def goals(bench, monkeypatch):
    """The second module, loaded over the fresh ``bench`` (whose record folder is the test's)."""
    return _load("doc_tables_bench_goals", monkeypatch)


def _entry(name: str, rows: list[dict], date: str, shared: bool = False, **extra) -> str:
    return json.dumps({"table": name, "row": name, "rows": rows, "date": date, "commit": "abc1234",
                       "machine": "AMD EPYC, 2 CPUs", "torch": "2.13.0+cpu", "threads": 2, "shared_cpu": shared,
                       "command": "python benchmarks/attention.py", **extra})


def _record(tmp_path, name: str, rows: list[dict], **extra) -> None:
    with open(tmp_path / "results" / f"bench_{name}.jsonl", "a", encoding="utf-8") as fh:
        fh.write(_entry(extra.pop("table", f"bench_{name}"), rows, "2026-11-26 10:00 UTC", **extra) + "\n")


def _module_row(kind: str, length: int, ratio: float, causal: bool = False, dtype: str = "fp32", **more) -> dict:
    return {"L": length, "mode": "fwd+bwd", "kind": kind, "causal": causal, "dtype": dtype, "ms": 100.0 * ratio,
            "ratio_to_V": ratio, "flop_ratio": 0.8, "efficiency": 0.8 / ratio, "peak_MiB": float("nan"), **more}


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


def test_a_load_above_the_cores_is_reported_even_when_the_run_claimed_a_quiet_cpu(bench):
    entry = {"machine": "AMD EPYC, 2 CPUs", "shared_cpu": False}
    assert bench.cpu_use({**entry, "load_1min": [2.1, 2.4]}).startswith("nothing else running (1-minute load 2.1")
    busy = bench.cpu_use({**entry, "load_1min": [4.7, 5.0]})  # two more busy processes beside the 2 threads
    assert "other work ran beside it" in busy and "5.0" in busy
    assert "not a publishable timing" in bench.cpu_use({**entry, "shared_cpu": True, "load_1min": [1.0, 1.0]})


def test_without_a_record_a_builder_says_how_to_measure(bench):
    assert "bash benchmarks/measure_all.sh" in bench.BENCH_BUILDERS["bench-decode"]()


def test_the_model_table_reads_the_bench_csv_rows(goals, tmp_path):
    rows = [{"model": "Transformer", "params": "35590000", "flops_per_step": "4.56e11", "steps_per_s": "0.311",
             "steps_per_s_ratio": "1.0", "flop_ratio": "1.0", "efficiency": "1.0", "peak_mib": "1264.7",
             "paper_steps_per_s_ratio": "1.0", "kernel_sizes": ""},
            {"model": "Synthesizer (R)", "params": "35590000", "flops_per_step": "4.08e11", "steps_per_s": "0.386",
             "steps_per_s_ratio": "1.24", "flop_ratio": "1.12", "efficiency": "1.11", "peak_mib": "nan",
             "paper_steps_per_s_ratio": "1.09", "kernel_sizes": ""},
            {"model": "Dynamic Conv", "params": "34500000", "flops_per_step": "4.23e11", "steps_per_s": "0.358",
             "steps_per_s_ratio": "1.15", "flop_ratio": "1.08", "efficiency": "1.07", "peak_mib": "1012.1",
             "paper_steps_per_s_ratio": "", "kernel_sizes": "3-7-15-31-31-31"}]
    (tmp_path / "results" / "bench_model.jsonl").write_text(_entry("bench_model", rows, "2026-11-26 10:00 UTC") + "\n")
    text = goals.GOALS_BUILDERS["bench-model"]()
    assert "| Synthesizer (R) | 35.59M | 4.08e+11 | 0.386 | 1.24 | 1.12 | 1.11 | - | 1.09 |" in text
    assert "| Dynamic Conv (K=3-7-15-31-31-31) | 34.50M | 4.23e+11 | 0.358 | 1.15 | 1.08 | 1.07 | 1,012.1 | - |" in text
    assert "nothing else running" in text
    # issue 5: Syn (R) / Transformer = 0.386 / 0.311 = 1.24 >= 1.15; / Dynamic Conv = 0.386 / 0.358 = 1.08 < 1.6
    verdicts = goals.GOALS_BUILDERS["bench-model-goals"]()
    assert "| Syn (R) steps/s at least 1.15x Transformer's | 1.24 | fp32 yes |" in verdicts
    assert "| Syn (R) steps/s at least 1.6x Dynamic Conv's | 1.08 | fp32 no |" in verdicts


def test_issue_3_targets_are_judged_on_the_ratio_the_table_shows(bench, tmp_path):
    rows = [_module_row("V", 256, 1.0), _module_row("R", 256, 0.55), _module_row("FR", 256, 0.57),
            _module_row("D", 256, 1.02), _module_row("D+V", 256, 1.40)]
    _record(tmp_path, "targets_l256", rows)
    text = bench.BENCH_BUILDERS["bench-targets-l256"]()
    assert "| R | 55.0 | 0.55 | 1.82 | speed-up >= 1.8 | yes |" in text  # 1 / 0.55 = 1.82
    assert "| FR | 57.0 | 0.57 | 1.75 | speed-up >= 1.8 | no |" in text
    assert "| D | 102.0 | 1.02 | 0.98 | time <= 1x V | no |" in text
    assert "| D+V | 140.0 | 1.40 | 0.71 | time <= 1.6x V | yes |" in text
    long = [_module_row("V", n, 1.0) for n in (512, 1024)] + [_module_row("D", 512, 0.9), _module_row("D", 1024, 1.05)]
    _record(tmp_path, "l512_l1024", long)
    assert "| D | 0.90 | 1.05 | time <= 1x V | no at L=1024 |" in bench.BENCH_BUILDERS["bench-l512-l1024"]()


def test_issue_15_goals_come_from_the_goals_run(goals, tmp_path):
    rows = [_module_row("V", 1024, 1.0, peak_MiB=200.0), _module_row("D", 1024, 0.90, peak_MiB=180.0),
            _module_row("D", 256, 0.86), _module_row("V", 256, 1.0), _module_row("V", 1024, 0.8, causal=True),
            _module_row("D", 1024, 0.60, causal=True), _module_row("V", 256, 1.0, dtype="bf16"),
            _module_row("D", 256, 0.7, dtype="bf16")]
    _record(tmp_path, "goals", rows)
    table = goals.GOALS_BUILDERS["bench-goals"]()
    assert "| D | 0.86 | 0.80 | 0.93 | <= 0.85 | no | 0.90 | 0.80 | 0.89 | <= 0.92 | yes |" in table
    assert "| FD |  |  |  | <= 0.78 |  |" in table  # a kind the run lacks: its goal, no numbers, no verdict
    other = goals.GOALS_BUILDERS["bench-goals-other"]()
    assert "D 1.50x (V through SDPA: 1.25x) | no |" in other  # 90 ms / 60 ms; FD and R+V were not measured
    assert "180 MiB against V's 200: 0.90x | yes |" in other
    assert "order bf16: D, fp32: D | yes |" in other


def test_hf_goals_and_threads(goals, tmp_path):
    rows = [{"kind": k, "beams": b, "native_tokens_per_s": 100.0, "hf_tokens_per_s": 100.0 / (1 + o),
             "hf_overhead": o, "same_tokens": True} for k, b, o in (("V", 1, 0.02), ("R", 4, 0.12))]
    _record(tmp_path, "hf_generate", rows, cache_bytes_per_token={"V": 24672.0, "R": 12384.0})
    text = goals.GOALS_BUILDERS["bench-hf-goals"]()
    assert "| the wrapper costs at most 10% | at most +12.0% (R, beam 4) | no |" in text
    assert "| R's cache 0.5x V's | 0.50x | yes |" in text and "2 of 2 rows | yes |" in text
    assert "| R | 12,384 | 0.50x |" in goals.GOALS_BUILDERS["bench-hf-cache"]()
    _record(tmp_path, "threads", [{"scenario": "2 processes", "threads": 1, "tokens_per_s": [1000.4, 2000.0]}])
    assert "| 2 processes | 1 | 1,000 / 2,000 | 3,000 |" in goals.GOALS_BUILDERS["bench-threads"]()
