"""The comparison experiment: train the paper's key attention variants on one built-in task and tabulate them.

The default (``synthformer compare`` with no arguments) is a character language model over the Python standard
library's own source files (:mod:`synthformer.tasks.pystdlib`): a real learning problem that needs no network
and no data folder. Four decoders that differ only in their self-attention are trained on the same data, with
the same seed and schedule: ``V`` (dot product), ``R`` (random Synthesizer), ``D`` (dense Synthesizer) and the
mixture ``R+V``. The table reports trainable parameters, the final validation loss and bits per character,
training throughput and wall time, next to the unigram baseline (a model that ignores context) so that one can
see the models learn. ``--task listops`` runs the same comparison on short ListOps expressions with encoder
classifiers (accuracy against the majority class).

The settings below are sized to finish all four variants in a few minutes on a 2-core CPU (the measured time is
in the README, from the record behind docs/results/compare.md);
``configs/compare_pystdlib.yaml`` holds the same settings as a file (a test keeps the two equal).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synthformer.common import ConfigError, apply_overrides, from_dict, to_dict
from synthformer.models import config_class
from synthformer.train import RunError

from .run.config import RunConfig
from .run.data import prepare_data
from .run.pipeline import TrainResult, check_run_dir, train_run

__all__ = [
    "COMPARE_TASKS",
    "DEFAULT_KINDS",
    "ComparisonResult",
    "ComparisonRow",
    "compare_config",
    "format_table",
    "run_comparison",
    "with_kind",
]

logger = logging.getLogger(__name__)

#: The variants compared by default: dot product, random, dense, and the random + dot-product mixture.
DEFAULT_KINDS: tuple[str, ...] = ("V", "R", "D", "R+V")

# No dropout (a few hundred steps never overfit) and an untied output projection: with tied embeddings the first
# steps are spent unlearning the initial "predict the current token again" bias, which a short run cannot afford.
_SMALL_MODEL: dict[str, Any] = dict(d_model=128, n_heads=4, n_layers=2, d_ff=512, ffn="relu", dropout=0.0,
                                    tie_embeddings=False)

#: Built-in comparison tasks, as plain config mappings (``RunConfig`` fields).
COMPARE_TASKS: dict[str, dict[str, Any]] = {
    "pystdlib": {
        "task": {
            "type": "lm",
            "generator": "pystdlib",
            "generator_options": {"max_eval_chars": 131072},
            "valid_fraction": 0.05,
            "tokenizer": "char",
            "max_len": 128,
        },
        "model": {**_SMALL_MODEL, "decoder_kind": "V"},
        "train": {
            "steps": 400, "batch_size": 32, "lr": 4.0e-3, "warmup_steps": 50, "schedule": "cosine", "min_lr": 1.0e-4,
            "weight_decay": 0.01, "eval_every": 0, "save_every": 0, "log_every": 50, "max_checkpoints": 1, "seed": 0,
        },
    },
    "listops": {
        "task": {
            "type": "classification",
            "generator": "listops",
            "generator_options": {"num_train": 20000, "num_valid": 1000, "num_test": 0},
            "max_len": 100,
        },
        # the classifier has no output embedding to tie
        "model": {**{k: v for k, v in _SMALL_MODEL.items() if k != "tie_embeddings"}, "encoder_kind": "V",
                  "pooling": "mean"},
        "train": {
            "steps": 1500, "batch_size": 32, "lr": 1.0e-3, "warmup_steps": 50, "schedule": "cosine", "min_lr": 1.0e-4,
            "weight_decay": 0.01, "eval_every": 0, "save_every": 0, "log_every": 50, "max_checkpoints": 1, "seed": 0,
        },
    },
}


def compare_config(task: str = "pystdlib", overrides: Sequence[str] = ()) -> RunConfig:
    """The base :class:`RunConfig` of a built-in comparison task, with dotted overrides applied."""
    if task not in COMPARE_TASKS:
        raise ConfigError(f"unknown comparison task {task!r}; available: {', '.join(COMPARE_TASKS)}")
    base = from_dict(RunConfig, COMPARE_TASKS[task])
    return apply_overrides(base, list(overrides)) if overrides else base


def with_kind(run: RunConfig, kind: str) -> RunConfig:
    """``run`` with the self-attention of every stack of its architecture set to ``kind`` (the decoder of an LM,
    the encoder of a classifier, both of an encoder-decoder; cross-attention stays as configured)."""
    stacks = config_class(run.task.task_type.arch).stacks
    # a new RunConfig re-runs the checks, so an unknown kind fails here, before any training
    return run.with_model(**{f"{stack}_kind": kind for stack in stacks})


@dataclass
class ComparisonRow:
    """One variant's numbers."""

    kind: str
    parameters: int
    steps: int
    valid_loss: float
    metric: str
    """``bits_per_character`` (LM) or ``accuracy`` (classification)."""
    metric_value: float
    tokens_per_second: float
    train_seconds: float
    wall_seconds: float
    run_dir: str


