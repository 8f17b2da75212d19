"""``benchmarks/doc_tables/superglue.py`` and ``lra_results.py``: docs/results.md's SuperGLUE (the
paper's Table 6) and LRA Table 1 sections, built from tiny made-up records: the placeholder until a row exists,
rows in the paper's layout with missing tasks as ``-``, the average over the tasks present, the majority-label row
from the baselines record, the paper's numbers, and LRA's budget fractions."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from .scripts import BENCH, load_script


def _load(path: str, monkeypatch, tmp_path: Path):
    """``benchmarks/PATH.py`` freshly loaded (see ``load_script``), reading its records under ``tmp_path``."""
    module = load_script(path, monkeypatch)
    for name in ("RESULTS", "ROOT"):
        if hasattr(module, name):
            monkeypatch.setattr(module, name, tmp_path / "results" if name == "RESULTS" else tmp_path)
    (tmp_path / "results").mkdir(exist_ok=True)
    return module


def _tables(monkeypatch, tmp_path: Path) -> dict:
    """The registry's builders (``doc_tables/registry.py``), loaded over the modules the test loaded before, reading
    the records under ``tmp_path``."""
    return _load("doc_tables/registry", monkeypatch, tmp_path).BUILDERS


def _write(tmp_path: Path, table: str, entries: list[dict]) -> None:
    meta = {"date": "2026-11-27 09:00 UTC", "commit": "abc1234", "machine": "AMD EPYC, 2 CPUs", "threads": 1,
            "shared_cpu": True}
    lines = [json.dumps({"table": table, **meta, **e}) for e in entries]
    (tmp_path / "results" / f"{table}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- SuperGLUE (issue 29)

@pytest.fixture()
def superglue(monkeypatch, tmp_path):
    baselines = _load("doc_tables/baselines", monkeypatch, tmp_path)  # the majority row's record
    t5 = _load("doc_tables/t5", monkeypatch, tmp_path)  # the unspellable answers' record
    module = _load("doc_tables/superglue", monkeypatch, tmp_path)
    assert module.baselines is baselines and module.unknown_pieces is t5.unknown_pieces
    return module


@pytest.fixture()
def superglue_table(superglue, monkeypatch, tmp_path):
    """The registry's ``t5arch-superglue`` table, built by the fresh modules from the test's records."""
    return _tables(monkeypatch, tmp_path)["t5arch-superglue"]


def _sg_entry(row: str, average: float, **metrics) -> dict:
    return {"row": row, "train_s": 600.0,
            "valid": {"super_glue_average": average, "super_glue_missing": "boolq, copa, multirc, record, wic, wsc",
                      **metrics}}


def test_superglue_without_a_record_gives_the_command(superglue_table):
    assert superglue_table() == (
        "(no recorded row yet: `python benchmarks/studies/results_runs.py --table t5arch_superglue`)")


def test_superglue_rows_follow_the_papers_layout_with_the_majority_row(superglue_table, tmp_path):
    _write(tmp_path, "t5arch_superglue", [
        _sg_entry("R+V", 55.0, cb_accuracy=60.0, cb_f1_macro=40.0, cb_invalid=2, super_glue_rte_accuracy=60.0,
                  super_glue_rte_invalid=1, axb_matthews_corrcoef=5.0, axb_invalid=3),
        _sg_entry("V", 52.5, cb_accuracy=50.0, cb_f1_macro=30.0, super_glue_rte_accuracy=65.0)])
    # the majority row as benchmarks/studies/baselines.py records it: CB answers "contradiction" (F1 macro 2/3 / 3
    # classes, accuracy 2 of 4), RTE "not_entailment" (1 of 2), AX-b RTE's answer (a constant: MCC 0); the
    # average over the trained tasks: (36.1 + 50) / 2
    _write(tmp_path, "baselines", [{"table": "t5arch_superglue", "row": "majority", "valid": {
        "cb_accuracy": 50.0, "cb_f1_macro": 200 / 9, "super_glue_rte_accuracy": 50.0, "axb_matthews_corrcoef": 0.0,
        "super_glue_average": (100 / 9 + 25 + 50) / 2}}])
    # R+V's answers counted by benchmarks/studies/t5_unknown_pieces.py for this run (its date); V's not counted
    _write(tmp_path, "t5arch_unknown_pieces", [{"table": "t5arch_superglue", "row": "R+V", "unknown_pieces": 1,
                                                "row_date": "2026-11-27 09:00 UTC"}])
    text = superglue_table()
    assert text.splitlines()[0] == ("| model | SGlue avg | BoolQ | CB | COPA | MultiRC | ReCoRD | RTE | WiC | WSC | "
                                    "AX-b | AX-g | invalid | of them unspellable | training time |")
    body = text.splitlines()[2:5]  # the paper's row order (V first), each task's metrics in its order (CB: F1/acc)
    assert body[0] == "| T5 (V) | 52.5 | - | 30.0/50.0 | - | - | - | 65.0 | - | - | - | - | 0 | - | 10.0 min |"
    assert body[1] == "| Syn (R+V) | 55.0 | - | 40.0/60.0 | - | - | - | 60.0 | - | - | 5.0 | - | 6 | 1 | 10.0 min |"
    assert body[2] == "| majority label | 43.1 | - | 22.2/50.0 | - | - | - | 50.0 | - | - | 0.0 | - | 0 | 0 | - |"
    assert "without boolq, copa, multirc, record, wic, wsc" in text and "BoolQ is not trained here" in text
    assert "Record: `results/t5arch_superglue.jsonl` (2 rows;" in text
    assert "Baseline record: `results/baselines.jsonl` (1 row;" in text


def test_superglue_without_a_recorded_majority_says_how_to_record_it(superglue_table, tmp_path):
    _write(tmp_path, "t5arch_superglue", [_sg_entry("V", 52.5, cb_accuracy=50.0, cb_f1_macro=30.0)])
    text = superglue_table()
    assert "majority label" not in text
    assert "Baseline not recorded yet: `python benchmarks/studies/baselines.py --tables t5arch_superglue`." in text


def test_the_papers_table6_averages_and_the_rows_that_disagree(superglue):
    every = [task for task, _, _ in superglue.COLUMNS if task not in superglue.DIAGNOSTICS]
    recomputed = {model: superglue.paper_average(cells, every) for model, (_, cells) in superglue.PAPER_TABLE6.items()}
    # the eight-task mean reproduces the printed SGlue column (so the cells were read right), except DyConv's
    wrong = [m for m, (printed, _) in superglue.PAPER_TABLE6.items() if abs(recomputed[m] - printed) > 0.051]
    assert wrong == ["DyConv"] and round(recomputed["DyConv"], 1) == 60.8
    assert superglue.config_tasks() == ["cb", "copa", "multirc", "super_glue_rte", "wic", "wsc"]
    text = superglue.paper_table()
    assert "| T5 (Base) | 70.3 | 78.2 | 72.1/83.9 | 59.0 | 73.1/32.1 | 71.1/70.3 | 77.3 | 65.8 | 80.8 | 68.9 |" in text
    assert "| DyConv | 57.8 | 66.7 | 65.9/73.2 | 58.0 | 57.9/8.71 |" in text


# --------------------------------------------------------------------------- LRA's Table 1 (issue 31)

def _lra_modules(monkeypatch, tmp_path, config: str, *modules: str):
    """The majority rows' module and ``modules`` loaded on the test's records (the last returned), with a
    ``configs/CONFIG`` of batch 32 under the test's root."""
    _load("doc_tables/baselines", monkeypatch, tmp_path)  # the majority rows' record: empty unless written
    loaded = [_load(f"doc_tables/{name}", monkeypatch, tmp_path) for name in modules]
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / config).write_text("train:\n  batch_size: 32\n", encoding="utf-8")
    return loaded[-1]


