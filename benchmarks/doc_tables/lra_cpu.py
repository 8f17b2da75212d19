"""docs/results/lra.md's "At CPU size" tables: LRA's ListOps at a size one CPU thread trains, from
``benchmarks/results/lra_cpu.jsonl``.

``python benchmarks/studies/results_runs.py --table lra_cpu`` trains each row ``<task>-<kind>`` on its task's CPU-size
config (``results_runs.LRA_CPU_CONFIGS``: the task, the model and the budget are the config's, the rows change only the
kind) and records its test accuracy on the whole test split. With one seed per row, the one thing a row can be read
for is whether it is above the majority class (``benchmarks/studies/baselines.py``, record table ``lra_cpu``) by more
than the test set's sampling noise: the table gives the difference in points and in standard errors of the majority's
accuracy over the test examples, sqrt(p (1 - p) / n). :func:`setting_table` shows each config beside LRA's recipe.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import ROOT, provenance  # noqa: E402 - benchmarks/records.py

from doc_tables import baselines  # noqa: E402 - the majority rows
from doc_tables.lra_results import KINDS, TASKS, batch_size, wall_time  # noqa: E402 - LRA's table's names and cells

TABLE = "lra_cpu"
#: task -> LRA's own setting of it (listops/configs/base_listops_config.py and LRA's ListOps generator defaults)
LRA_SETTING = {"listops": {"lengths": "500-2000", "model": "6 x d512, 8 heads, MLP 2048"}}
#: "clearly above" the majority class: more than this many standard errors of the test set
CLEAR_SE = 2.0


def row_names() -> list[str]:
    """Every row of the table in its order: ``<task>-<kind>``, the tasks of the runner's CPU-size configs, kinds as
    :data:`KINDS` (V and R first: a stopped study has them)."""
    from studies.results_runs import LRA_CPU_CONFIGS  # the sibling script (imported late: only these tables need it)

    return [f"{task}-{kind}" for task in LRA_CPU_CONFIGS for kind in KINDS]


def standard_error(p: float, n: int) -> float:
    """The standard error of an accuracy ``p`` measured on ``n`` examples, sqrt(p (1 - p) / n)."""
    if n <= 0 or not 0.0 <= p <= 1.0:
        raise ValueError(f"need an accuracy in [0, 1] and a positive count, got p={p}, n={n}")
    return math.sqrt(p * (1.0 - p) / n)


def versus_majority(accuracy: float, majority: dict[str, Any] | None) -> str:
    """``+3.10 (4.2 SE)``: the test accuracy minus the majority class's, in points and in standard errors of the
    majority's accuracy over the test examples; ``-`` without a recorded majority row."""
    if majority is None:
        return "-"
    p, n = float(majority["test"]["accuracy"]), int(majority["test"]["examples"])
    se = standard_error(p, n)
    diff = accuracy - p
    return f"{100 * diff:+.2f} ({diff / se:+.1f} SE)" if se > 0 else f"{100 * diff:+.2f}"


def _config(task: str) -> dict[str, Any]:
    from studies.results_runs import LRA_CPU_CONFIGS

    return yaml.safe_load((ROOT / LRA_CPU_CONFIGS[task]).read_text(encoding="utf-8"))


def lra_cpu_table(entries: list[dict[str, Any]], record: str) -> str:
    """Test accuracy (whole test split) per task and kind, its distance to the majority class, chance, the last
    validation accuracy, steps x batch, the training time without periodic validation and the row's wall time;
    each task's majority row last. The model comes first, so a page's inline numbers can name a row by it."""
    lines = ["| model | task | test accuracy | vs majority: points (SE) | chance | valid accuracy | steps x batch | "
             "training time | row's wall time |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    found_baselines: list[dict[str, Any]] = []
    tasks = list(dict.fromkeys(str(e["row"]).split("-", 1)[0] for e in entries))
    for task in tasks:
        name, classes = TASKS[task][0], TASKS[task][1]
        majority = baselines.entries(TABLE).get(f"{task}-majority")
        for e in (e for e in entries if str(e["row"]).startswith(f"{task}-")):
            kind = str(e["row"]).split("-", 1)[1]
            test, valid, batch = e["test"], e["valid"].get("eval_accuracy"), batch_size(e)
            lines.append(f"| {KINDS[kind]} | {name} | {100 * test['accuracy']:.2f}% ({test['examples']:,}) | "
                         f"{versus_majority(float(test['accuracy']), majority)} | {100 / classes:.0f}% | "
                         f"{'-' if valid is None else f'{100 * valid:.2f}%'} | {e['steps']:,} x {batch} | "
                         f"{e['train_s'] / 60:.1f} min | {wall_time(e)} |")
        if majority is not None:
            t, v = majority["test"], majority["valid"]
            lines.append(f"| majority class (no model): label {majority['label']} | {name} | "
                         f"{100 * t['accuracy']:.2f}% ({t['examples']:,}) | 1 SE = "
                         f"{100 * standard_error(float(t['accuracy']), int(t['examples'])):.2f} | "
                         f"{100 / classes:.0f}% | {100 * v['accuracy']:.2f}% | - | - | - |")
            found_baselines.append(majority)
    return "\n".join([*lines, "", provenance(entries, record) + " " + baselines.note(found_baselines, TABLE)])


def setting_table() -> str:
    """Each CPU-size config beside LRA's setting of the task: lengths, tree, split sizes, model, steps x batch."""
    from studies.results_runs import LRA_CPU_CONFIGS

    lines = ["| task | lengths (tokens) | depth, arguments | train / valid / test | model | steps x batch | "
             "LRA: lengths | LRA: model | LRA: steps x batch |", "|---|---:|---:|---:|---|---:|---:|---|---:|"]
    for task in LRA_CPU_CONFIGS:
        c = _config(task)
        g, m, t = c["task"]["generator_options"], c["model"], c["train"]
        name, _, lra_steps, lra_batch = TASKS[task]
        lines.append(f"| {name} | {g['min_length']}-{g['max_length']} | {g['max_depth']}, {g['max_args']} | "
                     f"{g['num_train']:,} / {g['num_valid']:,} / {g['num_test']:,} | "
                     f"{m['n_layers']} x d{m['d_model']}, {m['n_heads']} heads, MLP {m['d_ff']} | "
                     f"{t['steps']:,} x {t['batch_size']} | {LRA_SETTING[task]['lengths']} | "
                     f"{LRA_SETTING[task]['model']} | {lra_steps:,} x {lra_batch} |")
    return "\n".join(lines)
