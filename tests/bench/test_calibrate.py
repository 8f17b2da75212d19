"""This machine's fast-path thresholds: the calibration file (read, written, refused) and the rule that chooses
them (``synthformer bench --calibrate``), which may only lower a threshold towards the path without an L x L
tensor.

In tests/bench, not tests/attention: importing ``synthformer.bench`` imports triton, which must come after
tests/attention/test_triton.py sets ``TRITON_INTERPRET=1`` as the test modules are collected."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

from synthformer.attention.fast import calibration
from synthformer.attention.fast.settings import FastPathSettings
from synthformer.bench import calibrate as calib
from synthformer.bench import main as bench_main


def test_a_stored_entry_for_this_machine_is_read_and_another_machines_is_not(tmp_path):
    path = tmp_path / "fast_paths.json"
    assert calibration.load_calibration(path) == {}  # no file yet
    calibration.save_calibration({"fuse_min_keys": 512}, [{"L": 512}], path)
    assert calibration.load_calibration(path) == {"fuse_min_keys": 512}
    data = json.loads(path.read_text())
    data = {"Another CPU | AVX512 | torch 2.13.0": {"thresholds": {"fuse_min_keys": 64}}} | data
    path.write_text(json.dumps(data))
    assert calibration.load_calibration(path) == {"fuse_min_keys": 512}
    calibration.save_calibration({"fr_sdpa_min_len": 1024}, [], path)  # replaces this machine's entry only
    data = json.loads(path.read_text())
    assert data["Another CPU | AVX512 | torch 2.13.0"]["thresholds"] == {"fuse_min_keys": 64}
    assert data[calibration.machine_key()]["thresholds"] == {"fr_sdpa_min_len": 1024}
    assert not list(tmp_path.glob(".fast_paths.*"))  # no temporary file left behind


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", None, "unknown", "negative"])
def test_a_file_that_cannot_be_used_is_ignored_with_a_warning(tmp_path, caplog, content):
    path = tmp_path / "fast_paths.json"
    entries = {None: {"thresholds": {"fuse_min_keys": "512"}}, "unknown": {"thresholds": {"chunk_elements": 5}},
               "negative": {"thresholds": {"fr_sdpa_min_len": -1}}}
    text = content if content in ("{not json", "[1, 2]") else json.dumps({calibration.machine_key(): entries[content]})
    path.write_text(text)
    with caplog.at_level(logging.WARNING, logger="synthformer.attention.fast.calibration"):
        assert calibration.load_calibration(path) == {}
    assert f"ignoring the fast-path calibration in {path}" in caplog.text


def test_the_file_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNTHFORMER_CALIBRATION", "off")
    assert calibration.calibration_file() is None
    with pytest.raises(ValueError, match="SYNTHFORMER_CALIBRATION=off"):
        calibration.save_calibration({"fuse_min_keys": 512}, [])
    monkeypatch.setenv("SYNTHFORMER_CALIBRATION", str(tmp_path / "mine.json"))
    assert calibration.calibration_file() == tmp_path / "mine.json"
    monkeypatch.delenv("SYNTHFORMER_CALIBRATION")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert calibration.calibration_file() == tmp_path / "cache" / "synthformer" / "fast_paths.json"
    with pytest.raises(ValueError, match=r"not calibrated thresholds: \['chunk_elements'\]"):
        calibration.save_calibration({"chunk_elements": 5}, [], tmp_path / "x.json")


#: one child process forks a process per setting after importing torch (the import most of a process's start
#: costs, paid once instead of once per setting); each fork sets SYNTHFORMER_CALIBRATION and then imports
#: synthformer for the first time, so its defaults are read at import as in a fresh process
_DEFAULTS_CHILD = """
import os, sys
import torch
assert "synthformer" not in sys.modules
for setting in sys.argv[1:]:
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        os.environ["SYNTHFORMER_CALIBRATION"] = setting
        from synthformer.attention.fast.settings import DEFAULTS as d
        print(setting, d.fuse_min_keys, d.features_materialize_max_len, d.fr_sdpa_min_len, flush=True)
        os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0, setting
