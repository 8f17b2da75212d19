"""docs/results/lra.md's Long Range Arena (Table 1) table from ``benchmarks/results/lra.jsonl``.

``python benchmarks/studies/results_runs.py --table lra`` trains each row ``<task>-<kind>`` (ListOps, Text at 1K and
Pathfinder-32, at LRA's model sizes with a CPU step budget) and records its test accuracy (``synthformer eval RUN
--split test``), the last periodic validation, steps and times. The table shows each row beside LRA's published
Table 1 (Tay et al. 2021) where LRA has that model, the chance level of the task (one class in ``classes``, the
accuracy of a uniform guess), and the budget as a fraction of LRA's examples seen (steps x batch).
``doc_tables/registry.py`` hands the table its record's rows, in the order of :func:`row_names`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import ROOT, provenance  # noqa: E402 - benchmarks/records.py

from doc_tables import baselines  # noqa: E402 - the baseline rows

TABLE = "lra"
#: task -> (its name in LRA's Table 1, classes, LRA's training steps, LRA's batch): LRA's configs
#: (listops/configs/base_listops_config.py, text_classification/configs/base_tc_config.py,
#: image/configs/pathfinder32/base_pathfinder32_config.py: 160,000 images x 200 epochs / 512 = 62,500 steps)
TASKS: dict[str, tuple[str, int, int, int]] = {"listops": ("ListOps", 10, 5000, 32), "text": ("Text", 2, 20000, 32),
                                               "pathfinder": ("Pathfinder", 2, 62500, 512)}
KINDS = {"V": "Transformer (V)", "R": "Syn (R)", "FR": "Syn (FR), k = 32", "D": "Syn (D)", "R+V": "Syn (R+V)",
         "Linformer": "Linformer, k = 16, E = F"}
#: LRA's Table 1 (test accuracy, %) for the models it has: its Transformer; its "Synthesizer", which is random
#: plus dot-product logits summed (LRA's SynthesizerEncoder defaults: synthesizer_mode "random", the dot product
#: kept), so it stands beside R+V; its Linformer (k = 16, one projection for keys and values).
LRA_TABLE1: dict[str, dict[str, float]] = {
    "V": {"listops": 36.37, "text": 64.27, "pathfinder": 71.40},
    "R+V": {"listops": 36.99, "text": 61.68, "pathfinder": 69.45},
    "Linformer": {"listops": 35.70, "text": 53.94, "pathfinder": 76.34},
}
LRA_NAMES = {"V": "Transformer", "R+V": "Synthesizer", "Linformer": "Linformer"}


def row_names() -> list[str]:
    """Every row of the table in its order: ``<task>-<kind>``, tasks as :data:`TASKS`, kinds as :data:`KINDS`."""
    return [f"{task}-{kind}" for task in TASKS for kind in KINDS]


def batch_size(entry: dict[str, Any]) -> int:
    """The batch of a recorded row: ``train.batch_size=N`` of its command, else its config's."""
    command = str(entry["command"])
    given = re.findall(r"train\.batch_size=(\d+)", command)
    if given:
        return int(given[-1])
    config = re.search(r"synthformer train (\S+\.yaml)", command)
    if config is None:
        raise ValueError(f"{entry['table']} {entry['row']}: no config in its command {command!r}")
    return int(yaml.safe_load((ROOT / config[1]).read_text(encoding="utf-8"))["train"]["batch_size"])


def _lra_cell(task: str, kind: str) -> str:
    published = LRA_TABLE1.get(kind, {}).get(task)
    return "-" if published is None else f"{published:.2f} ({LRA_NAMES[kind]})"


def wall_time(entry: dict) -> str:
    """The row's wall time; a resumed row's covers only its last sitting (the earlier ones were not timed)."""
    wall = f"{(entry['train_wall_s'] + entry['eval_wall_s']) / 60:.1f} min"
    return f"{wall} (resumed: the last sitting)" if entry.get("resumed") else wall


def lra_results_table(entries: list[dict[str, Any]], record: str) -> str:
    """Test accuracy per task and kind beside LRA's Table 1, chance, the last validation accuracy, the budget
    (steps x batch and its fraction of LRA's), the training time without periodic validation, and the row's wall
    time (the training process, data generation and periodic validation included, and the test evaluation)."""
    lines = ["| task | model | test accuracy | LRA's Table 1 | chance | valid accuracy | steps x batch | of LRA's | "
             "training time | row's wall time |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    found_baselines: list[dict[str, Any]] = []
    for i, e in enumerate(entries):
        task, kind = str(e["row"]).split("-", 1)
        name, classes, lra_steps, lra_batch = TASKS[task]
        test, batch = e["test"], batch_size(e)
        valid = e["valid"].get("eval_accuracy")
        seen = e["steps"] * batch
        lines.append(
            f"| {name} | {KINDS[kind]} | {100 * test['accuracy']:.2f}% ({test['examples']:,}) | "
            f"{_lra_cell(task, kind)} | {100 / classes:.0f}% | "
            f"{'-' if valid is None else f'{100 * valid:.2f}%'} | {e['steps']:,} x {batch} | "
            f"{100 * seen / (lra_steps * lra_batch):.2g}% | {e['train_s'] / 60:.1f} min | "
            f"{wall_time(e)} |")
        if i + 1 == len(entries) or not str(entries[i + 1]["row"]).startswith(f"{task}-"):  # the task's last row
            row, baseline = baselines.lra_rows(task, name)
            if row is not None and baseline is not None:
                lines.append(row)
                found_baselines.append(baseline)
    return "\n".join([*lines, "", provenance(entries, record) + " "
                      + baselines.lra_note(found_baselines)])


def lra_budget_table() -> str:
    """The budget of each task as ``results_runs.py`` gives it (so the docs cannot drift from the rows): the
    model of the task's config, LRA's steps x batch beside ours, the warm-up, validation and test examples."""
    from studies.results_runs import (  # the sibling script (imported late: only this table needs it)
        _LRA_CONFIGS,
        LRA_BUDGETS,
    )

    lines = ["| task | model (the config, LRA's) | LRA: steps x batch | here: steps x batch | of LRA's examples | "
             "warm-up | validation (middle, end) | test examples scored |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for task, config in _LRA_CONFIGS.items():
        name, _, lra_steps, lra_batch = TASKS[task]
        m = yaml.safe_load((ROOT / config).read_text(encoding="utf-8"))["model"]
        b = LRA_BUDGETS[task]
        model = f"{m['n_layers']} x d{m['d_model']}, {m['n_heads']} heads, MLP {m['d_ff']}"
        lines.append(f"| {name} | {model} | {lra_steps:,} x {lra_batch} | {b.steps:,} x {b.batch_size} | "
                     f"{100 * b.steps * b.batch_size / (lra_steps * lra_batch):.2g}% | {b.warmup_steps} | "
                     f"{b.eval_steps * b.batch_size} examples | {b.eval_limit:,} |")
    return "\n".join(lines)
