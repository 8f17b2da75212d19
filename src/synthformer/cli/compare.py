"""``synthformer compare``: train the paper's key attention variants on a built-in task and print a table."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from ._common import CliError, HelpFormatter, add_common_options, split_overrides, warn_if_busy
from ._compare_progress import ComparisonProgress, HeartbeatFilter, duration, threads_note

__all__ = ["COMPARE_TASK_NAMES", "DEFAULT_KINDS", "register", "run"]

# Spelled out rather than imported from synthformer.tasks, so that building the parser (and --help) does not
# import torch; a test keeps them equal to synthformer.tasks.COMPARE_TASKS / DEFAULT_KINDS.
COMPARE_TASK_NAMES: tuple[str, ...] = ("listops", "pystdlib")
DEFAULT_KINDS: tuple[str, ...] = ("V", "R", "D", "R+V")

_EPILOG = """\
examples:
  synthformer compare                                  # V, R, D, R+V: character LM on Python's stdlib (~8 min)
  synthformer compare --kinds V R FR D FD R+V --steps 300
  synthformer compare --task listops --out runs/listops-compare
  synthformer compare model.n_layers=4 train.lr=1e-3   # overrides of the base config
  synthformer compare --config configs/compare_pystdlib.yaml

The default task is a character language model (2 layers, d_model 128, 4 heads, context 128) trained on the
.py files of the Python standard library of the interpreter running it: no network, no data files. Every
variant trains on the same data with the same seed and schedule and differs only in its self-attention. The
table shows trainable parameters, the final validation loss and bits per character (accuracy for listops),
training tokens per second and wall time, with the unigram (or majority-class) baseline a model that ignores
context would reach. Each variant is a complete run directory (OUT/<kind>) for 'synthformer eval' and
'synthformer generate'; the table is also saved as OUT/comparison.md and OUT/comparison.json.

Progress: a line per kind when it starts and ends ("[2/4] R: ..."), with the ETA of the whole comparison: the
kinds still to come are estimated at the mean wall time of the finished ones. Off a terminal the trainer's
heartbeat (a line a minute) names the kind and that ETA too. The thread count is printed at the start and under
the table: the recorded numbers (docs/results/compare.md) are for the default threads, one per core; another
count (--threads) changes the last digits of the losses and bits/char (up to about 0.013 bits/char).
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``compare`` verb."""
    p = sub.add_parser(
        "compare", help="train V, R, D, R+V on a built-in task and compare them", formatter_class=HelpFormatter,
        epilog=_EPILOG,
        description="Train one small model per attention kind on the same built-in task (no network needed) and "
                    "print a comparison table.",
    )
    p.add_argument("overrides", metavar="KEY=VALUE", nargs="*",
                   help="dotted overrides of the base config, e.g. train.lr=1e-3")
    p.add_argument("--kinds", nargs="+", default=list(DEFAULT_KINDS), metavar="KIND",
                   help="attention kinds to compare (any registered kind or mixture such as R+V)")
    p.add_argument("--task", choices=COMPARE_TASK_NAMES, default="pystdlib",
                   help="built-in task: pystdlib (character LM on Python's stdlib) or listops (classification)")
    p.add_argument("--config", metavar="FILE", default=None,
                   help="use this run config as the base instead of the built-in task's")
    p.add_argument("--steps", type=int, default=None, metavar="N", help="training steps per variant")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="output directory (default: a new runs/compare-<task>-<date-time>)")
    p.add_argument("--overwrite", action="store_true", help="replace earlier runs of the same kinds in --out")
    add_common_options(p)
    p.set_defaults(handler=run, default_log_level=logging.WARNING)


def run(args: argparse.Namespace) -> int:
    """Run the comparison and print the table."""
    import torch

    from synthformer.tasks import compare_config, format_table, load_run_config, run_comparison

    kinds, swallowed = split_overrides(args.kinds)
    overrides = list(args.overrides) + swallowed
    if args.steps is not None:
        if args.steps < 1:
            raise CliError(f"--steps must be >= 1, got {args.steps}")
        overrides.append(f"train.steps={args.steps}")
    base = load_run_config(args.config, overrides) if args.config else compare_config(args.task, overrides)
    task_name = Path(args.config).stem if args.config else args.task
    out = Path(args.out) if args.out else Path("runs") / f"compare-{task_name}-{time.strftime('%Y%m%d-%H%M%S')}"
    print(f"comparing {', '.join(kinds)} on {task_name} ({base.train.steps} steps each); runs in {out}", flush=True)
    threads = torch.get_num_threads()
    print(f"threads: {threads_note(threads, args.threads)}", flush=True)
    warn_if_busy()
    progress = sys.stderr.isatty()
    # Without a progress bar (a log file, a CI job) the trainer's heartbeat lines are the only sign of life
    # during a model's minutes of training: show them at the default log level too (not with -q).
    heartbeat = logging.getLogger("synthformer.train.recording")
    level = heartbeat.level
    if not progress and logging.getLogger().level == logging.WARNING:
        heartbeat.setLevel(logging.INFO)
    where = ComparisonProgress(kinds)
    named = HeartbeatFilter(where)  # "[2/4] R: step 100/400 ...; comparison ETA ..."

    def on_row(i: int, row) -> None:  # noqa: ANN001 - ComparisonRow, imported lazily
        value = f"{100 * row.metric_value:.2f}%" if row.metric == "accuracy" else f"{row.metric_value:.4f}"
        where.finish(i, row.wall_seconds)
        eta = where.eta()
        left = f"; comparison ETA {duration(eta[0])} ({eta[1]})" if eta is not None and i + 1 < len(kinds) else ""
        print(f"  [{i + 1}/{len(kinds)}] {row.kind}: val loss {row.valid_loss:.4f}, {row.metric} {value} "
              f"({row.wall_seconds:.0f} s){left}", flush=True)
        if i + 1 < len(kinds):
            print(f"  {where.label}: training", flush=True)

    # the filter is installed only here and always removed: a process that runs more (tests, a notebook) keeps
    # its own heartbeat lines
    heartbeat.addFilter(named)
    try:
        if kinds:  # none: run_comparison refuses in one line
            # the first kind starts once the data is prepared (inside run_comparison)
            print(f"  {where.label}: training (after the data is prepared); the comparison's ETA follows it",
                  flush=True)
        result = run_comparison(base, kinds, out, task_name=task_name, overwrite=args.overwrite,
                                progress=progress, on_row=on_row)
    finally:
        heartbeat.setLevel(level)
        heartbeat.removeFilter(named)
    footer = (f"threads: {threads}; the recorded numbers (docs/results/compare.md) are for the default threads "
              "(one per core): another count changes the last digits")
    record_threads(out, threads, footer)
    print()
    print(format_table(result))
    print(footer)
    print(f"saved: {out / 'comparison.md'}, {out / 'comparison.json'}")
    return 0


def record_threads(out: Path, threads: int, footer: str) -> None:
    """Add the thread count to the saved table (its footer) and to ``comparison.json``'s settings: the numbers
    depend on it in their last digits."""
    import json

    md, js = out / "comparison.md", out / "comparison.json"
    if md.is_file():
        md.write_text(md.read_text(encoding="utf-8").rstrip("\n") + f"\n{footer}\n", encoding="utf-8")
    if js.is_file():
        data = json.loads(js.read_text(encoding="utf-8"))
        data.setdefault("settings", {})["threads"] = threads
        js.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
