"""A/B timing of causal fused layers: a setting's old and new value, interleaved in one process.

For a shared machine where absolute times mean nothing: every repeat runs each kind's steps one after another
(bidirectional and causal, each with the setting's old value and with its new value), so background load hits
every variant alike, and only ratios of the medians are printed: ``new/old`` for causal and for bidirectional
layers (below 1: the change is faster) and ``bidir/causal`` under each value (above 1: causal training is faster
than bidirectional, a goal of docs/lra.md).

Usage (the A/B of ``causal_diagonal_mask``, the default):
    python benchmarks/speed/causal_ab.py --lengths 1024 --kinds D FD R+V --repeats 7
    python benchmarks/speed/causal_ab.py --setting causal_chunk --old 128 --new 256
"""

from __future__ import annotations

import argparse
import ast
import statistics

import torch

from synthformer.attention import SynthesizerAttention
from synthformer.bench.measure import layer_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024])
    parser.add_argument("--kinds", nargs="+", default=["D", "FD", "R+V"])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dropout", type=float, default=0.0,
                        help="attention dropout of every layer (LRA's configs: 0.1; on the CPU, SDPA with dropout "
                             "runs its math path)")
    parser.add_argument("--setting", default="causal_diagonal_mask", help="a FastPathSettings field")
    parser.add_argument("--old", default="False", help="its old value (a Python literal)")
    parser.add_argument("--new", default="True", help="its new value (a Python literal)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    old, new = {args.setting: ast.literal_eval(args.old)}, {args.setting: ast.literal_eval(args.new)}
    print(f"{args.setting}: old {args.old}, new {args.new}; fwd+bwd, B={args.batch}, {args.threads} thread(s), "
          f"attention dropout {args.dropout}")
    print("kind  L      new/old  bidir new/old  bidir/causal old  bidir/causal new")
    for length in args.lengths:
        torch.manual_seed(0)
        steps = {}
        for kind in args.kinds:
            x = torch.randn(args.batch, length, args.d_model, requires_grad=True)
            bidir = SynthesizerAttention(args.d_model, args.heads, length, kind=kind, causal=False,
                                         dropout=args.dropout).train()
            causal = SynthesizerAttention(args.d_model, args.heads, length, kind=kind, causal=True,
                                          dropout=args.dropout).train()
            steps[kind] = {
                "bidir_old": layer_step(bidir, x, old),
                "bidir_new": layer_step(bidir, x, new),
                "old": layer_step(causal, x, old),
                "new": layer_step(causal, x, new),
            }
        times = {kind: {name: [] for name in variants} for kind, variants in steps.items()}
        for repeat in range(args.repeats + 1):  # the first round warms up and is dropped
            for kind, variants in steps.items():
                for name, step in variants.items():
                    took = step()
                    if repeat:
                        times[kind][name].append(took)
        for kind, variants in times.items():
            med = {name: statistics.median(ts) for name, ts in variants.items()}
            print(
                f"{kind:5s} {length:<6d} {med['new'] / med['old']:7.3f}  {med['bidir_new'] / med['bidir_old']:13.3f}"
                f"  {med['bidir_old'] / med['old']:16.3f}  {med['bidir_new'] / med['new']:16.3f}"
            )


if __name__ == "__main__":
    main()
