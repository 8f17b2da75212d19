"""Measure where the band-matrix convolution stops beating the unfold one.

Run ``python benchmarks/speed/conv_crossover.py`` from the repository root (about a minute on 2 cores; ``--help``
lists the options). For every kernel width K and both kernel kinds (LightConv's (H, K) kernel, DynamicConv's
(B, L, H, K) kernels) it times the convolution alone (the projections cost the same on both paths) for growing
L, in a training step (forward + backward) by default or forward only with ``--forward-only``, and logs the
crossover: the longest L at which the band formulation was faster (median over rounds of the band/unfold time
ratio below 1; the times logged are the best rounds).
Those numbers are what ``synthformer.mixers._conv._BAND_MAX_LEN_TRAIN`` / ``_BAND_MAX_LEN_INFER`` hold.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from synthformer.mixers import depthwise_conv_band, depthwise_conv_unfold

logger = logging.getLogger(__name__)

__all__ = ["measure_crossover", "time_pair"]

DEFAULT_LENGTHS = (8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


def time_pair(
    fns: Sequence[Callable[[Tensor, Tensor, int], Tensor]],
    u_ext: Tensor,
    weight: Tensor,
    n_heads: int,
    backward: bool,
    repeats: int,
) -> list[list[float]]:
    """Wall times (seconds) of each function in each of ``repeats`` rounds, after a warm-up round.

    The functions run alternately within each round, so a burst of load from other users of the machine tends
    to hit both; comparing them round by round (median of the per-round ratios) then resists that noise.
    """
    times: list[list[float]] = [[] for _ in fns]
    for i in range(repeats + 1):
        for j, fn in enumerate(fns):
            start = time.perf_counter()
            y = fn(u_ext, weight, n_heads)
            if backward:
                y.sum().backward()
            elapsed = time.perf_counter() - start
            if i:
                times[j].append(elapsed)
    return times


def measure_crossover(
    kernel_sizes: Sequence[int] = (3, 7, 15, 31),
    lengths: Sequence[int] = DEFAULT_LENGTHS,
    batch: int = 16,
    d_model: int = 512,
    n_heads: int = 8,
    backward: bool = True,
    repeats: int = 5,
) -> dict[tuple[str, int], int]:
    """Time both formulations and return ``{(kind, K): crossover L}``.

    ``kind`` is "LightConv" (one (H, K) kernel) or "DynamicConv" (a (B, L, H, K) kernel per position). Band
    "wins" at a length when the median over rounds of band time / unfold time is below 1. Lengths are scanned
    upwards and the series stops at the first two consecutive losses (band only gets worse with L: O(L^2)
    against O(L K)); the crossover is the last winning length before them, 0 if band never won first. A single
    noisy round on a shared machine therefore cannot move the crossover to a length far beyond the real one.
    """
    torch.manual_seed(0)
    result: dict[tuple[str, int], int] = {}
    for kind in ("LightConv", "DynamicConv"):
        for k in kernel_sizes:
            crossover, losses = 0, 0
            for length in lengths:
                u_ext = torch.randn(batch, length + k - 1, d_model, requires_grad=backward)
                shape = (n_heads, k) if kind == "LightConv" else (batch, length, n_heads, k)
                weight = torch.randn(shape).softmax(-1).requires_grad_(backward)
                t_unfold, t_band = time_pair(
                    (depthwise_conv_unfold, depthwise_conv_band), u_ext, weight, n_heads, backward, repeats
                )
                ratio = statistics.median(b / u for b, u in zip(t_band, t_unfold, strict=True))
                logger.info(
                    "%-11s K=%-2d L=%-4d unfold %8.2f ms  band %8.2f ms  band/unfold %.2f",
                    kind,
                    k,
                    length,
                    1e3 * min(t_unfold),
                    1e3 * min(t_band),
                    ratio,
                )
                if ratio < 1.0:
                    crossover, losses = length, 0
                else:
                    losses += 1
                    if losses == 2:
                        break
            result[(kind, k)] = crossover
    return result


def main(argv: Sequence[str] | None = None) -> dict[tuple[str, int], int]:
    """Command-line entry point; logs the timings and the crossover table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernel-sizes", type=int, nargs="+", default=[3, 7, 15, 31])
    parser.add_argument("--lengths", type=int, nargs="+", default=list(DEFAULT_LENGTHS))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--forward-only", action="store_true", help="time inference instead of a training step")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads before timing")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.threads:
        torch.set_num_threads(args.threads)
    logger.info(
        "B=%d d_model=%d H=%d, %s, %d threads, torch %s",
        args.batch,
        args.d_model,
        args.heads,
        "forward only" if args.forward_only else "forward + backward",
        torch.get_num_threads(),
        torch.__version__,
    )
    if args.forward_only:
        # No autograd graph: time what inference runs.
        with torch.no_grad():
            table = measure_crossover(
                args.kernel_sizes, args.lengths, args.batch, args.d_model, args.heads, False, args.repeats
            )
    else:
        table = measure_crossover(
            args.kernel_sizes, args.lengths, args.batch, args.d_model, args.heads, True, args.repeats
        )
    for (kind, k), length in table.items():
        logger.info("crossover %-11s K=%-2d band faster up to L=%d", kind, k, length)
    return table


if __name__ == "__main__":
    main()