@pytest.fixture()
def lra(monkeypatch, tmp_path):
    return _lra_modules(monkeypatch, tmp_path, "lra_text.yaml", "lra_results")


@pytest.fixture()
def lra_table(lra, monkeypatch, tmp_path):
    """The registry's ``lra-results`` table, built by the fresh modules from the test's records."""
    return _tables(monkeypatch, tmp_path)["lra-results"]


def _lra_entry(row: str, accuracy: float, command: str, steps: int = 100) -> dict:
    return {"row": row, "steps": steps, "train_s": 1800.0, "train_wall_s": 1900.0, "eval_wall_s": 500.0,
            "test": {"accuracy": accuracy, "examples": 500}, "valid": {"eval_accuracy": accuracy + 0.01},
            "command": command}


def test_lra_without_a_record_gives_the_command(lra_table):
    assert lra_table() == "(no recorded row yet: `python benchmarks/studies/results_runs.py --table lra`)"


def test_lra_rows_stand_beside_lras_table1_with_chance_and_the_budget(lra_table, tmp_path):
    listops = "OMP_NUM_THREADS=1 synthformer train configs/lra_listops.yaml train.steps=100 train.batch_size=4 x"
    _write(tmp_path, "lra", [_lra_entry("text-R", 0.55, "synthformer train configs/lra_text.yaml --run-dir x"),
                             _lra_entry("listops-R+V", 0.2, listops), _lra_entry("listops-D", 0.18, listops)])
    lines = lra_table().splitlines()
    # ListOps first, kinds in the order; LRA's Synthesizer (random + dot product) stands beside R+V
    assert lines[2] == ("| ListOps | Syn (D) | 18.00% (500) | - | 10% | 19.00% | 100 x 4 | 0.25% | 30.0 min | "
                        "40.0 min |")
    assert lines[3].startswith("| ListOps | Syn (R+V) | 20.00% (500) | 36.99 (Synthesizer) | 10% |")
    # no batch in the command: the config's; 100 x 32 of LRA's 20,000 x 32
    assert lines[4] == ("| Text | Syn (R) | 55.00% (500) | - | 50% | 56.00% | 100 x 32 | 0.5% | 30.0 min | "
                        "40.0 min |")


