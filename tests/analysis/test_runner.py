"""``synthformer analyze`` end to end on tiny trained runs: every figure is a valid, non-blank PNG of its layout's
size; analysis.json holds alpha for every mixture layer and head; the report links every figure; the CLI verb and
study directories work; bad options fail in one line."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from synthformer.analysis import analyze, analyze_run, find_runs
from synthformer.analysis.figures import alpha_figure_size, figure_size, grid
from synthformer.analysis.report import run_name
from synthformer.cli import analyze as analyze_cli
from synthformer.train import RunError

from ..tasks.helpers import classification_config
from .runs import train_tiny

#: the tests of tests/analysis that read the session's tiny trained runs (tests/analysis/conftest.py) in one
#: xdist worker, so each run is trained once per suite instead of once per worker that uses it
pytestmark = pytest.mark.xdist_group("analysis-runs")


def _expected_sizes(data: dict) -> dict[str, tuple[int, int]]:
    """The pixel size (width, height) of each figure, from the layout each one has."""
    layers = list(data["layers"].values())
    sizes = {}
    for stack in ("encoder", "decoder"):
        mine = [layer for layer in layers if layer["stack"] == stack]
        if not mine:
            continue
        per_layer = len(mine[0]["histogram"]["trained"])  # the layers are alike: one layer per row
        sizes[f"histogram_{stack}.png"] = figure_size(len(mine), per_layer)
        sizes[f"distance_{stack}.png"] = figure_size(*grid(len(mine)))
        bars = sum(layer["heads"] for layer in mine if layer["alpha"])
        if bars:
            sizes[f"alpha_{stack}.png"] = alpha_figure_size(bars)
        for layer in mine:
            parts = len(layer["parts"]) + (1 if layer["alpha"] else 0)  # a mixture adds its own row
            sizes[f"heatmap_{stack}_layer{layer['layer']}.png"] = figure_size(parts, layer["heads"])
    return sizes


def _check_figures(out: Path, data: dict) -> None:
    expected = _expected_sizes(data)
    assert sorted(data["figures"]) == sorted(expected)
    for name, (width, height) in expected.items():
        path = out / name
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        pixels = imread(path)  # (height, width, channels)
        assert pixels.shape[:2] == (height, width), name
        assert float(np.std(pixels)) > 0.01, f"{name} is blank"


def test_lm_analysis_renders_every_figure(lm_run, tmp_path) -> None:
    result = analyze_run(lm_run.path, tmp_path / "out", max_batches=2, positions=12)
    data = json.loads((tmp_path / "out" / "analysis.json").read_text(encoding="utf-8"))
    assert data["seed"] == 3 and data["kinds"] == {"decoder": "R+V"} and data["step"] == 6
    assert data["figures"] == [p.name for p in result.figures]
    _check_figures(tmp_path / "out", data)
    layer = data["layers"]["decoder_layer1"]
    # alpha for every head of the mixture layer, summing to 1
    assert layer["alpha"]["parts"] == ["R", "V"]
    assert [row["head"] for row in layer["alpha"]["per_head"]] == [1, 2]
    for row in layer["alpha"]["per_head"]:
        assert row["R"] + row["V"] == pytest.approx(1.0)
    for state in ("init", "trained"):
        for part in ("R", "V", "R+V"):
            hist = layer["histogram"][state][part]
            assert hist["count"] > 0 and sum(hist["counts"]) == hist["count"]
            dist = layer["distance"][state][part]
            assert 0.0 < dist["local_mass"] <= 1.0 and len(dist["local_mass_per_head"]) == 2
            assert dist["distances"] == list(range(16))  # a causal LM of max_len 16
    assert data["example"]["tokens"].keys() == {"decoder"}  # an LM has no encoder
    assert data["example"]["positions_shown"] == 12
    report = (tmp_path / "out" / "analysis.md").read_text(encoding="utf-8")
    for name in data["figures"]:
        assert f"]({name})" in report
    assert "Random + Vanilla (R+V)" in report and "train.seed" in report


def test_seq2seq_analysis_has_both_stacks_and_a_text_example(seq2seq_run, tmp_path) -> None:
    result = analyze_run(seq2seq_run.path, tmp_path / "out", example="123", max_batches=1)
    data = result.data
    assert data["kinds"] == {"encoder": "D", "decoder": "R"}
    assert all(layer["alpha"] is None for layer in data["layers"].values())  # no mixture, no alpha figure
    _check_figures(tmp_path / "out", data)
    assert data["example"]["tokens"]["encoder"] == ["1", "2", "3", "<eos>"]
    assert data["example"]["tokens"]["decoder"][0] == "<bos>"
    # the encoder is bidirectional: distances on both sides
    assert min(data["layers"]["encoder_layer1"]["distance"]["trained"]["D"]["distances"]) < 0


def test_cli_verb_and_a_study_directory(lm_run, tmp_path, capsys) -> None:
    study = tmp_path / "study"
    for name in ("R+V_seed0", "R+V_seed1"):
        shutil.copytree(lm_run.path, study / "runs" / name)
    parser = argparse.ArgumentParser()
    analyze_cli.register(parser.add_subparsers())
    args = parser.parse_args(["analyze", str(study), "--batches", "1", "--example-index", "2"])
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    assert "attention mass within distance 4" in out and "index of the study's runs" in out
    for name in ("R+V_seed0", "R+V_seed1"):
        folder = study / "analysis" / "runs" / name
        assert (folder / "analysis.json").is_file() and (folder / "heatmap_decoder_layer1.png").is_file()
        assert json.loads((folder / "analysis.json").read_text())["example"]["source"] == "valid example 2"
    index = (study / "analysis" / "analysis.md").read_text(encoding="utf-8")
    assert "(runs/R+V_seed0/analysis.md)" in index and "R+V_seed1" in index
    # a study's runs (OUT/<variant>/seed<k>) are named with their variant in titles and reports
    assert run_name(study / "R+V" / "seed1") == "R+V/seed1" and run_name(lm_run.path) == lm_run.path.name
    # a second analysis of the study would not take its own output folder for runs
    assert find_runs(study) == [study / "runs" / "R+V_seed0", study / "runs" / "R+V_seed1"]


def test_bad_inputs_fail_in_one_line(lm_run, tmp_path) -> None:
    with pytest.raises(ValueError, match=r"--example-index 999 is out of range: the valid split has \d+ examples"):
        analyze_run(lm_run.path, tmp_path / "a", example_index=999, max_batches=1)
    with pytest.raises(RunError, match="has no 'test' split \\(it has: train, valid\\)"):
        analyze_run(lm_run.path, tmp_path / "c", split="test")
    with pytest.raises(RunError, match="neither a run directory nor a study directory"):
        analyze(tmp_path)
    with pytest.raises(RunError, match="not found"):
        analyze(tmp_path / "missing")
    with pytest.raises(ValueError, match="gives no token"):
        analyze_run(lm_run.path, tmp_path / "b", example="", max_batches=1)
    parser = argparse.ArgumentParser()
    analyze_cli.register(parser.add_subparsers())
    with pytest.raises(SystemExit):  # argparse: --example and --example-index exclude each other
        parser.parse_args(["analyze", str(lm_run.path), "--example", "x", "--example-index", "1"])
    for option in ("--batches", "--positions"):
        args = parser.parse_args(["analyze", str(lm_run.path), option, "0"])
        with pytest.raises(analyze_cli.CliError, match=f"{option} must be >= 1, got 0"):
            args.handler(args)


def test_classifier_analysis_has_the_encoder_only(tmp_path) -> None:
    train_tiny(tmp_path / "run", classification_config(tmp_path, steps=2, eval_every=0))
    with pytest.raises(ValueError, match="--example-index 999 is out of range"):
        analyze_run(tmp_path / "run", example_index=999, max_batches=1)
    assert not (tmp_path / "run" / "analysis").exists()  # a refused analysis leaves the run as it was
    result = analyze_run(tmp_path / "run", max_batches=1)  # default output folder: RUN_DIR/analysis
    assert result.out == tmp_path / "run" / "analysis"
    assert result.data["kinds"] == {"encoder": "R+V"} and result.data["example"]["tokens"].keys() == {"encoder"}
    _check_figures(result.out, result.data)
    # padding is left out and each real query's weights over the real keys sum to 1: the weights counted add up
    # to one per (real query, head)
    layer = result.data["layers"]["encoder_layer1"]
    for part in ("R", "V", "R+V"):
        hist, dist = layer["histogram"]["trained"][part], layer["distance"]["trained"][part]
        assert hist["mean"] * hist["count"] == pytest.approx(dist["query_rows"] * layer["heads"])
        assert hist["count"] < dist["query_rows"] * layer["heads"] * 16  # fewer pairs than unpadded (max_len 16)
