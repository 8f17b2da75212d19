"""``benchmarks/speed/mixing_speed.py``: every kind of the mixing study trained as its runs build it, timed in rotated
rounds, one record line per kind; and ``doc_tables/mixing.py``'s table ``mixing-speed-quiet`` from that record. No
timing is asserted: only the structure, that the numbers are finite and positive, and V's ratio (1 by construction).
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from .scripts import doc_builders, load_script

#: the study's MQAR config, made small: a tiny model, a batch of 2 and a few generated examples
TINY = ["model.d_model=16", "model.d_ff=32", "train.batch_size=2", "task.generator_options.num_train=8",
        "task.generator_options.num_valid=4", "task.generator_options.num_test=4"]


@pytest.fixture()
def speed(monkeypatch):
    return load_script("speed/mixing_speed", monkeypatch)


def test_a_smoke_run_measures_every_kind_and_records_one_line_each(speed, tmp_path, capsys):
    record = tmp_path / "mixing_speed.jsonl"
    threads = torch.get_num_threads()
    assert speed.main(["--smoke", "--record", str(record), *TINY]) == 0
    assert torch.get_num_threads() == threads  # measured at one thread, the process's own count given back
    entries = [json.loads(line) for line in record.read_text().splitlines()]
    assert [e["kind"] for e in entries] == list(speed.KINDS)  # V first: the unit of the ratios
    assert len({e["run"] for e in entries}) == 1 and len({e["row"] for e in entries}) == len(entries)
    for e in entries:
        assert e["table"] == "mixing_speed" and e["smoke"] is True and e["setting"] == " ".join([e["config"], *TINY])
        assert e["config"] == "configs/mixing_mqar.yaml" and e["overrides"] == TINY
        assert {"command", "date", "machine", "commit", "threads", "shared_cpu", "load_1min"} <= e.keys()
        assert e["threads"] == 1 and e["shared_cpu"] is False and "--smoke" in e["command"]
        assert (e["rounds"], e["warmup"], e["steps"]) == (2, 1, 1)
        assert (e["batch_size"], e["length"]) == (2, 64)  # the override's batch, the config's 64 tokens
        numbers = [e["ms_per_step"], e["steps_per_second"], e["speed_vs_V"], e["speed_vs_V_min"],
                   e["speed_vs_V_max"], *e["round_ms"], *e["round_speed_vs_V"]]
        assert all(math.isfinite(x) and x > 0 for x in numbers)
        assert len(e["round_ms"]) == len(e["round_speed_vs_V"]) == 2 and e["parameters"] >= e["trainable"] > 0
        assert e["speed_vs_V_min"] == min(e["round_speed_vs_V"]) and e["speed_vs_V_max"] == max(e["round_speed_vs_V"])
        assert math.isclose(e["steps_per_second"], 1000.0 / e["ms_per_step"])
    v = entries[0]
    assert v["speed_vs_V"] == 1.0 and v["round_speed_vs_V"] == [1.0, 1.0]
    out, err = capsys.readouterr()
    assert "recorded in" in out and all(f"\n{k} " in out for k in speed.KINDS if k != "V")
    assert "# round 1/2 done" in err and "# round 2/2 done" in err  # a progress line per round, on stderr


def test_a_smoke_run_records_nothing_unless_asked_and_a_bad_kind_is_one_line(speed, capsys):
    args = speed.parse_args(["--smoke"])
    assert args.record is None and (args.rounds, args.warmup, args.steps) == (2, 1, 1)
    assert speed.main(["--smoke", "--kinds", "V,Nope", *TINY]) == 2
    assert "unknown attention kind 'Nope'" in capsys.readouterr().err


def test_the_options_and_the_order_of_the_rounds(speed, capsys):
    full = speed.parse_args(["--kinds", "D,V,R,D", "--rounds", "7"])
    assert full.kinds == ["V", "D", "R"] and full.record == speed.RECORD and full.threads == 1
    assert (full.rounds, full.warmup, full.steps) == (7, speed.FULL["warmup"], speed.FULL["steps"])
    assert speed.parse_args([]).kinds == list(speed.KINDS) and speed.parse_args(["--no-record"]).record is None
    with pytest.raises(SystemExit):
        speed.parse_args(["--config", "configs/mixing_mad.yaml", "--setting", "recall"])
    assert "give one" in capsys.readouterr().err
    kinds = ["V", "R", "D"]
    assert [speed.rotated(kinds, r) for r in range(4)] == [["V", "R", "D"], ["R", "D", "V"], ["D", "V", "R"],
                                                           ["V", "R", "D"]]


def test_a_setting_of_the_study_brings_its_config_and_overrides(speed):
    label, config, overrides = speed.setting_of(speed.parse_args(["--setting", "selective_copy", "model.d_model=16"]))
    s = speed.study.setting("selective_copy")
    assert (label, config, overrides) == ("selective_copy", s.config, (*s.overrides, "model.d_model=16"))
    assert speed.setting_of(speed.parse_args(["--config", "configs/mixing_mad.yaml"]))[0] == "configs/mixing_mad.yaml"


def test_the_summary_divides_v_by_each_kind_per_round_and_at_the_medians(speed):
    rows = speed.summarize({"V": [10.0, 20.0, 30.0], "R": [5.0, 5.0, 20.0]})
    assert rows["V"]["speed_vs_V"] == 1.0 and rows["V"]["round_speed_vs_V"] == [1.0, 1.0, 1.0]
    r = rows["R"]
    assert r["ms_per_step"] == 5.0 and r["steps_per_second"] == 200.0 and r["speed_vs_V"] == 4.0
    assert r["round_speed_vs_V"] == [2.0, 4.0, 1.5] and (r["speed_vs_V_min"], r["speed_vs_V_max"]) == (1.5, 4.0)


def _entry(run: str, kind: str, rate: float, ratio: float, smoke: bool = False,
           setting: str = "configs/mixing_mqar.yaml") -> dict:
    return {"table": "mixing_speed", "row": f"{setting} {kind}", "run": run, "setting": setting, "kind": kind,
            "config": setting, "overrides": [], "smoke": smoke, "rounds": 5, "warmup": 3, "steps": 20,
            "batch_size": 32, "length": 64, "ms_per_step": 1000.0 / rate, "steps_per_second": rate,
            "speed_vs_V": ratio, "speed_vs_V_min": ratio - 0.05, "speed_vs_V_max": ratio + 0.1,
            "date": run[:16] + " UTC", "commit": "abc1234", "machine": "AMD EPYC, 2 CPUs", "torch": "2.13.0+cpu",
            "threads": 1, "shared_cpu": False, "load_1min": [0.1, 1.0],
            "command": "python benchmarks/speed/mixing_speed.py"}


def test_the_doc_table_shows_every_kind_of_the_newest_full_run_with_its_ratio(monkeypatch, tmp_path):
    tables = load_script("doc_tables/mixing", monkeypatch)
    monkeypatch.setattr(tables, "ROOT", tmp_path)
    monkeypatch.setattr(tables, "RESULTS", tmp_path / "results")
    empty = "(no recorded row yet: `python benchmarks/speed/mixing_speed.py`)"
    assert tables.quiet_speed_table() == empty
    assert doc_builders(monkeypatch)["mixing-speed-quiet"]() == empty  # the registry's block is this table
    kinds = tables.study.KINDS
    old, new, smoke = "2026-12-05 10:00:00", "2026-12-06 10:00:00", "2026-12-07 10:00:00"
    lines = [_entry(old, k, 1.0, 9.0) for k in kinds]
    lines += [_entry(new, k, 10.0 + i, 1.0 + i / 10) for i, k in enumerate(kinds)]
    lines += [_entry(smoke, k, 99.0, 9.0, smoke=True) for k in kinds]  # a later smoke run: not shown
    lines += [_entry(new, k, 5.0, 1.0 + i / 5, setting="configs/mixing_mad.yaml") for i, k in enumerate(kinds[:2])]
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "mixing_speed.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    text = tables.quiet_speed_table()
    assert text.startswith("| kind | `configs/mixing_mqar.yaml` steps/s | × V (rounds' min-max) | "
                           "`configs/mixing_mad.yaml` steps/s | × V (rounds' min-max) |")
    for i, kind in enumerate(kinds):
        ratio = 1.0 + i / 10
        mad = f"5.0 | {1 + i / 5:.2f} ({1 + i / 5 - 0.05:.2f}-{1 + i / 5 + 0.1:.2f})" if i < 2 else "— | —"
        assert f"| {kind} | {10.0 + i:.1f} | {ratio:.2f} ({ratio - 0.05:.2f}-{ratio + 0.1:.2f}) | {mad} |" in text
    assert "9.00" not in text and "99.0" not in text  # neither the older run nor the smoke run
    assert "5 rounds, every kind once a round" in text and "batch 32 x 64 tokens" in text
    assert "Record: `results/mixing_speed.jsonl` (2026-12-06 10:00 UTC; commit abc1234" in text
    assert "nothing else running" in text and "`python benchmarks/speed/mixing_speed.py`" in text
