"""Command line of the benchmark: ``python -m synthformer.bench`` (and ``synthformer bench``, which calls
:func:`main` with its own arguments).

Examples::

    python -m synthformer.bench --preset lm-base                       # Table 4 at the paper's base size
    python -m synthformer.bench --preset cls-base --rows V FR FR+V Linformer --seq-len 512
    python -m synthformer.bench --preset lm-small --batch-size 4 --bf16 --out results/table4-small
    python -m synthformer.bench --preset lm-base --set n_layers=2 d_model=256 --rows "Syn (R)" LightConv
    python -m synthformer.bench --lra-table2                           # LRA's Table 2 (see bench.lra_cli)
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from collections.abc import Sequence

from synthformer.models import list_presets

from .goals import model_goals
from .rows import parse_overrides, resolve_rows, valid_row_names
from .table import bench_config, describe_run, run_table, to_markdown, write_outputs

__all__ = ["DEFAULT_PROG", "build_parser", "main", "parse_overrides"]

DEFAULT_PROG = "python -m synthformer.bench"


def _split_rows(values: Sequence[str] | None) -> list[str] | None:
    # accept both `--rows V R R+V` and `--rows V,R,R+V`; row names contain spaces but never commas
    if values is None:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def build_parser(prog: str = DEFAULT_PROG) -> argparse.ArgumentParser:
    """The argument parser of the benchmark (``prog`` is the command shown in help and in the report)."""
    p = argparse.ArgumentParser(
        prog=prog,
        description="Regenerate the Synthesizer paper's Table 4 (parameters, FLOPs per training step, training "
        "steps/s and tokens/s as ratios to the Transformer, peak memory) on this machine.",
        epilog=f"rows: {', '.join(valid_row_names())} (also 'Syn (R)' or the mixer kind, e.g. 'R+V')\n\n"
        "examples:\n"
        f"  {prog} --preset lm-base --out docs/table4   # the paper's base decoder, vocabulary 8,000\n"
        f"  {prog} --preset cls-base --rows V FR FR+V Linformer\n"
        f"  {prog} --preset lm-small --bf16\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--preset", default="lm-base", choices=list_presets(), help="model preset (default: lm-base)")
    p.add_argument(
        "--rows",
        nargs="+",
        metavar="ROW",
        help="models to compare (default: Table 4's for decoder presets, plus FR, FR+V and Linformer for encoder "
        "presets); the Transformer is always included",
    )
    p.add_argument("--vocab-size", type=int, default=8000, help="vocabulary size (default: 8000)")
    p.add_argument("--seq-len", type=int, default=None, help="tokens per sequence (default: the preset's max_len)")
    p.add_argument("--batch-size", type=int, default=8, help="sequences per step (default: 8)")
    p.add_argument("--steps", type=int, default=2, help="training steps per timed sample (default: 2)")
    p.add_argument("--repeats", type=int, default=5, help="timed samples per model; the median is shown (default: 5)")
    p.add_argument("--warmup", type=int, default=2, help="untimed warm-up rounds over all models (default: 2)")
    p.add_argument("--bf16", action="store_true", help="run forward and backward under bfloat16 CPU autocast")
    p.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        dest="overrides",
        help="change preset fields before building, e.g. --set n_layers=2 d_model=256 dropout=0",
    )
    p.add_argument("--out", help="write OUT.md (report and table) and OUT.csv")
    p.add_argument("--no-memory", dest="memory", action="store_false", help="skip the peak-memory measurement")
    p.add_argument(
        "--threads", type=int, default=None, help="torch threads for the run (default: torch's, usually all cores)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the models and the batch (default: 0)")
    p.add_argument("--no-progress", dest="progress", action="store_false",
                   help="hide the progress bar (shown only when stderr is a terminal: a log file gets no bar frames)")
    p.add_argument("--list-rows", action="store_true", help="print the valid row names and exit")
    p.add_argument("--lra-table2", action="store_true",
                   help="Long Range Arena's Table 2 instead (speed and memory at 1K-4K, causal against bidirectional); "
                   f"its options: {prog} --lra-table2 --help")
    p.add_argument("--calibrate", action="store_true",
                   help="measure this machine's fast-path length thresholds instead and store them for later runs; "
                   f"its options: {prog} --calibrate --help")
    p.add_argument("--explain", action="store_true",
                   help="print, for each attention layer of a run config's model, the execution path it takes on "
                   f"this machine and why every other path does not: {prog} --explain CONFIG [KEY=VALUE ...]")
    p.add_argument("-v", "--verbose", action="store_true", help="log each model's parameters and speed")
    return p


def main(argv: Sequence[str] | None = None, prog: str = DEFAULT_PROG) -> int:
    """Run the benchmark from command-line arguments; print the report and the table; return the exit code.

    Args:
        argv: the arguments after the command (None: ``sys.argv[1:]``).
        prog: the command that was run (``"synthformer bench"`` when called from the main CLI); shown with the
            arguments as the exact command line in the report.
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    if "--calibrate" in args_list:  # its own options (synthformer.bench.calibrate)
        from .calibrate import FLAG as CALIBRATE
        from .calibrate import calibrate_main

        return calibrate_main([a for a in args_list if a != CALIBRATE], prog=f"{prog} {CALIBRATE}")
    if "--explain" in args_list:  # its own arguments (synthformer.bench.explain)
        from .explain import FLAG as EXPLAIN
        from .explain import explain_main

        return explain_main([a for a in args_list if a != EXPLAIN], prog=f"{prog} {EXPLAIN}")
    if "--lra-table2" in args_list:  # its own options (synthformer.bench.lra_cli)
        from .lra_cli import FLAG, lra_main

        return lra_main([a for a in args_list if a != FLAG], prog=f"{prog} {FLAG}")
    parser = build_parser(prog)
    args = parser.parse_args(args_list)
    if args.list_rows:
        sys.stdout.write("\n".join(valid_row_names()) + "\n")
        return 0
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    rows = _split_rows(args.rows)
    try:
        # validate everything before the (long) measurement starts, and report it as a usage error
        overrides = parse_overrides(args.overrides)
        config = bench_config(args.preset, args.vocab_size, args.seq_len, overrides)
        resolve_rows(rows, config, args.preset)
        results = run_table(
            preset=args.preset,
            rows=rows,
            batch_size=args.batch_size,
            seq_len=args.seq_len,
            vocab_size=args.vocab_size,
            steps=args.steps,
            warmup=args.warmup,
            repeats=args.repeats,
            dtype="bf16" if args.bf16 else "fp32",
            overrides=overrides,
            memory=args.memory,
            seed=args.seed,
            # a bar's frames (carriage returns) only where a terminal redraws them, as train does
            progress=args.progress and sys.stderr.isatty(),
            threads=args.threads,
        )
    except ValueError as err:
        parser.error(str(err))
    command = shlex.join([*shlex.split(prog), *args_list])
    sys.stdout.write(describe_run(results, command) + "\n\n" + to_markdown(results) + "\n")
    sys.stdout.write("\n" + "\n".join(model_goals(results)) + "\n")
    if args.out:
        md_path, csv_path = write_outputs(results, args.out, command)
        sys.stdout.write(f"\nwrote {md_path} and {csv_path}\n")
    return 0
