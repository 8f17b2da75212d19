"""``benchmarks/studies/table3.py``: the record (torn lines, last entry wins, seeds), the table with differences to V
and the seed spread, and the runner skipping recorded models and training extra seeds into their own directories."""

from __future__ import annotations

import importlib.util
import json
import math
import statistics
from pathlib import Path

import pytest
from matplotlib.image import imread

from ..test_plotting import untouched_backend

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "studies" / "table3.py"


@pytest.fixture(scope="module")
def table3():
    spec = importlib.util.spec_from_file_location("table3_script", SCRIPT)
    assert spec is not None and spec.loader is not None, SCRIPT
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _line(dataset: str, kind: str, rouge1: float, seed: int | None = None) -> str:
    entry = {"dataset": dataset, "kind": kind, "metrics": {"rouge1": rouge1, "rouge2": 1.0, "rougeL": 2.0,
                                                            "rougeLsum": 3.0}}
    if seed is not None:
        entry["seed"] = seed
    return json.dumps(entry)


def test_the_record_skips_torn_lines_keeps_the_last_entry_and_reads_old_entries_as_seed_0(table3, tmp_path):
    record = tmp_path / "t3.jsonl"
    record.write_text("\n".join([_line("samsum", "V", 10.0), _line("samsum", "V", 11.0, seed=0),
                                 _line("samsum", "V", 12.0, seed=1), '{"dataset": "samsum", "ki']) + "\n")
    found = table3.read_record(record)
    assert set(found) == {("samsum", "V", 0), ("samsum", "V", 1)}
    assert found["samsum", "V", 0]["metrics"]["rouge1"] == 11.0  # the later line of the pair
    assert table3.read_record(tmp_path / "missing.jsonl") == {}


def test_the_table_shows_differences_to_v_and_a_spread_line_only_for_models_with_several_seeds(table3, tmp_path):
    record = tmp_path / "t3.jsonl"
    record.write_text("\n".join([_line("samsum", "V", 20.0), _line("samsum", "V", 22.0, seed=1),
                                 _line("samsum", "V", 27.0, seed=2), _line("samsum", "D", 25.5)]) + "\n")
    text = table3.table(["samsum"], ["V", "D"], tmp_path / "runs", record)
    assert "| Transformer (V) | 20.00 | 1.00 | 2.00 | 3.00 |" in text  # seed 0 in the main table
    assert "| Syn (D) | 25.50 (+5.50) | 1.00 (+0.00)" in text
    spread = [row for row in text.splitlines() if row.startswith("| samsum |")]
    mean, std = statistics.mean([20.0, 22.0, 27.0]), statistics.stdev([20.0, 22.0, 27.0])
    assert spread == [f"| samsum | Transformer (V) | 0, 1, 2 | {mean:.2f} ± {std:.2f} | 1.00 ± 0.00 | "
                      "2.00 ± 0.00 | 3.00 ± 0.00 |"]
    assert "dialogue" not in text  # no dialogue dataset chosen


def test_the_runner_skips_recorded_models_and_trains_a_new_seed_into_its_own_directory(table3, tmp_path, monkeypatch):
    import synthformer.cli.main as cli

    record = tmp_path / "t3.jsonl"
    record.write_text(_line("samsum", "V", 20.0) + "\n")
    calls: list[list[str]] = []

    def fake_main(argv: list[str]) -> int:
        calls.append(argv)
        if argv[0] == "eval":  # what `synthformer eval --split test` leaves in the run directory
            Path(argv[1], "eval_test.json").write_text(json.dumps({"metrics": {"rouge1": 21.5}}), encoding="utf-8")
        else:
            Path(argv[argv.index("--run-dir") + 1]).mkdir(parents=True)
        return 0

    monkeypatch.setattr(cli, "main", fake_main)
    table3.run_one("samsum", "V", tmp_path / "runs", [], record)  # recorded: nothing runs
    assert calls == []
    table3.run_one("samsum", "V", tmp_path / "runs", [], record, seed=3)
    train, evaluate = calls
    assert "train.seed=3" in train and "model.encoder_kind=V" in train
    assert train[train.index("--run-dir") + 1] == str(tmp_path / "runs" / "samsum_V_seed3")
    assert evaluate == ["eval", str(tmp_path / "runs" / "samsum_V_seed3"), "--split", "test"]
    entry = table3.read_record(record)["samsum", "V", 3]
    assert entry["seed"] == 3 and entry["metrics"] == {"rouge1": 21.5} and "train.seed=3" in entry["overrides"]
    with pytest.raises(SystemExit):
        table3.main(["--seed", "-1", "--table-only"])


def test_training_time_counts_the_sittings_before_a_resume(table3, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    assert table3.trained_seconds(run_dir, 12.5) == 12.5  # no metrics logged: this sitting's time
    # A resumed run: the trainer's elapsed_s continues from the checkpoint, so the last value covers both sittings;
    # an eval line and a torn last line (a kill) are read past.
    (run_dir / "metrics.jsonl").write_text("\n".join([json.dumps({"step": 100, "loss": 3.0, "elapsed_s": 90.0}),
                                                       json.dumps({"step": 200, "eval_loss": 2.5, "elapsed_s": 700.0}),
                                                       '{"step": 300, "elap']) + "\n", encoding="utf-8")
    assert table3.trained_seconds(run_dir, 80.0) == 700.0


def test_the_figure_draws_differences_to_v_with_v_seed_spread(table3, tmp_path, monkeypatch):
    record = tmp_path / "t3.jsonl"
    record.write_text("\n".join([_line("samsum", "V", 20.0), _line("samsum", "V", 22.0, seed=1),
                                 _line("samsum", "R", 18.5), _line("dialogsum", "V", 30.0)]) + "\n")
    diffs, spread = table3.differences(table3.read_record(record), "samsum", ["V", "R", "D"])
    assert diffs["R"] == [-1.5, 0.0, 0.0, 0.0] and "V" not in diffs  # ROUGE-1, -2, -L, -Lsum against V's seed 0
    assert all(math.isnan(x) for x in diffs["D"])  # not recorded: no bar
    assert spread == pytest.approx([statistics.stdev([20.0, 22.0]), 0.0, 0.0, 0.0])
    assert table3.differences(table3.read_record(record), "dialogsum", ["V", "R"])[1] is None  # one seed of V
    with untouched_backend(monkeypatch):  # the project's plotting convention: no global backend switch
        out = table3.plot(["samsum", "dialogsum", "personachat"], ["V", "R", "D"], record, tmp_path / "fig" / "t3.png")
    image = imread(out)  # a PNG that decodes: (height, width, channels)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and image.ndim == 3
    assert (image.shape[1], image.shape[0]) == (1200, 720)  # 2 x 2 panels of 6 x 3.6 inches at 100 dpi
