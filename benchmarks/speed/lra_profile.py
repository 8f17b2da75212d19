"""Where a training step of LRA Text's classifier spends its time, per kind (``synthformer.bench.lra_profile``):
the profiler's self time summed into matrix products, SDPA, softmax, AdamW and everything else, appended to a
JSONL record from which ``benchmarks/doc_tables/registry.py`` builds docs/benchmarks.md's "Where the time goes" table.
It explains the kinds of LRA Table 2 that miss their FLOP-ratio limit. About 2 minutes on the 2-core CPU:

    python benchmarks/speed/lra_profile.py --record benchmarks/results/bench_lra_profile.jsonl
    python benchmarks/speed/lra_profile.py --length 32 --set d_model=16 n_heads=2 n_layers=1 d_ff=32  # smoke, no record
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import torch

from synthformer.bench.cli import parse_overrides
from synthformer.bench.lra import LRA_KINDS
from synthformer.bench.lra_profile import profile_kinds, profile_markdown

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import add_record_options, load, write_record  # noqa: E402 - benchmarks/records.py

PROG = "python benchmarks/speed/lra_profile.py"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--kinds", nargs="+", default=None, metavar="KIND",
                   help=f"kinds to profile (default: all of {' '.join(LRA_KINDS)}); V is always profiled")
    p.add_argument("--length", type=int, default=2048, help="tokens per sequence (default: 2048)")
    p.add_argument("--causal", action="store_true", help="every mixer causal (Linformer is left out)")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps first (default: 1)")
    p.add_argument("--steps", type=int, default=2, help="profiled steps; times are per step (default: 2)")
    p.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="change LRA Text's model, e.g. --set d_model=16 n_heads=2 n_layers=1 (smoke runs)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    add_record_options(p)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args_list = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(args_list)
    started = load()
    if args.threads is not None:
        if args.threads < 1:
            parser.error(f"--threads must be >= 1, got {args.threads}")
        torch.set_num_threads(args.threads)
    try:
        rows = profile_kinds(args.kinds, args.length, args.causal, args.warmup, args.steps,
                             parse_overrides(args.overrides))
    except ValueError as err:
        parser.error(str(err))
    print(f"# {shlex.join([*shlex.split(PROG), *args_list])}")
    print(f"# L={args.length}, {'causal' if args.causal else 'bidirectional'}, batch 1, "
          f"{torch.get_num_threads()} threads; milliseconds per step (share of the profiled step)")
    print(profile_markdown(rows))
    write_record(args, rows, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