def test_each_lra_task_ends_with_its_recorded_majority_row(lra_table, tmp_path):
    listops = "synthformer train configs/lra_text.yaml train.batch_size=4 x"
    _write(tmp_path, "lra", [_lra_entry("listops-V", 0.2, listops), _lra_entry("listops-R", 0.2, listops),
                             _lra_entry("text-V", 0.5, listops)])
    majority = {"tied": ["0"], "label": "0", "chance": 0.1, "test": {"accuracy": 0.175, "examples": 200},
                "valid": {"accuracy": 0.1, "examples": 20}}
    _write(tmp_path, "baselines", [
        {"table": "lra", "row": "listops-majority", **majority},
        {"table": "lra", "row": "text-majority", **majority, "label": "1", "tied": ["1", "0"], "chance": 0.5}])
    lines = lra_table().splitlines()
    assert [line.split(" | ")[1] for line in lines[2:7]] == [
        "Transformer (V)", "Syn (R)", "majority class (no model): label 0", "Transformer (V)",
        "majority class (no model): label 1, tied with 0 in training"]
    assert lines[4] == ("| ListOps | majority class (no model): label 0 | 17.50% (200) | - | 10% | 10.00% | - | - | "
                        "- | - |")
    assert lines[6].startswith("| Text | majority class (no model): label 1, tied with 0 in training | 17.50% (200) "
                               "| - | 50% |")
    assert "The majority rows answer every example with the most frequent label" in lines[-1]
    assert "Baseline record: `results/baselines.jsonl` (2 rows;" in lines[-1]


def test_a_resumed_lra_row_says_its_wall_time_is_the_last_sittings(lra_table, tmp_path):
    entry = {**_lra_entry("text-V", 0.5, "synthformer train configs/lra_text.yaml x"), "resumed": True}
    _write(tmp_path, "lra", [entry])
    assert lra_table().splitlines()[2].endswith("| 30.0 min | 40.0 min (resumed: the last sitting) |")


def test_the_lra_budget_table_is_the_runners_budget_beside_lras(monkeypatch, tmp_path):
    module = _load("doc_tables/lra_results", monkeypatch, tmp_path)
    monkeypatch.setattr(module, "ROOT", BENCH.parent)  # the shipped configs
    lines = module.lra_budget_table().splitlines()
    runs = sys.modules["studies.results_runs"]  # the runner the table imported
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| ListOps", "| Text", "| Pathfinder"]
    b = runs.LRA_BUDGETS["listops"]
    assert lines[2].startswith(f"| ListOps | 6 x d512, 8 heads, MLP 2048 | 5,000 x 32 | {b.steps:,} x {b.batch_size} | "
                               f"{100 * b.steps * b.batch_size / 160_000:.2g}% | {b.steps // 10} | ")


