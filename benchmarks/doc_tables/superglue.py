"""The SuperGLUE tables of docs/results/t5.md (the paper's Table 6) from their record and the paper.

``benchmarks/results/t5arch_superglue.jsonl`` is written by ``python benchmarks/studies/results_runs.py --table
t5arch_superglue`` (after ``--table t5arch_pretrain``): one entry per finished row, with the metrics of
``synthformer eval RUN --split valid`` under ``valid`` (``<task>_<metric>`` in percent, ``<task>_invalid``,
``super_glue_average`` over the tasks present and ``super_glue_missing``, the ones of the eight that were not).

Both tables use the paper's layout: the SuperGLUE average, then BoolQ, CB, COPA, MultiRC, ReCoRD, RTE, WiC, WSC
(two-metric tasks as ``a/b`` in the paper's order: CB F1/accuracy, MultiRC F1a/exact match, ReCoRD F1/exact
match), here followed by the diagnostics AX-b (Matthews correlation) and AX-g (accuracy/gender parity). A task
with no score is ``-``. The records' table ends with the majority-label reference, recorded in
``benchmarks/results/baselines.jsonl`` by ``python benchmarks/studies/baselines.py`` from the shared SuperGLUE files by
the library's own rule (``majority_scores``: each task's most frequent training label; the diagnostics answer with
RTE's; WSC's answer names no candidate). ``doc_tables/registry.py`` hands the records' table its rows, in the
order of :data:`ROWS`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import ROOT, provenance  # noqa: E402 - benchmarks/records.py

from doc_tables import baselines  # noqa: E402 - the baseline rows
from doc_tables.t5 import UNSPELLABLE_NOTE, unknown_pieces  # noqa: E402 - the column both T5 tables share

TABLE = "t5arch_superglue"
ROWS = {"V": "T5 (V)", "R": "Syn (R)", "D": "Syn (D)", "R+V": "Syn (R+V)", "D+V": "Syn (D+V)"}
CONFIG = ROOT / "configs" / "t5arch_cpu_superglue.yaml"

#: (task, metrics in the paper's order, column): the eight tasks of the average, then the two diagnostics
COLUMNS: list[tuple[str, tuple[str, ...], str]] = [
    ("boolq", ("accuracy",), "BoolQ"), ("cb", ("f1_macro", "accuracy"), "CB"), ("copa", ("accuracy",), "COPA"),
    ("multirc", ("f1a", "exact_match"), "MultiRC"), ("record", ("f1", "exact_match"), "ReCoRD"),
    ("super_glue_rte", ("accuracy",), "RTE"), ("wic", ("accuracy",), "WiC"), ("wsc", ("accuracy",), "WSC"),
    ("axb", ("matthews_corrcoef",), "AX-b"), ("axg", ("accuracy", "gender_parity"), "AX-g")]
DIAGNOSTICS = ("axb", "axg")

#: The paper's Table 6 (dev scores; ICLR 2021 and ICML versions, identical), cells in COLUMNS' order for the eight
#: tasks. arXiv v1 has the same numbers as its Table 5, without the T5 (Base+) and DyConv rows.
PAPER_TABLE6: dict[str, tuple[float, list[tuple[float, ...]]]] = {
    "T5 (Base)": (70.3, [(78.2,), (72.1, 83.9), (59.0,), (73.1, 32.1), (71.1, 70.3), (77.3,), (65.8,), (80.8,)]),
    "T5 (Base+)": (70.7, [(79.3,), (81.1, 87.5), (60.0,), (75.1, 34.4), (71.7, 70.7), (80.5,), (64.6,), (71.2,)]),
    "DyConv": (57.8, [(66.7,), (65.9, 73.2), (58.0,), (57.9, 8.71), (58.4, 57.4), (69.0,), (58.6,), (73.1,)]),
    "Syn (R)": (61.1, [(69.5,), (54.6, 73.2), (60.0,), (63.0, 15.7), (58.4, 57.4), (67.5,), (64.4,), (66.3,)]),
    "Syn (D)": (58.5, [(69.5,), (51.7, 71.4), (51.0,), (66.0, 15.8), (54.1, 53.0), (67.5,), (65.2,), (58.7,)]),
    "Syn (D+V)": (69.7, [(79.3,), (74.3, 85.7), (64.0,), (73.8, 33.7), (69.9, 69.2), (78.7,), (64.3,), (68.3,)]),
    "Syn (R+V)": (72.2, [(79.3,), (82.7, 91.1), (64.0,), (74.3, 34.9), (70.8, 69.9), (82.7,), (64.6,), (75.0,)]),
}


def _cell(values: list[float] | None, digits: int = 1) -> str:
    return "-" if values is None else "/".join(f"{v:.{digits}f}" for v in values)


def _printed(value: float) -> str:
    """A number of the paper as it prints it: one decimal, two where it has them (MultiRC's 8.71)."""
    return f"{value:.1f}" if round(value, 1) == value else f"{value:.2f}"


def _scores(metrics: dict[str, Any], task: str, names: tuple[str, ...]) -> list[float] | None:
    keys = [f"{task}_{name}" for name in names]
    return [float(metrics[k]) for k in keys] if all(k in metrics for k in keys) else None


def task_mean(values: tuple[float, ...] | list[float]) -> float:
    """A task's score in the SuperGLUE average (T5's rule): the mean of its metrics."""
    return sum(values) / len(values)


def _missing_line(entries: list[dict[str, Any]]) -> str:
    found = {str(e["valid"].get("super_glue_missing", "?")) for e in entries}
    named = " / ".join(sorted(found))
    return (f"The SuperGLUE average is over the tasks present, without {named} (the eval's "
            "`super_glue_missing`). ")


def superglue_table(entries: list[dict[str, Any]], record: str) -> str:
    """Every finetuning row's dev scores in the paper's Table 6 layout, AX-b and AX-g, invalid predictions (all
    sets), training time without periodic validation; the majority-label row from the baselines record."""
    header = ("| model | SGlue avg | " + " | ".join(label for _, _, label in COLUMNS)
              + " | invalid | of them unspellable | training time |")
    lines = [header, "|---|" + "---:|" * (len(COLUMNS) + 4)]
    for e in entries:
        m = e["valid"]
        cells = [_cell(_scores(m, task, metrics)) for task, metrics, _ in COLUMNS]
        invalid = sum(int(m.get(f"{task}_invalid", 0)) for task, _, _ in COLUMNS)
        lines.append(f"| {ROWS[e['row']]} | {m['super_glue_average']:.1f} | " + " | ".join(cells)
                     + f" | {invalid} | {unknown_pieces(TABLE, e)} | {e['train_s'] / 60:.1f} min |")
    majority, baseline = baselines.glue_majority(TABLE)
    if majority is not None:
        m = majority["valid"]
        cells = [_cell(_scores(m, task, metrics)) for task, metrics, _ in COLUMNS]
        lines.append(f"| majority label | {m['super_glue_average']:.1f} | " + " | ".join(cells) + " | 0 | 0 | - |")
    note = (_missing_line(entries) + "BoolQ is not trained here (the shared folder has its val set only) and "
            "ReCoRD's data is not here. ")
    return "\n".join([*lines, "", note + provenance(entries, record) + " " + baseline, "",
                      UNSPELLABLE_NOTE])


def config_tasks() -> list[str]:
    """The SuperGLUE tasks of the average that ``configs/t5arch_cpu_superglue.yaml`` trains."""
    tasks = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))["task"]["options"]["tasks"]
    return [t for t, _, _ in COLUMNS if t in tasks and t not in DIAGNOSTICS]