@dataclass
class ComparisonResult:
    """The rows, the baseline, and the shared settings."""

    task: str
    rows: list[ComparisonRow]
    baseline_name: str
    baseline_value: float
    out_dir: str
    total_seconds: float
    settings: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict (written to ``OUT/comparison.json``)."""
        return {"task": self.task, "rows": [dataclasses.asdict(r) for r in self.rows],
                "baseline": {"name": self.baseline_name, "value": self.baseline_value},
                "out_dir": self.out_dir, "total_seconds": self.total_seconds, "settings": self.settings}


def _row(kind: str, run: RunConfig, result: TrainResult) -> ComparisonRow:
    m = result.metrics
    metric = run.task.task_type.comparison_metric(run.task)
    return ComparisonRow(
        kind=kind, parameters=result.parameters, steps=result.steps,
        valid_loss=float(m.get("eval_loss", math.nan)), metric=metric,
        metric_value=float(m.get(f"eval_{metric}", math.nan)), tokens_per_second=result.tokens_per_second,
        train_seconds=result.train_seconds, wall_seconds=result.wall_seconds, run_dir=str(result.run_dir),
    )


def run_comparison(base: RunConfig, kinds: Sequence[str] = DEFAULT_KINDS, out_dir: str | Path = "runs/compare", *,
                   task_name: str = "custom", overwrite: bool = False, progress: bool = False,
                   on_row: Callable[[int, ComparisonRow], None] | None = None) -> ComparisonResult:
    """Train one model per attention kind on the same data and collect their numbers.

    The data (and tokenizer) is prepared once and shared; each variant gets its own run directory
    ``out_dir/<kind>`` (a complete run: ``synthformer eval`` and ``generate`` work on it). Results are also written
    to ``out_dir/comparison.json`` and ``out_dir/comparison.md``.

    Raises:
        RunError: a variant's run directory already holds a run and ``overwrite`` is not set, or ``out_dir`` is a
            file.
        ConfigError: an unknown kind (before anything is trained).
    """
    start = time.perf_counter()
    if not kinds:
        raise ConfigError("compare: give at least one attention kind")
    if len(set(kinds)) != len(kinds):
        raise ConfigError(f"compare: duplicate kinds in {list(kinds)}")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():  # found now, not after the data is prepared and the first kind trained
        raise RunError(f"output directory {out} exists and is not a directory")
    runs = {kind: with_kind(base, kind) for kind in kinds}  # checks every kind before training any
    dirs = {kind: out / kind for kind in kinds}
    for kind in kinds:
        check_run_dir(dirs[kind], overwrite=overwrite)
    if base.init_from is not None:
        raise ConfigError("init_from: compare trains every kind from scratch on shared data; finetune each kind from "
                          "its own pretrained run with 'synthformer train CONFIG init_from=RUN' instead")
    data = prepare_data(base, splits=("train", "valid"))
    baseline_name, baseline_value = base.task.task_type.baseline(base, data)
    logger.info("%s: %.4f", baseline_name, baseline_value)
    rows = []
    for i, kind in enumerate(kinds):
        result = train_run(runs[kind], dirs[kind], overwrite=overwrite, progress=progress, data=data)
        row = _row(kind, runs[kind], result)
        rows.append(row)
        if on_row is not None:
            on_row(i, row)
    settings = {"kinds": list(kinds), "config": to_dict(base)}
    comparison = ComparisonResult(task_name, rows, baseline_name, baseline_value, str(out),
                                  time.perf_counter() - start, settings)
    out.mkdir(parents=True, exist_ok=True)
    (out / "comparison.json").write_text(json.dumps(comparison.to_json(), indent=1) + "\n", encoding="utf-8")
    (out / "comparison.md").write_text(format_table(comparison, markdown=True) + "\n", encoding="utf-8")
    return comparison


_METRIC_HEADERS = {"bits_per_character": "bits/char", "bits_per_byte": "bits/byte", "accuracy": "accuracy",
                   "bleu": "BLEU"}


def format_table(result: ComparisonResult, markdown: bool = False) -> str:
    """The comparison as an aligned text table (or a Markdown table), baseline underneath."""
    metric = result.rows[0].metric if result.rows else "bits_per_character"
    headers = ["kind", "params", "steps", "val loss", _METRIC_HEADERS.get(metric, metric), "tokens/s",
               "train s", "wall s"]
    body = [[r.kind, f"{r.parameters:,}", str(r.steps), f"{r.valid_loss:.4f}",
             f"{r.metric_value:.4f}" if metric != "accuracy" else f"{100 * r.metric_value:.2f}%",
             f"{r.tokens_per_second:,.0f}", f"{r.train_seconds:.1f}", f"{r.wall_seconds:.1f}"] for r in result.rows]
    base = (f"{100 * result.baseline_value:.2f}%" if "accuracy" in result.baseline_name
            else f"{result.baseline_value:.4f}")
    footer = f"baseline: {result.baseline_name} = {base}; total wall time {result.total_seconds:.1f} s"
    if markdown:
        lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in body]
        return "\n".join([*lines, "", footer])
    widths = [max(len(h), *(len(row[i]) for row in body)) if body else len(h) for i, h in enumerate(headers)]

    def fmt(cells: list[str]) -> str:
        # the kind is text (left-aligned); every other column is a number (right-aligned)
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths,
                                                                                              strict=True)))

    lines = [fmt(headers), "  ".join("-" * w for w in widths), *(fmt(row) for row in body)]
    return "\n".join([*lines, footer])