# --------------------------------------------------------------------------- LRA at CPU size

@pytest.fixture()
def lra_cpu(monkeypatch, tmp_path):
    return _lra_modules(monkeypatch, tmp_path, "lra_listops_cpu.yaml", "lra_results", "lra_cpu")


@pytest.fixture()
def lra_cpu_table(lra_cpu, monkeypatch, tmp_path):
    """The registry's ``lra-cpu-results`` table, built by the fresh modules from the test's records."""
    return _tables(monkeypatch, tmp_path)["lra-cpu-results"]


def test_lra_cpu_without_a_record_gives_the_command(lra_cpu_table):
    assert lra_cpu_table() == "(no recorded row yet: `python benchmarks/studies/results_runs.py --table lra_cpu`)"


def test_lra_cpu_rows_are_read_against_the_majority_in_test_standard_errors(lra_cpu_table, tmp_path):
    command = "synthformer train configs/lra_listops_cpu.yaml x"
    # recorded R before V: the table keeps its own order, V first
    _write(tmp_path, "lra_cpu", [_lra_entry("listops-R", 0.19, command, steps=2500),
                                 _lra_entry("listops-V", 0.25, command, steps=2500)])
    _write(tmp_path, "baselines", [{"table": "lra_cpu", "row": "listops-majority", "label": "9", "tied": ["9"],
                                    "chance": 0.1, "test": {"accuracy": 0.2, "examples": 1600},
                                    "valid": {"accuracy": 0.15, "examples": 640}}])
    lines = lra_cpu_table().splitlines()
    # SE of the majority's 20% over 1,600 test examples: sqrt(0.2 * 0.8 / 1600) = 1 point
    assert lines[2] == ("| Transformer (V) | ListOps | 25.00% (500) | +5.00 (+5.0 SE) | 10% | 26.00% | 2,500 x 32 | "
                        "30.0 min | 40.0 min |")
    assert lines[3].startswith("| Syn (R) | ListOps | 19.00% (500) | -1.00 (-1.0 SE) |")
    assert lines[4] == ("| majority class (no model): label 9 | ListOps | 20.00% (1,600) | 1 SE = 1.00 | 10% | "
                        "15.00% | - | - | - |")
    assert "Baseline record: `results/baselines.jsonl` (1 row;" in lines[-1]


def test_lra_cpu_without_its_majority_row_says_how_to_record_it(lra_cpu_table, tmp_path):
    _write(tmp_path, "lra_cpu", [_lra_entry("listops-V", 0.25, "synthformer train configs/lra_listops_cpu.yaml x",
                                                 steps=2500)])
    lines = lra_cpu_table().splitlines()
    assert lines[2].startswith("| Transformer (V) | ListOps | 25.00% (500) | - |") and len(lines) == 5
    assert "`python benchmarks/studies/baselines.py --tables lra_cpu`" in lines[-1]


def test_the_standard_error_refuses_what_is_no_accuracy(lra_cpu):
    assert lra_cpu.standard_error(0.5, 100) == pytest.approx(0.05)
    with pytest.raises(ValueError, match="p=1.5, n=10"):
        lra_cpu.standard_error(1.5, 10)
    with pytest.raises(ValueError, match="n=0"):
        lra_cpu.standard_error(0.5, 0)


def test_the_lra_cpu_setting_is_the_shipped_config_beside_lras(lra_cpu, monkeypatch):
    monkeypatch.setattr(lra_cpu, "ROOT", BENCH.parent)  # the shipped config
    import yaml

    config = yaml.safe_load((BENCH.parent / "configs" / "lra_listops_cpu.yaml").read_text(encoding="utf-8"))
    g, t = config["task"]["generator_options"], config["train"]
    (line,) = lra_cpu.setting_table().splitlines()[2:]
    assert line.startswith(f"| ListOps | {g['min_length']}-{g['max_length']} | 10, 10 | 96,000 / 2,000 / 2,000 | ")
    assert line.endswith(f"| {t['steps']:,} x {t['batch_size']} | 500-2000 | 6 x d512, 8 heads, MLP 2048 | "
                         "5,000 x 32 |")
