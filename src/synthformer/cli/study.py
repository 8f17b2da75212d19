"""``synthformer study``: every variant x seed with equal budgets, then a table, curves and a report."""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
import time
from pathlib import Path

from ._common import CliError, HelpFormatter, add_common_options, split_overrides, warn_if_busy

__all__ = ["DEFAULT_KINDS", "register", "run"]

# Spelled out rather than imported from synthformer.study, so that building the parser (and --help) does not
# import torch; a test keeps it equal to synthformer.study.DEFAULT_KINDS.
DEFAULT_KINDS: tuple[str, ...] = ("V", "R", "Fix", "FR", "D", "FD", "R+V", "D+V")

_EPILOG = """\
examples:
  synthformer study configs/lm_tiny_shakespeare.yaml --kinds V,R,D,R+V --seeds 3 train.steps=500
  synthformer study configs/lm_tiny_shakespeare.yaml --seeds 3      # the paper's eight variants
  synthformer study configs/mt_multi30k_de_en.yaml --kinds R --grid model.n_heads=2,4,8,16,32 --seeds 2  # Table 9
  synthformer study configs/lm_tiny_shakespeare.yaml --kinds V,R --grid train.lr=1e-3,3e-3 --out runs/lr

Each (variant, seed) is a complete run directory OUT/<variant>/seed<k> ('synthformer eval', 'generate' and
'analyze' work on it), trained with the same budget; a variant is a kind (set on every self-attention stack,
as 'synthformer compare' does), a grid point, or both (--kinds x --grid). Seeds set train.seed (the config's
seed, +1, +2, ...).

A study can be stopped (Ctrl-C, a kill, a reboot) and continued with the same command: finished runs are read
back, a half-finished run resumes from its checkpoint. The same command with a larger --seeds adds the
new seeds' runs to the study. A different study into the same --out is refused once that study has trained
something; --overwrite replaces it, deleting it only when the new study's first run starts training (a new study
that fails before then leaves the earlier one as it was). A study that fails before any run starts (a missing
data file, a bad value) leaves --out free: the corrected command starts it. The same command started
again beside a running one (another terminal, another device) shares the work: each process trains the runs
no other holds, then waits for the others' before writing the table.

Written into OUT: results.md / .csv / .json (per variant mean +- std over seeds of the validation metric, the
test metric when the task has a test split, parameters, steps/s, wall time, difference to V with Welch's
t-test), curves_steps.png and curves_wall.png (the paper's Figure A.7), and report.html (self-contained)
with its Markdown twin report.md.
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``study`` verb."""
    p = sub.add_parser(
        "study", help="train every variant x seed with equal budgets; table, curves and report",
        formatter_class=HelpFormatter, epilog=_EPILOG,
        description="Train one run per (variant, seed) from one config with identical budgets into a resumable "
                    "study directory, then write the results table, convergence curves and an HTML report.",
    )
    p.add_argument("config", metavar="CONFIG", help="the base run config (YAML)")
    p.add_argument("overrides", metavar="KEY=VALUE", nargs="*",
                   help="dotted overrides of the base config, e.g. train.steps=500")
    p.add_argument("--kinds", nargs="+", default=None, metavar="KINDS",
                   help="attention kinds, comma-separated (default: the paper's eight, "
                        f"{','.join(DEFAULT_KINDS)}; none with --grid alone)")
    p.add_argument("--seeds", type=int, default=3, metavar="N", help="runs per variant (seeds)")
    p.add_argument("--grid", action="append", default=None, metavar="KEY=V1,V2",
                   help="vary a config key over values (repeatable: the product of all grids and the kinds)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="study directory (default: a new runs/study-<config>-<date-time>)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the study in --out (its runs, tables, figures and report); it is deleted when the "
                        "new study's first run starts training, not before")
    add_common_options(p)
    p.set_defaults(handler=run, default_log_level=logging.WARNING)


def _kinds(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The kinds (comma- or space-separated) and the overrides that nargs='+' took into --kinds."""
    items, overrides = split_overrides(args.kinds or [])
    kinds = [k.strip() for item in items for k in item.split(",") if k.strip()]
    if args.kinds is not None and not kinds:
        raise CliError("--kinds: expected at least one kind, e.g. --kinds V,R,D")
    if args.kinds is None and not args.grid:  # --grid alone varies the config's own kinds
        kinds = list(DEFAULT_KINDS)
    return kinds, overrides


def continue_command(args: argparse.Namespace, kinds: list[str], overrides: list[str], out: Path) -> str:
    """The command that continues this study (the same study, with its --out spelled out)."""
    parts = ["synthformer", "study", args.config, *overrides]
    if kinds:
        parts += ["--kinds", ",".join(kinds)]
    parts += ["--seeds", str(args.seeds)]
    for grid in args.grid or []:
        parts += ["--grid", grid]
    parts += ["--out", str(out)]
    if args.threads is not None:
        parts += ["--threads", str(args.threads)]
    return shlex.join(parts)


def run(args: argparse.Namespace) -> int:
    """Run (or continue) the study, then print the table and where the report is."""
    from synthformer.study import StudySpec, format_markdown, parse_grid, run_study, write_outputs
    from synthformer.tasks import load_run_config

    if args.seeds < 1:
        raise CliError(f"--seeds must be >= 1, got {args.seeds}")
    kinds, extra = _kinds(args)
    overrides = list(args.overrides) + extra
    base = load_run_config(args.config, overrides)
    spec = StudySpec.from_run(base, kinds, parse_grid(args.grid or []), args.seeds, overrides)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path(args.out) if args.out else Path("runs") / f"study-{Path(args.config).stem}-{stamp}"
    variants = spec.variants
    total = len(variants) * len(spec.seeds)
    args.interrupt_hint = f"continue the study with: {continue_command(args, spec.kinds, overrides, out)}"
    print(f"study of {len(variants)} variants x {len(spec.seeds)} seeds = {total} runs of {base.train.steps} steps "
          f"each; in {out}", flush=True)
    warn_if_busy()
    progress = sys.stderr.isatty()
    heartbeat = logging.getLogger("synthformer.train.recording")
    level = heartbeat.level
    if not progress and logging.getLogger().level == logging.WARNING:
        heartbeat.setLevel(logging.INFO)  # without bars, the heartbeat is the only sign of life during a run

    def on_run(done: int, n: int, record, read_back: bool) -> None:  # noqa: ANN001 - RunRecord, imported lazily
        if progress:
            return  # the bar shows it
        how = "done earlier" if read_back else f"{record.wall_seconds:.0f} s"
        print(f"  [{done}/{n}] {record.variant} seed {record.seed}: valid {record.metric} {record.valid_metric:.4f} "
              f"({how})", flush=True)

    try:
        result = run_study(base, spec, out, progress=progress, on_run=on_run, overwrite=args.overwrite)
    finally:
        heartbeat.setLevel(level)
    if result.continued:
        print(f"continued the study in {out}", flush=True)
    outputs = write_outputs(result)
    print()
    print(format_markdown(outputs.table))
    print(f"saved: {outputs.html}, {outputs.markdown}, {', '.join(str(p) for p in outputs.tables.values())}, "
          f"{', '.join(str(p) for p in outputs.figures)}")
    return 0