def paper_average(cells: list[tuple[float, ...]], tasks: list[str]) -> float:
    """The SuperGLUE average of a row of :data:`PAPER_TABLE6` over ``tasks`` (T5's rule, :func:`task_mean`)."""
    order = [t for t, _, _ in COLUMNS]
    return sum(task_mean(cells[order.index(t)]) for t in tasks) / len(tasks)


def paper_table() -> str:
    """The paper's Table 6 as printed, and each row's average over the tasks trained here (computed)."""
    tasks = config_tasks()
    names = [label for t, _, label in COLUMNS if t not in DIAGNOSTICS]
    lines = ["| model | SGlue (paper) | " + " | ".join(names) + f" | avg of the {len(tasks)} tasks trained here |",
             "|---|" + "---:|" * (len(names) + 2)]
    for model, (sglue, cells) in PAPER_TABLE6.items():
        shown = " | ".join("/".join(_printed(v) for v in c) for c in cells)
        lines.append(f"| {model} | {sglue:.1f} | {shown} | {paper_average(cells, tasks):.1f} |")
    labels = ", ".join(label for t, _, label in COLUMNS if t in tasks)
    return "\n".join([*lines, "", f"The last column is computed here: the mean over {labels} (CB and MultiRC as the "
                      "mean of their two numbers), the tasks `configs/t5arch_cpu_superglue.yaml` trains."])
