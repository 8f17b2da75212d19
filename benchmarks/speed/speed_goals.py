"""The long-length speed and memory goals of the attention kinds, each holding or not on this machine's CPU.

Goals (``synthformer.bench.goals.speed_goals``): forward + backward of one attention layer (d_model 512, 8 heads,
fp32, bidirectional) at L=1024 and 2048, with attention dropout 0 and 0.1,

- D, FD, R+V, D+V and GLU within 10% of their FLOP-ratio limit (time / V's <= 1.10 x the FLOP ratio counted from
  the shapes: the time they would take at V's efficiency) and at most V's peak training memory;
- R and FR at most 0.55 of V's time.

V is ``scaled_dot_product_attention``: without dropout its fused CPU kernel, with dropout its math path (the CPU
kernel takes no dropout), so the two settings are two different references and both are reported.

The batch is 16 at L=1024 and 4 at L=2048 (``--batch L=B ...``), so a step of each length does the same L x L work
per head and the whole run fits a sitting on a 2-core CPU. Each time is the median of ``--repeats`` steps after
``--warmup``, taken round-robin over the kinds (load hits every kind alike); peak memory is measured once per kind
after the timing (``synthformer.bench.measure.peak_bytes``).

    python benchmarks/speed/speed_goals.py --record benchmarks/results/bench_speed_goals.jsonl  # prints every verdict
    python benchmarks/speed/speed_goals.py --lengths 256 --batch 256=2 --repeats 1 --warmup 0  # a smoke run

The record names the CPU (model, cores, torch's CPU capability: AVX2, AVX-512) so a table says where it holds,
and the length thresholds in force (the library's defaults, or this machine's from ``synthformer bench
--calibrate``, with the calibration file's name).
``benchmarks/docs_tables.py`` builds docs/benchmarks.md's table from the newest record.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from contextlib import nullcontext
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import add_record_options, load, write_record  # noqa: E402 - benchmarks/records.py

from speed.attention import make_step  # noqa: E402 - benchmarks/speed/attention.py's layer step, beside this script
from speed.bench_guard import batch_per_length  # noqa: E402 - the guard's --batch rule (L=B items), beside this script
from synthformer.attention import SynthesizerAttention  # noqa: E402
from synthformer.attention.fast.calibration import CALIBRATED_FIELDS, calibration_file, load_calibration  # noqa: E402
from synthformer.attention.fast.settings import DEFAULTS  # noqa: E402
from synthformer.bench.flops import flop_ratio  # noqa: E402
from synthformer.bench.goals import FLOP_LIMIT_KINDS, LIGHT_KINDS, speed_goals  # noqa: E402
from synthformer.bench.measure import peak_bytes, round_robin  # noqa: E402

KINDS = ["V", *LIGHT_KINDS, *FLOP_LIMIT_KINDS]


def measure(kinds: list[str], length: int, batch: int, dropout: float, args: argparse.Namespace) -> list[dict]:
    """Every kind at one (length, dropout): median step time, its ratio to V's, FLOP ratio, peak MiB."""
    steps = {}
    for kind in kinds:
        torch.manual_seed(0)
        layer = SynthesizerAttention(args.d_model, args.heads, length, kind=kind, dropout=dropout).train()
        x = torch.randn(batch, length, args.d_model, requires_grad=True)
        steps[kind] = make_step(layer, x, True, nullcontext)
    samples = round_robin(list(steps.values()), args.warmup, args.repeats)  # seconds, per kind in order
    times = dict(zip(steps, samples, strict=True))
    peaks = {kind: peak_bytes(step) / 2**20 for kind, step in steps.items()} if args.memory else {}
    base = statistics.median(times["V"])
    rows = []
    for kind in steps:
        median = statistics.median(times[kind])
        rows.append({"kind": kind, "L": length, "batch": batch, "dropout": dropout, "ms": median * 1e3,
                     "times_ms": [t * 1e3 for t in times[kind]], "ratio_to_V": median / base,
                     "flop_ratio": flop_ratio(kind, batch, length, args.d_model, args.heads),
                     "peak_MiB": peaks.get(kind, float("nan"))})
        r = rows[-1]
        print(f"L={length:5d} B={batch:<3d} dropout {dropout:<4g} {kind:5s} {r['ms']:9.1f} ms  x{r['ratio_to_V']:.2f} "
              f"of V (FLOP ratio {r['flop_ratio']:.2f})  peak {r['peak_MiB']:8.1f} MiB", flush=True)
    return rows


def verdict_lines(rows: list[dict]) -> list[str]:
    """One printed line per goal."""
    lines = []
    for g in speed_goals(rows):
        head = f"{g['kind']:5s} L={g['L']:<5d} dropout {g['dropout']:<4g}"
        time_part = (f"time {g['ratio_to_V']:.2f} of V <= {g['time_goal']:.2f}: "
                     f"{'holds' if g['time_holds'] else 'does not hold'}")
        memory_part = ("" if g["memory_holds"] is None else
                       f"; peak {g['peak_to_V']:.2f}x V's <= 1: {'holds' if g['memory_holds'] else 'does not hold'}")
        lines.append(f"goal {head} {time_part}{memory_part}")
    return lines


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kinds", nargs="+", default=KINDS, help=f"default: {' '.join(KINDS)} (V is always measured)")
    p.add_argument("--lengths", nargs="+", type=int, default=[1024, 2048])
    p.add_argument("--batch", nargs="+", default=["1024=16", "2048=4"], metavar="B | L=B")
    p.add_argument("--dropout", nargs="+", type=float, default=[0.0, 0.1])
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--no-memory", dest="memory", action="store_false")
    add_record_options(p)
    args = p.parse_args(argv)
    try:
        batches = batch_per_length(args.batch, args.lengths)
    except ValueError as err:
        p.error(str(err))
    kinds = ["V", *[k for k in dict.fromkeys(args.kinds) if k != "V"]]
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads, CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}")
    started = load()
    rows = [row for length in args.lengths for dropout in args.dropout
            for row in measure(kinds, length, batches[length], dropout, args)]
    print("\n".join(verdict_lines(rows)))
    write_record(args, rows, started, cpu_capability=torch.backends.cpu.get_cpu_capability(),
                 thresholds={name: getattr(DEFAULTS, name) for name in CALIBRATED_FIELDS},
                 calibration=str(calibration_file()) if load_calibration() else None)
    return rows


if __name__ == "__main__":
    main()
