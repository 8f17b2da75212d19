"""``synthformer bench``: the paper's Table 4 on this machine (see :mod:`synthformer.bench`).

The benchmark has its own argument parser; this verb hands it every argument unchanged, so
``synthformer bench --help`` shows the benchmark's options.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

__all__ = ["NAME", "register", "run_argv"]

NAME = "bench"


def register(sub: argparse._SubParsersAction) -> None:
    """List the verb in ``synthformer --help``; its arguments are parsed by the benchmark itself."""
    p = sub.add_parser(
        NAME,
        add_help=False,
        help="regenerate the paper's Table 4 (params, FLOPs, steps/s vs the Transformer, memory) on this machine",
    )
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(handler=lambda args: run_argv(args.args), verbose=0, quiet=0, debug=False)


def run_argv(argv: Sequence[str]) -> int:
    """Run the benchmark with the arguments that followed ``synthformer bench``."""
    from synthformer.bench import main

    return main(list(argv), prog="synthformer bench")
