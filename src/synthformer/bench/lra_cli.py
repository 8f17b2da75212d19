"""``synthformer bench --lra-table2``: LRA's Table 2 (speed and memory at 1K-4K) on this machine.

Examples::

    synthformer bench --lra-table2                                    # the whole table, bidirectional and causal
    synthformer bench --lra-table2 --kinds V R FR --lengths 1024 2048 --causal none
    synthformer bench --lra-table2 --lengths 32 --set d_model=16 n_heads=2 --repeats 1   # a smoke run

``python benchmarks/speed/lra_table2.py`` takes the same options plus ``--record FILE`` and ``--shared-cpu``, and
appends the rows to a record for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import csv
import io
import logging
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .lra import CAUSAL_MODES, DEFAULT_BATCH_SIZE, DEFAULT_LENGTHS, LRA_KINDS, run_lra_table2
from .lra_report import causal_markdown, goal_lines, table2_markdown
from .rows import parse_overrides
from .table import machine_info

__all__ = ["FLAG", "build_lra_parser", "lra_main", "report", "run_from_args", "to_csv", "write_outputs"]

#: The flag of ``synthformer bench`` that selects this mode.
FLAG = "--lra-table2"


def build_lra_parser(prog: str = f"synthformer bench {FLAG}") -> argparse.ArgumentParser:
    """The options of the LRA Table 2 mode (``prog``: the command shown in help and in the report)."""
    p = argparse.ArgumentParser(
        prog=prog,
        description="Long Range Arena's Table 2 on this machine: training steps/s and peak memory of LRA Text's "
        "classifier (4 layers, d_model 256, 4 heads, byte vocabulary) at 1K-4K tokens per kind, relative to the "
        "Transformer (V), each speed beside its FLOP-ratio limit; and causal against bidirectional training.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--kinds", nargs="+", metavar="KIND", default=None,
                   help=f"kinds to measure (default: all of {' '.join(LRA_KINDS)}); V is always measured")
    p.add_argument("--lengths", nargs="+", type=int, metavar="L", default=list(DEFAULT_LENGTHS),
                   help="tokens per sequence (default: 1024 2048 3072 4096)")
    p.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
                   help=f"sequences per step (default: {DEFAULT_BATCH_SIZE}: the whole table, bidirectional and "
                   "causal, in about 20-25 minutes on 2 CPU cores; LRA used 32 on TPUs)")
    p.add_argument("--causal", choices=CAUSAL_MODES, default="both",
                   help="measure bidirectional and causal models (both), only causal, or only bidirectional (none)")
    p.add_argument("--repeats", type=int, default=3, help="timed rounds; the median is reported (default: 3)")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds before timing (default: 1)")
    p.add_argument("--steps", type=int, default=1, help="training steps per timed sample (default: 1)")
    p.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="change LRA Text's model, e.g. --set d_model=16 n_heads=2 n_layers=1 (tiny smoke runs)")
    p.add_argument("--memory-limit", type=float, default=None, metavar="GIB",
                   help="memory the models of one length may use together (default: 90%% of the available memory); "
                   "a kind whose estimate exceeds it is reported as skipped")
    p.add_argument("--no-memory-guard", dest="memory_guard", action="store_false",
                   help="build every model whatever its estimated footprint (no meta-device estimate first)")
    p.add_argument("--no-memory", dest="memory", action="store_false", help="skip the peak-memory measurement")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--seed", type=int, default=0, help="seed of the models and the batch (default: 0)")
    p.add_argument("--out", help="write OUT.md (report and tables) and OUT.csv")
    p.add_argument("--no-progress", dest="progress", action="store_false",
                   help="hide the progress bar (shown only when stderr is a terminal: a log file gets no bar frames)")
    p.add_argument("-v", "--verbose", action="store_true", help="log each model as it is built")
    return p


def _kinds(values: Sequence[str] | None) -> list[str] | None:
    # accept `--kinds V R R+V` and `--kinds V,R,R+V`
    if values is None:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def run_from_args(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run the table with parsed options (``ValueError`` for a bad value, named)."""
    if args.memory_limit is not None and not args.memory_limit > 0:
        raise ValueError(f"--memory-limit must be a positive number of GiB, got {args.memory_limit!r}")
    return run_lra_table2(
        kinds=_kinds(args.kinds), lengths=args.lengths, batch_size=args.batch_size, causal=args.causal,
        warmup=args.warmup, repeats=args.repeats, steps=args.steps, overrides=parse_overrides(args.overrides),
        memory=args.memory, memory_limit=None if args.memory_limit is None else int(args.memory_limit * 2**30),
        memory_guard=args.memory_guard, seed=args.seed,
        progress=args.progress and sys.stderr.isatty(),  # no bar frames in a log file, as train
        threads=args.threads)


def report(rows: Sequence[dict[str, Any]], command: str | None = None) -> str:
    """The printed report: machine and settings, Table 2 (bidirectional and, when measured, causal), causal against
    bidirectional, and the goals."""
    info, first = machine_info(), rows[0]
    lines = [f"LRA Table 2 regenerated: LRA Text's classifier ({first['n_layers']} layers, d_model "
             f"{first['d_model']}, {first['n_heads']} heads), batch {first['batch_size']}, median of "
             f"{first['repeats']} x {first['steps']} steps after {first['warmup']} warm-up round(s)",
             f"machine: {info['processor']}; {info['cpus']} CPUs, {first['threads']} torch threads; torch "
             f"{info['torch']}"]
    if command:
        lines.append(f"command: {command}")
    parts = ["\n".join(lines)]
    if any(not r["causal"] for r in rows):
        parts.append("Bidirectional (LRA's Table 2): speed relative to V (FLOP-ratio limit), memory relative to V\n\n"
                     + table2_markdown(rows))
    if any(r["causal"] for r in rows):
        parts.append("Causal: speed relative to causal V (FLOP-ratio limit), memory relative to causal V\n\n"
                     + table2_markdown(rows, causal=True))
        if any(not r["causal"] for r in rows):
            parts.append("Causal against bidirectional training\n\n" + causal_markdown(rows))
    parts.append("\n".join(goal_lines(rows)))
    return "\n\n".join(p for p in parts if p)


def to_csv(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as CSV, every key a column (full precision)."""
    columns = list(dict.fromkeys(k for r in rows for k in r))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def lra_main(argv: Sequence[str], prog: str = f"synthformer bench {FLAG}") -> int:
    """Run the LRA Table 2 mode from its arguments (those after ``--lra-table2``); print the report."""
    parser = build_lra_parser(prog)
    args = parser.parse_args(list(argv))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    try:
        rows = run_from_args(args)
    except ValueError as err:
        parser.error(str(err))
    text = report(rows, shlex.join([*shlex.split(prog), *argv]))
    sys.stdout.write(text + "\n")
    if args.out:
        sys.stdout.write(write_outputs(rows, text, args.out) + "\n")
    return 0


def write_outputs(rows: Sequence[dict[str, Any]], text: str, out: str) -> str:
    """Write ``OUT.md`` (the report) and ``OUT.csv`` (the rows); return a line naming both."""
    prefix = Path(out).with_suffix("") if Path(out).suffix in (".md", ".csv") else Path(out)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{prefix}.md").write_text(text + "\n", encoding="utf-8")
    Path(f"{prefix}.csv").write_text(to_csv(rows), encoding="utf-8")
    return f"wrote {prefix}.md and {prefix}.csv"
