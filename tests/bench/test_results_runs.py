"""``benchmarks/studies/results_runs.py`` and ``benchmarks/records.py``: a row is recorded once with its metadata, a
recorded row is skipped, the newest entry of a row wins, training time leaves out the periodic validation, and a
benchmark script's ``--record`` appends an entry with the command. No training: the CLI is faked."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(path: str):
    """``benchmarks/PATH.py`` for the whole module's tests, under its import name (``studies.results_runs``)."""
    spec = importlib.util.spec_from_file_location(path.replace("/", "."), BENCH / f"{path}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runs():
    return _load("studies/results_runs")


@pytest.fixture(scope="module")
def records():
    return _load("records")


def _metrics(run_dir: Path, lines: list[dict]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def test_training_time_leaves_out_the_periodic_validation(runs, tmp_path):
    _metrics(tmp_path, [{"step": 50, "loss": 0.7, "tokens_per_s": 100.0, "elapsed_s": 10.0},
                        {"step": 100, "loss": 0.6, "tokens_per_s": 300.0, "elapsed_s": 20.0},
                        {"step": 100, "eval_loss": 0.5, "eval_accuracy": 0.8, "elapsed_s": 26.0},  # 6 s validating
                        {"step": 150, "loss": 0.5, "tokens_per_s": 200.0, "elapsed_s": 36.0}])
    got = runs.training_numbers(tmp_path)
    assert got == {"steps": 150, "elapsed_s": 36.0, "train_s": 30.0, "tokens_per_s": 200.0,
                   "valid": {"eval_loss": 0.5, "eval_accuracy": 0.8}}


def test_a_row_is_recorded_once_with_its_command_and_metadata(runs, records, tmp_path, monkeypatch):
    calls: list[list[str]] = []

    def fake_cli(args: list[str], log: Path, threads: int | None) -> float:
        calls.append(args)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("x: TransformerClassifier, 3,022,082 trainable parameters\n", encoding="utf-8")
        if args[0] == "train":
            run_dir = Path(args[args.index("--run-dir") + 1])
            _metrics(run_dir, [{"step": 4, "loss": 0.69, "tokens_per_s": 50.0, "elapsed_s": 2.0},
                               {"step": 4, "eval_accuracy": 0.5, "elapsed_s": 3.0}])
        else:
            Path(args[1], "eval_test.json").write_text(json.dumps({"metrics": {"accuracy": 0.75}}), encoding="utf-8")
        return 1.5

    monkeypatch.setattr(runs, "_cli", fake_cli)
    record = tmp_path / "imdb.jsonl"
    sitting = runs.Sitting(tmp_path / "runs", record, threads=1, shared_cpu=True)
    runs.run_row("imdb", "FR", sitting)
    train, evaluate = calls
    assert train[:4] == ["train", "configs/cls_imdb.yaml", "model.encoder_kind=FR", "model.kind_options={k: 32}"]
    assert evaluate == ["eval", str(tmp_path / "runs" / "imdb" / "FR"), "--split", "test"]
    entry = records.latest(record, "imdb")["FR"]
    assert entry["parameters"] == 3_022_082 and entry["test"] == {"accuracy": 0.75}
    assert entry["train_s"] == 2.0 and entry["valid"] == {"eval_accuracy": 0.5}  # 3 s less 1 s of validation
    assert entry["threads"] == 1 and entry["shared_cpu"] is True and entry["command"].startswith(
        "OMP_NUM_THREADS=1 synthformer train configs/cls_imdb.yaml")
    for key in ("date", "machine", "commit", "torch", "load_1min"):
        assert entry[key], key
    runs.run_row("imdb", "FR", sitting)  # recorded: nothing runs again
    assert len(calls) == 2
    runs.run_row("imdb", "FR", runs.Sitting(tmp_path / "runs", record, None, False, rerun=True))  # a quiet re-run
    assert len(calls) == 4 and "--resume" not in calls[2]  # trained from scratch, into a directory of its own
    assert calls[2][calls[2].index("--run-dir") + 1].startswith(str(tmp_path / "runs" / "imdb" / "FR-"))
    assert records.latest(record, "imdb")["FR"]["shared_cpu"] is False  # the newer entry supersedes


def test_the_newest_entry_of_a_row_wins_and_torn_lines_are_skipped(records, tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join([json.dumps({"table": "t", "row": "V", "x": 1}), json.dumps({"table": "u", "row": "V"}),
                               json.dumps({"table": "t", "row": "V", "x": 2}), '{"table": "t", "ro']) + "\n")
    assert records.latest(path, "t") == {"V": {"table": "t", "row": "V", "x": 2}}
    assert records.latest(tmp_path / "missing.jsonl") == {}


def test_the_provenance_line_names_each_machine_once_even_inside_a_several_run_entry(records):
    amd, intel = "AMD EPYC, 2 CPUs, torch CPU capability AVX2", "Intel(R) Xeon(R), 2 CPUs, torch CPU capability AVX512"
    entries = [{"date": "d1", "commit": "c", "machine": f"{amd}; {intel}", "threads": 1, "shared_cpu": True},
               {"date": "d2", "commit": "c", "machine": amd, "threads": 1, "shared_cpu": True}]
    line = records.provenance(entries, "r.jsonl")
    assert f"; {amd}; {intel}; 1 thread" in line and line.count(amd) == 1 and "d1 to d2" in line


def test_a_benchmark_records_its_rows_with_the_command_line(records, tmp_path, monkeypatch):
    parser = argparse.ArgumentParser()
    records.add_record_options(parser)
    args = parser.parse_args(["--record", str(tmp_path / "bench_x.jsonl"), "--shared-cpu"])
    monkeypatch.setattr(sys, "argv", [str(BENCH / "speed" / "attention.py"), "--lengths", "256"])
    records.write_record(args, [{"kind": "V", "ms": 1.0}], 0.5)
    (entry,) = records.read_entries(tmp_path / "bench_x.jsonl")
    assert entry["table"] == "bench_x" and entry["rows"] == [{"kind": "V", "ms": 1.0}]
    assert entry["command"] == "python benchmarks/speed/attention.py --lengths 256" and entry["shared_cpu"] is True
    records.write_record(parser.parse_args([]), [], 0.0)  # no --record: nothing written
    assert len(records.read_entries(tmp_path / "bench_x.jsonl")) == 1


def test_every_table_has_rows_and_unknown_rows_are_refused(runs):
    assert set(runs.TABLES) == {"compare", "listops", "imdb", "shakespeare", "multi30k", "t5arch_pretrain",
                                "t5arch_glue", "t5arch_superglue", "lra", "lra_cpu"}
    assert list(runs.TABLES["imdb"]) == ["V", "R", "FR", "FR+V", "Linformer"]
    assert "train.steps=1600" in runs.TABLES["shakespeare"]["R+V@1600"].overrides
    with pytest.raises(SystemExit):
        runs.main(["--table", "imdb", "--rows", "Nope"])


def test_the_lra_cpu_rows_share_their_configs_setting_and_change_only_the_kind(runs):
    from synthformer.tasks.run.config import load_run_config

    rows = runs.TABLES["lra_cpu"]
    # V then R first: a study stopped early has the reference and the first synthetic kind
    assert list(rows) == [f"listops-{k}" for k in ("V", "R", "FR", "D", "R+V", "Linformer")]
    plain = load_run_config(runs.LRA_CPU_CONFIGS["listops"], [])
    for name, row in rows.items():
        kind = name.split("-", 1)[1]
        config = load_run_config(row.config, list(row.overrides))
        assert config.model.encoder_kind == kind and row.split == "test", name
        assert (config.train.steps, config.train.batch_size, config.train.lr, config.task.max_len) == (
            plain.train.steps, plain.train.batch_size, plain.train.lr, plain.task.max_len), name
        assert config.model.kind_options == {"FR": {"k": 32}, "Linformer": {"k": 16, "share_kv": True}}.get(
            kind, {}), name
    options = plain.task.generator_options  # LRA's generator at lengths a CPU trains: at most 500 tokens
    assert (options["max_depth"], options["max_args"]) == (10, 10)
    assert options["max_length"] <= 500 and plain.task.max_len == options["max_length"] + 1
    assert plain.task.eval_limit is None  # the whole test split is scored


def test_the_lra_rows_load_with_lras_sizes_the_budget_and_the_kinds_options(runs):
    from synthformer.attention.registry import get_mixer
    from synthformer.tasks.run.config import load_run_config

    rows = runs.TABLES["lra"]
    assert list(rows) == [f"{t}-{k}" for t in ("listops", "text", "pathfinder")
                          for k in ("V", "R", "FR", "D", "R+V", "Linformer")]
    sizes = {"listops": (6, 512, 2001), "text": (4, 256, 1001), "pathfinder": (1, 128, 1024)}  # LRA's models
    for name, row in rows.items():  # every kind of a task gets its task's budget: equal steps
        task, kind = name.split("-", 1)
        config = load_run_config(row.config, list(row.overrides))
        budget = runs.LRA_BUDGETS[task]
        assert (config.model.n_layers, config.model.d_model, config.task.max_len) == sizes[task], name
        assert config.model.encoder_kind == kind and row.split == "test", name
        assert (config.train.steps, config.train.batch_size, config.task.eval_limit) == (
            budget.steps, budget.batch_size, budget.eval_limit), name
        assert config.train.warmup_steps == budget.steps // 10 == budget.warmup_steps, name
        assert config.train.eval_every == budget.steps // 2, name
        options = {"FR": {"k": 32}, "Linformer": {"k": 16, "share_kv": True}}.get(kind, {})
        assert config.model.kind_options == options, name
        if options:  # the mixer takes them (an unknown option would raise)
            assert get_mixer(kind).num_params(config.model.d_model, config.model.n_heads, config.task.max_len,
                                              **options) > 0