"""


def test_the_settings_defaults_carry_a_stored_calibration(tmp_path):
    """In a fresh process (the defaults are read once, at import), with and without the file."""
    path = tmp_path / "fast_paths.json"
    calibration.save_calibration({"features_materialize_max_len": 511, "fr_sdpa_min_len": 1024}, [], path)
    done = subprocess.run([sys.executable, "-c", _DEFAULTS_CHILD, str(path), "off"], capture_output=True,
                          text=True, check=True)
    defaults = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()}

    base = FastPathSettings()
    assert defaults[str(path)] == [str(base.fuse_min_keys), "511", "1024"]
    assert defaults["off"] == [str(base.fuse_min_keys), str(base.features_materialize_max_len),
                               str(base.fr_sdpa_min_len)]


def test_a_threshold_moves_down_only_to_where_the_linear_path_won_from_there_on():
    low, high = calib.THRESHOLDS[0], calib.THRESHOLDS[1]  # a "min" and a "max" threshold
    assert (low.bound, high.bound) == ("min", "max")
    assert calib.choose(low, {256: True, 512: True}, 1024) == 256
    assert calib.choose(low, {256: False, 512: True}, 1024) == 512
    assert calib.choose(low, {256: True, 512: False}, 1024) == 1024  # lost at the longest: the default stays
    assert calib.choose(high, {512: False, 1024: True}, 1024) == 1023  # 1024 itself takes the linear path
    assert calib.choose(high, {512: True, 1024: True}, 1024) == 511
    assert calib.choose(high, {512: True, 1024: False}, 1024) == 1024
    assert calib.choose(low, {256: True, 512: True}, 200) == 200  # never above the default


def test_calibrate_times_both_paths_of_every_threshold_and_stores_them(tmp_path, capsys):
    path = tmp_path / "fast_paths.json"
    tiny = ["--d-model", "16", "--heads", "2", "--tokens", "16", "--repeats", "1", "--warmup", "0"]
    assert bench_main(["--calibrate", *tiny, "--file", str(path)]) == 0
    out = capsys.readouterr().out
    entry = json.loads(path.read_text())[calibration.machine_key()]
    base = FastPathSettings()
    for threshold in calib.THRESHOLDS:
        assert 0 <= entry["thresholds"][threshold.field] <= getattr(base, threshold.field)
        assert f"{threshold.field}: L={threshold.lengths[-1]} linear path" in out
        rows = [r for r in entry["measurements"] if r["field"] == threshold.field]
        assert len(rows) == len(threshold.lengths) * len(threshold.kinds) * len(threshold.dropouts)
        assert all(r["stored_ms"] > 0 and r["linear_ms"] > 0 and r["stored_MiB"] > 0 and r["linear_MiB"] > 0
                   for r in rows)
    assert f"stored in {path}" in out
    with pytest.raises(SystemExit):
        bench_main(["--calibrate", "--d-model", "10", "--heads", "3", "--no-save"])
    assert "--d-model 10 is not divisible by --heads 3" in capsys.readouterr().err


def test_a_faster_linear_path_that_needs_more_memory_does_not_move_the_threshold(monkeypatch):
    """What the development machine showed for the feature kinds at 1K: SDPA faster than the fused blocks, but with
    a higher peak; the threshold stays."""
    def fake(threshold, length, *args):
        peak = 2.0 if length == 1024 else 0.5
        return [{"field": threshold.field, "L": length, "kind": k, "dropout": 0.0, "stored_ms": 10.0,
                 "linear_ms": 5.0, "stored_MiB": 1.0, "linear_MiB": peak} for k in threshold.kinds]

    monkeypatch.setattr(calib, "time_paths", fake)
    chosen, rows = calib.calibrate(thresholds=calib.THRESHOLDS[1:2])
    assert chosen == {"features_materialize_max_len": FastPathSettings().features_materialize_max_len}
    assert len(rows) == 2 * 3
    chosen, _ = calib.calibrate(thresholds=calib.THRESHOLDS[:1])  # faster and lighter at 256 and 512: moved
    assert chosen == {"fuse_min_keys": 256}
