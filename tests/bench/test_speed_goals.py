"""The long-length goals (``bench.goals.speed_goals``), the script that measures them
(``benchmarks/speed/speed_goals.py``) on tiny shapes, and the doc table built from its record."""

from __future__ import annotations

import json
import math

import pytest

from synthformer.bench.goals import FLOP_LIMIT_KINDS, LIGHT_KINDS, speed_goals

from .scripts import doc_builders, load_script


def _row(kind: str, ratio: float, flops: float = 1.0, peak: float = 100.0, length: int = 1024,
         dropout: float = 0.0) -> dict:
    return {"kind": kind, "L": length, "batch": 16, "dropout": dropout, "ms": 1000.0 * ratio, "ratio_to_V": ratio,
            "flop_ratio": flops, "peak_MiB": peak}


def test_each_goal_is_its_flop_ratio_with_ten_percent_or_055_for_r_and_fr():
    rows = [_row("V", 1.0), _row("D", 0.96, flops=0.88, peak=90.0), _row("FD", 0.80, flops=0.64, peak=120.0),
            _row("R", 0.55), _row("FR", 0.56), _row("Conv", 9.0)]
    goals = {g["kind"]: g for g in speed_goals(rows)}
    assert set(goals) == {"D", "FD", "R", "FR"}  # V is the unit; Conv has no goal
    assert goals["D"]["time_goal"] == pytest.approx(0.968) and goals["D"]["time_holds"]
    assert goals["D"]["peak_to_V"] == pytest.approx(0.9) and goals["D"]["memory_holds"] is True
    assert goals["FD"]["time_goal"] == pytest.approx(0.704) and not goals["FD"]["time_holds"]
    assert goals["FD"]["memory_holds"] is False
    assert goals["R"]["time_holds"] and not goals["FR"]["time_holds"] and goals["R"]["memory_holds"] is None


def test_memory_is_judged_against_v_at_the_same_length_and_dropout_and_unmeasured_is_none():
    rows = [_row("V", 1.0, peak=100.0), _row("V", 1.0, peak=400.0, dropout=0.1),
            _row("GLU", 1.0, peak=300.0, dropout=0.1), _row("D+V", 1.0, flops=1.38, peak=math.nan)]
    goals = {(g["kind"], g["dropout"]): g for g in speed_goals(rows)}
    assert goals["GLU", 0.1]["memory_holds"] is True and goals["GLU", 0.1]["peak_to_V"] == pytest.approx(0.75)
    assert goals["D+V", 0.0]["memory_holds"] is None and goals["D+V", 0.0]["time_holds"]


def test_the_script_measures_every_goal_kind_and_records_the_cpu(monkeypatch, tmp_path, capsys):
    script = load_script("speed/speed_goals", monkeypatch)
    record = tmp_path / "bench_speed_goals.jsonl"
    rows = script.main(["--lengths", "16", "--batch", "16=2", "--d-model", "16", "--heads", "2", "--repeats", "1",
                        "--warmup", "0", "--record", str(record)])
    assert {(r["kind"], r["dropout"]) for r in rows} == {(k, p) for k in script.KINDS for p in (0.0, 0.1)}
    assert all(r["ms"] > 0 and r["flop_ratio"] > 0 and r["peak_MiB"] > 0 and r["batch"] == 2 for r in rows)
    out = capsys.readouterr().out
    assert out.count("goal ") == 2 * len(FLOP_LIMIT_KINDS + LIGHT_KINDS)
    entry = json.loads(record.read_text())
    assert entry["table"] == "bench_speed_goals" and entry["cpu_capability"] and len(entry["rows"]) == len(rows)
    assert set(entry["thresholds"]) == {"fuse_min_keys", "features_materialize_max_len", "fr_sdpa_min_len"}
    assert entry["calibration"] is None  # the test suite runs with SYNTHFORMER_CALIBRATION=off
    with pytest.raises(SystemExit):
        script.main(["--lengths", "16", "32", "--batch", "16=2"])
    assert "--batch names lengths [16] but the lengths measured are [16, 32]" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        script.main(["--lengths", "16", "--batch", "0"])
    assert "--batch '0': expected a positive whole number" in capsys.readouterr().err


def test_the_doc_table_gives_each_verdict_beside_its_numbers(monkeypatch, tmp_path):
    bench = load_script("doc_tables/bench", monkeypatch)
    monkeypatch.setattr(bench, "ROOT", tmp_path)
    monkeypatch.setattr(bench, "RESULTS", tmp_path / "results")
    build = doc_builders(monkeypatch)["bench-speed-goals"]
    assert build().startswith("(not measured yet")
    rows = [_row("V", 1.0), _row("D", 0.96, flops=0.88, peak=90.0), _row("R", 0.60),
            _row("V", 1.0, dropout=0.1, peak=400.0), _row("D", 0.70, flops=0.88, peak=90.0, dropout=0.1)]
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "bench_speed_goals.jsonl").write_text(json.dumps(
        {"table": "bench_speed_goals", "row": "bench_speed_goals", "rows": rows, "date": "2026-11-28 11:00 UTC",
         "commit": "abc1234", "machine": "AMD EPYC, 2 CPUs", "torch": "2.13.0+cpu", "threads": 2,
         "shared_cpu": False, "command": "python benchmarks/speed/speed_goals.py", "cpu_capability": "AVX2",
         "thresholds": {"fuse_min_keys": 1024, "fr_sdpa_min_len": 2048}, "calibration": None}) + "\n")
    text = build()
    assert "| V, L=1024 (B=16) | 1,000 ms |  |  |  | 1,000 ms |  |  |  |" in text
    assert "| D, L=1024 | 0.96 | <= 0.97 | yes | 0.90 (yes) | 0.70 | <= 0.97 | yes | 0.23 (yes) |" in text
    assert "| R, L=1024 | 0.60 | <= 0.55 | no |  |  |  |  |  |" in text
    assert "CPU capability (torch): AVX2" in text and "Record: `results/bench_speed_goals.jsonl`" in text
    assert "thresholds in force: `fuse_min_keys` 1024, `fr_sdpa_min_len` 2048 (the library's defaults)." in text

