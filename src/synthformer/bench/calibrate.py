"""``synthformer bench --calibrate``: the fast-path length thresholds measured on this machine.

For each threshold of :data:`THRESHOLDS` the two paths it chooses between are timed (one attention layer, forward +
backward, d_model 512, 8 heads, about ``--tokens`` tokens per step) at lengths below its default, and their peak
training memory measured: the path that stores an L x L tensor (or, once fused, blocks of one) and the "linear"
one (SDPA or the fused path). Where the linear path took less time in total over the measured kinds at a length
and at every longer one measured, and no kind's peak memory was higher on it, the threshold moves down to that
length; otherwise it keeps its default. It never moves up. Memory is measured, not assumed: on the development
machine SDPA with zero-padded feature widths took less time than the fused blocks at 1K for D but more memory, so
a rule on time alone would have raised the peaks. The result is stored per machine in the calibration file and
becomes :data:`synthformer.attention.fast.DEFAULTS` at the next import.

    synthformer bench --calibrate                  # about 3 minutes on a 2-core CPU; stored in the calibration file
    synthformer bench --calibrate --no-save        # measure and print only
    SYNTHFORMER_CALIBRATION=off synthformer train ...   # a run with the library's defaults, whatever is stored
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from synthformer.attention import SynthesizerAttention
from synthformer.attention.fast import DEFAULTS, FastPathSettings, calibration_file, save_calibration
from synthformer.bench.measure import layer_step, peak_bytes

FLAG = "--calibrate"


@dataclass(frozen=True)
class Threshold:
    """One length threshold and how to time its two paths.

    Attributes:
        field: the :class:`FastPathSettings` field.
        bound: "min" (the linear path from the threshold on) or "max" (the stored path up to it, the linear path
            beyond).
        kinds, dropouts: what is timed; the totals over them decide.
        lengths: the lengths timed, all below the default's reach (a "min" default above them, a "max" default at
            or above them).
        stored, linear: the settings that force each path.
    """

    field: str
    bound: str
    kinds: tuple[str, ...]
    dropouts: tuple[float, ...]
    lengths: tuple[int, ...]
    stored: dict[str, Any]
    linear: dict[str, Any]


THRESHOLDS = (
    # stored-probability blocks below it, the fused path (probabilities recomputed) from it
    Threshold("fuse_min_keys", "min", ("FD", "R+V"), (0.0, 0.1), (256, 512), {"fused": "never"}, {"fused": "always"}),
    # D-like kinds: materialized blocks up to it, SDPA with padded widths beyond (without dropout: with dropout on
    # the CPU the blocks always serve, since SDPA would run its math path)
    Threshold("features_materialize_max_len", "max", ("D", "D+V", "GLU"), (0.0,), (512, 1024),
              {"features": "blocks"}, {"features": "sdpa"}),
    # FR materialized below it, SDPA from it (no dropout, as above)
    Threshold("fr_sdpa_min_len", "min", ("FR",), (0.0,), (512, 1024), {"fr_sdpa_min_len": 1 << 30},
              {"fr_sdpa_min_len": 0}),
)


def choose(threshold: Threshold, linear_wins: dict[int, bool], default: int) -> int:
    """The threshold's new value from whether the linear path won at each measured length: the shortest length
    from which it won at every longer measured length ("min": that length; "max": one below it, so that length
    takes the linear path), or ``default`` when it did not win at the longest one. Never above ``default``."""
    chosen = default
    for length in sorted(linear_wins, reverse=True):
        if not linear_wins[length]:
            break
        chosen = length if threshold.bound == "min" else length - 1
    return min(chosen, default)


def time_paths(threshold: Threshold, length: int, d_model: int, heads: int, tokens: int, warmup: int,
               repeats: int) -> list[dict[str, Any]]:
    """Each kind and dropout of ``threshold`` at ``length``: median ms of the stored and the linear path, timed in
    alternation (B = tokens // length, at least 1)."""
    rows = []
    batch = max(1, tokens // length)
    for kind in threshold.kinds:
        for dropout in threshold.dropouts:
            torch.manual_seed(0)
            layer = SynthesizerAttention(d_model, heads, length, kind=kind, dropout=dropout).train()
            x = torch.randn(batch, length, d_model, requires_grad=True)
            steps = {"stored": layer_step(layer, x, threshold.stored), "linear": layer_step(layer, x, threshold.linear)}
            times: dict[str, list[float]] = {"stored": [], "linear": []}
            for r in range(warmup + repeats):
                for name in (("stored", "linear") if r % 2 == 0 else ("linear", "stored")):
                    elapsed = steps[name]()
                    if r >= warmup:
                        times[name].append(elapsed)
            peaks = {name: peak_bytes(step) / 2**20 for name, step in steps.items()}
            rows.append({"field": threshold.field, "L": length, "batch": batch, "kind": kind, "dropout": dropout,
                         "stored_ms": 1e3 * statistics.median(times["stored"]),
                         "linear_ms": 1e3 * statistics.median(times["linear"]),
                         "stored_MiB": peaks["stored"], "linear_MiB": peaks["linear"]})
    return rows


def calibrate(thresholds: Sequence[Threshold] = THRESHOLDS, d_model: int = 512, heads: int = 8, tokens: int = 8192,
              warmup: int = 1, repeats: int = 3, defaults: FastPathSettings = DEFAULTS,
              report: Callable[[str], None] = lambda line: None) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Time every threshold's paths and choose its value; returns (the chosen values, the measured rows)."""
    chosen: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    for threshold in thresholds:
        wins = {}
        for length in threshold.lengths:
            measured = time_paths(threshold, length, d_model, heads, tokens, warmup, repeats)
            rows += measured
            linear, stored = sum(r["linear_ms"] for r in measured), sum(r["stored_ms"] for r in measured)
            memory = [r["linear_MiB"] / r["stored_MiB"] for r in measured]
            wins[length] = linear < stored and max(memory) <= 1.0
            report(f"{threshold.field}: L={length} linear path {linear / stored:.2f} of the stored path's time, "
                   f"peak memory up to {max(memory):.2f} of its ({', '.join(threshold.kinds)})")
        default = getattr(FastPathSettings(), threshold.field)
        chosen[threshold.field] = choose(threshold, wins, default)
        report(f"{threshold.field}: {chosen[threshold.field]} (library default {default}, in force now "
               f"{getattr(defaults, threshold.field)})")
    return chosen, rows


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, epilog="Stored in " + str(calibration_file() or "(calibration off)"),
        description="Measure this machine's fast-path length thresholds (the lengths from which the paths that keep "
                    "no L x L tensor take over) and store them as the defaults of later runs.")
    p.add_argument("--file", type=Path, default=None, help="the calibration file (default: the one in use)")
    p.add_argument("--no-save", dest="save", action="store_false", help="measure and print only")
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--tokens", type=int, default=8192, help="tokens per timed step (batch = tokens // length)")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    return p


def _write(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def calibrate_main(argv: Sequence[str], prog: str) -> int:
    """The command line of ``synthformer bench --calibrate``."""
    parser = build_parser(prog)
    args = parser.parse_args(list(argv))
    for name in ("d_model", "heads", "tokens", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.d_model % args.heads:
        parser.error(f"--d-model {args.d_model} is not divisible by --heads {args.heads}")
    chosen, rows = calibrate(d_model=args.d_model, heads=args.heads, tokens=args.tokens, warmup=args.warmup,
                             repeats=args.repeats, report=_write)
    if args.save:
        path = save_calibration(chosen, rows, args.file)
        _write(f"stored in {path}: the defaults of every later run on this machine "
               "(SYNTHFORMER_CALIBRATION=off ignores it)")
    return 0


if __name__ == "__main__":
    sys.exit(calibrate_main(sys.argv[1:], "python -m synthformer.bench.calibrate"))
