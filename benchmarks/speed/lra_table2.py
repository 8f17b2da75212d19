"""Long Range Arena's Table 2 (speed and memory at 1K-4K, causal against bidirectional) measured and appended to
a JSONL record, from which ``benchmarks/doc_tables/registry.py`` builds docs/benchmarks.md's "LRA Table 2" section.

The options are those of ``synthformer bench --lra-table2`` (:mod:`synthformer.bench.lra_cli`) plus
``--record FILE``, ``--name`` and ``--shared-cpu`` (``benchmarks/records.py``). The defaults (8 kinds, 1K-4K,
batch 1, bidirectional and causal, 1 warm-up and 3 timed rounds) take about 20-25 minutes on the 2-core CPU:

    python benchmarks/speed/lra_table2.py --record benchmarks/results/bench_lra_table2.jsonl
    python benchmarks/speed/lra_table2.py --lengths 32 --set d_model=16 n_heads=2 n_layers=1 d_ff=32 --repeats 1 \
        --shared-cpu    # a smoke run of a few seconds, no record
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import torch

from synthformer.bench.lra_cli import build_lra_parser, report, run_from_args, write_outputs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import add_record_options, load, write_record  # noqa: E402 - benchmarks/records.py

PROG = "python benchmarks/speed/lra_table2.py"


def main(argv: list[str] | None = None) -> int:
    parser = build_lra_parser(PROG)
    add_record_options(parser)
    args_list = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(args_list)
    started = load()
    if args.threads is not None and args.threads > 0:
        torch.set_num_threads(args.threads)  # for the record's ``threads`` too (the run restores what it found)
    try:
        rows = run_from_args(args)
    except ValueError as err:
        parser.error(str(err))
    text = report(rows, shlex.join([*shlex.split(PROG), *args_list]))
    print(text)
    if args.out:
        print(write_outputs(rows, text, args.out))
    write_record(args, rows, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
