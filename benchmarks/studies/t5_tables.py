"""Markdown tables in the form of the paper's Tables 4 and 5 from T5-style run directories.

Pretraining runs (``task.type: span_corruption``): kind, parameters, validation log perplexity (from
``eval_valid.json``, written by ``synthformer eval RUN``), measured noise density and mean span length, steps/s and
training wall time (from ``metrics.jsonl``). Finetuning runs (``task.type: text_to_text``): per-task dev scores and
the GLUE average from ``eval_valid.json``, and the invalid predictions.

Usage:
    python benchmarks/studies/t5_tables.py --pretrain runs/t5/pre_V runs/t5/pre_R ... --finetune runs/t5/ft_V ... \
        --majority ../shared/data/glue
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

# Table 5's columns for the tasks we have (two-metric tasks as "a/b")
_COLUMNS = [("cola", ["matthews_corrcoef"], "CoLA"), ("sst2", ["accuracy"], "SST-2"),
            ("mrpc", ["f1", "accuracy"], "MRPC"), ("qqp", ["f1", "accuracy"], "QQP"),
            ("stsb", ["pearson", "spearman"], "STS-B"), ("mnli", ["accuracy"], "MNLI"),
            ("qnli", ["accuracy"], "QNLI"), ("rte", ["accuracy"], "RTE")]


def _kind(run: Path) -> tuple[str, dict]:
    config = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    return str(config["model"].get("encoder_kind", "V")), config


def _training(run: Path) -> tuple[int, float]:
    """(steps, training seconds) from the ``trained N steps, ..., T s`` line ``synthformer train`` prints (our
    queue scripts keep it in ``RUN.log``); seconds are NaN without a log."""
    log = run.with_suffix(".log")
    if log.is_file():
        for line in log.read_text(encoding="utf-8").splitlines():
            if line.startswith("trained ") and " steps" in line:
                steps = int(line.split()[1].replace(",", ""))
                return steps, float(line.rsplit(",", 1)[1].split()[0].replace(",", ""))
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    return max(r["step"] for r in records), float("nan")


def _params(run: Path) -> int:
    log = run.with_suffix(".log")
    if log.is_file():
        for line in log.read_text(encoding="utf-8").splitlines():
            if "trainable parameters" in line and line.startswith("model:"):
                return int(line.split(", ", 1)[1].split()[0].replace(",", ""))
    return -1


def pretrain_table(runs: list[Path]) -> str:
    lines = ["| encoder | params | valid log PPL | noise density | mean span | steps | steps/s | training time |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for run in runs:
        kind, _ = _kind(run)
        metrics = json.loads((run / "eval_valid.json").read_text(encoding="utf-8"))["metrics"]
        steps, seconds = _training(run)
        params = _params(run)
        lines.append(f"| {kind} | {params:,} | {metrics['log_perplexity']:.3f} | {metrics['noise_density']:.4f} | "
                     f"{metrics['mean_span_length']:.3f} | {steps} | {steps / seconds:.2f} | {seconds / 60:.1f} min |")
    return "\n".join(lines)


def finetune_table(runs: list[Path], majority: Path | None = None) -> str:
    reports = {run: json.loads((run / "eval_valid.json").read_text(encoding="utf-8"))["metrics"] for run in runs}
    present = [c for c in _COLUMNS if any(f"{c[0]}_{c[1][0]}" in m for m in reports.values())]
    lines = ["| model | init | GLUE avg | " + " | ".join(c[2] for c in present) + " | invalid |",
             "|---|---|---:|" + "---:|" * len(present) + "---:|"]
    for run, m in reports.items():
        kind, config = _kind(run)
        init = "pretrained" if config.get("init_from") else "scratch"
        cells = ["/".join(f"{m[f'{task}_{metric}']:.1f}" for metric in metrics) for task, metrics, _ in present]
        invalid = sum(int(m.get(f"{task}_invalid", 0)) for task, _, _ in present)
        lines.append(f"| {kind} | {init} | {m['glue_average']:.1f} | " + " | ".join(cells) + f" | {invalid} |")
    if majority is not None:
        lines.append(majority_row(majority, present))
    return "\n".join(lines)


def majority_cells(glue_dir: Path, columns: list[tuple[str, list[str], str]]) -> tuple[float, list[str]]:
    """The majority-label reference (each task's most frequent training label, on its dev set): the GLUE average
    and one ``a/b`` cell per column."""
    from synthformer.tasks.suites.glue.metrics import glue_average
    from synthformer.tasks.suites.glue.reader import read_glue_split
    from synthformer.tasks.suites.glue.text_to_text import majority_scores

    tasks = [c[0] for c in columns]
    train = [e for t in tasks for e in read_glue_split(t, glue_dir, "train")]
    valid = {t: read_glue_split(t, glue_dir, "dev") for t in tasks}
    scores = majority_scores(train, [e for v in valid.values() for e in v], [t for t, v in valid.items() for _ in v])
    cells = ["/".join(f"{scores[task].metrics[metric]:.1f}" for metric in metrics) for task, metrics, _ in columns]
    return glue_average(scores), cells


def majority_row(glue_dir: Path, columns: list[tuple[str, list[str], str]]) -> str:
    """The table row of the majority-label reference."""
    average, cells = majority_cells(glue_dir, columns)
    return f"| majority label | - | {average:.1f} | " + " | ".join(cells) + " | 0 |"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pretrain", nargs="*", type=Path, default=[])
    p.add_argument("--finetune", nargs="*", type=Path, default=[])
    p.add_argument("--majority", type=Path, default=None, metavar="GLUE_DIR",
                   help="add the majority-label row, from the GLUE folder the finetuning runs read")
    args = p.parse_args()
    if args.pretrain:
        print(pretrain_table(args.pretrain))
        print()
    if args.finetune:
        print(finetune_table(args.finetune, args.majority))


if __name__ == "__main__":
    main()
