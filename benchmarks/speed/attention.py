"""Module-level speed and memory of every attention kind against vanilla attention, measured in one run.

Each kind is a ``SynthesizerAttention`` layer (value and output projections included); ``V`` runs through
``torch.nn.functional.scaled_dot_product_attention``. Times are medians over repeats after warm-up, taken
round-robin over the kinds (so background load hits every kind alike), and reported as ratios to ``V`` from the
same run. Peak memory is the high-water mark of tensor allocations during one step, from the profiler's
allocation events (CPU torch has no ``max_memory_allocated``; see ``synthformer.bench.measure.peak_bytes``).

Usage (the numbers in docs/benchmarks.md came from these):
    python benchmarks/speed/attention.py --lengths 128 256 512 1024
    python benchmarks/speed/attention.py --lengths 256 --dtype bf16
    python benchmarks/speed/attention.py --decode --contexts 128 256 512 1024
    python benchmarks/speed/attention.py --fr-memory
    python benchmarks/speed/attention.py --goals  # every run the fused path's goals need, then each goal: holds or not

Each row prints the kind's FLOP ratio to V (multiply-adds counted from the shapes by
``synthformer.bench.flops``: the time ratio at V's efficiency) and its efficiency (FLOP ratio / time ratio).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import torch

from synthformer.attention import SynthesizerAttention
from synthformer.attention.fast.settings import fast_path_settings
from synthformer.bench.flops import efficiency, flop_ratio
from synthformer.bench.goals import module_goals
from synthformer.bench.measure import peak_bytes

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import add_record_options, load, write_record  # noqa: E402 - benchmarks/records.py

DEFAULT_KINDS = ["V", "R", "Fix", "FR", "D", "FD", "R+V", "D+V", "FR+V", "R+D", "Bottleneck", "GLU", "Conv"]


def make_step(layer: torch.nn.Module, x: torch.Tensor, backward: bool, autocast):
    def step():
        with autocast():
            y = layer(x)
        if backward:
            y.float().sum().backward()
            layer.zero_grad(set_to_none=True)
            x.grad = None

    return step


def bench_module(args) -> list[dict]:
    rows = []
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if args.dtype == "bf16" else nullcontext
    for length in args.lengths:
        for mode in args.modes:
            backward = mode == "fwd+bwd"
            steps = {}
            for kind in args.kinds:
                torch.manual_seed(0)
                layer = SynthesizerAttention(args.d_model, args.heads, length, kind=kind, causal=args.causal)
                layer.train(backward)
                x = torch.randn(args.batch, length, args.d_model, requires_grad=backward)
                steps[kind] = make_step(layer, x, backward, autocast)
            grad_ctx = nullcontext if backward else torch.no_grad
            times = {k: [] for k in steps}
            with grad_ctx():
                for _ in range(args.warmup):
                    for step in steps.values():
                        step()
                for _ in range(args.repeats):
                    for kind, step in steps.items():
                        t0 = time.perf_counter()
                        step()
                        times[kind].append(time.perf_counter() - t0)
                peaks = {k: peak_bytes(s) for k, s in steps.items()} if args.memory else {}
            base = statistics.median(times["V"])
            for kind in steps:
                med = statistics.median(times[kind])
                flops = flop_ratio(kind, args.batch, length, args.d_model, args.heads)
                row = {
                    "L": length,
                    "mode": mode,
                    "kind": kind,
                    "causal": args.causal,
                    "dtype": args.dtype,
                    "ms": med * 1e3,
                    "ratio_to_V": med / base,
                    "speedup_vs_V": base / med,
                    "flop_ratio": flops,
                    "efficiency": efficiency(flops, med / base),
                    "peak_MiB": peaks.get(kind, float("nan")) / 2**20,
                }
                rows.append(row)
                print(
                    f"L={length:5d} {mode:8s} {kind:11s} {row['ms']:9.2f} ms  x{row['ratio_to_V']:.2f} of V "
                    f"(FLOP ratio {flops:.2f}, efficiency {row['efficiency']:.2f})  peak {row['peak_MiB']:8.1f} MiB",
                    flush=True,
                )
    return rows


def bench_decode(args) -> list[dict]:
    rows = []
    for context in args.contexts:
        times, sizes = {}, {}
        layers = {}
        for kind in args.decode_kinds:
            torch.manual_seed(0)
            layer = SynthesizerAttention(args.d_model, args.heads, context + 1, kind=kind, causal=True).eval()
            cache = layer.init_cache(args.decode_batch)
            with torch.no_grad():
                layer(torch.randn(args.decode_batch, context, args.d_model), cache=cache)  # prefill
            layers[kind] = (layer, cache, torch.randn(args.decode_batch, 1, args.d_model))
            times[kind] = []
            # bytes of the cache actually filled at this context (the preallocated buffer is max_len long)
            sizes[kind] = cache.nbytes() * (context + 1) // layer.max_len
        with torch.no_grad():
            for r in range(args.warmup + args.repeats):
                for kind, (layer, cache, x) in layers.items():
                    cache.length = context  # always time the step at exactly this context
                    t0 = time.perf_counter()
                    layer(x, cache=cache)
                    if r >= args.warmup:
                        times[kind].append(time.perf_counter() - t0)
        base = statistics.median(times["V"])
        for kind in layers:
            med = statistics.median(times[kind])
            row = {
                "context": context,
                "kind": kind,
                "us_per_token": med * 1e6,
                "ratio_to_V": med / base,
                "cache_MiB": sizes[kind] / 2**20,
                "cache_ratio_to_V": sizes[kind] / sizes["V"],
            }
            rows.append(row)
            print(
                f"context={context:5d} {kind:6s} {row['us_per_token']:9.1f} us/token  x{row['ratio_to_V']:.2f} of V  "
                f"cache {row['cache_MiB']:.2f} MiB (x{row['cache_ratio_to_V']:.2f})",
                flush=True,
            )
    return rows


def bench_fr_memory(args) -> list[dict]:
    """FR at L=4096, B=1: the SDPA path (no L x L matrix) against the materialized path, forward+backward."""
    length = 4096
    rows = []
    for fast in (True, False):
        torch.manual_seed(0)
        layer = SynthesizerAttention(args.d_model, args.heads, length, kind="FR", causal=args.causal)
        layer.use_fast_paths = fast
        x = torch.randn(1, length, args.d_model, requires_grad=True)
        step = make_step(layer, x, True, nullcontext)
        step()
        t0 = time.perf_counter()
        step()
        elapsed = time.perf_counter() - t0
        peak = peak_bytes(step)
        rows.append({"path": "sdpa" if fast else "materialized", "peak_MiB": peak / 2**20, "ms": elapsed * 1e3})
        print(
            f"FR L=4096 B=1 {'fast (SDPA)' if fast else 'materialized'}: peak {peak / 2**20:.1f} MiB, "
            f"{elapsed * 1e3:.0f} ms",
            flush=True,
        )
    print(f"ratio fast/materialized: {rows[0]['peak_MiB'] / rows[1]['peak_MiB']:.3f}")
    return rows


def bench_goals(args) -> list[dict]:
    """Every run the fused path's goals need: fp32 bidirectional at L=256 and 1024 with memory, causal at 1024, bf16 at
    256 (forward+backward)."""
    goal_kinds = ["V", "D", "FD", "R+V", "D+V", "GLU"]
    runs = [
        dict(lengths=[256, 1024], causal=False, dtype="fp32", kinds=goal_kinds, memory=True),
        dict(lengths=[1024], causal=True, dtype="fp32", kinds=["V", "D", "FD", "R+V"], memory=False),
        dict(lengths=[256], causal=False, dtype="bf16", kinds=goal_kinds, memory=False),
    ]
    rows = []
    for run in runs:
        rows += bench_module(argparse.Namespace(**{**vars(args), **run, "modes": ["fwd+bwd"]}))
    return rows


def markdown(rows: list[dict], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        cells = [f"{r[c]:.2f}" if isinstance(r[c], float) else str(r[c]) for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kinds", nargs="+", default=DEFAULT_KINDS)
    p.add_argument("--lengths", nargs="+", type=int, default=[128, 256, 512, 1024])
    p.add_argument("--modes", nargs="+", default=["fwd", "fwd+bwd"], choices=["fwd", "fwd+bwd"])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--no-memory", dest="memory", action="store_false")
    p.add_argument("--decode", action="store_true", help="run the decoding benchmark instead")
    p.add_argument("--contexts", nargs="+", type=int, default=[128, 256, 512, 1024])
    p.add_argument("--decode-kinds", nargs="+", default=["V", "R", "D", "FR", "R+V", "D+V"])
    p.add_argument("--decode-batch", type=int, default=16)
    p.add_argument("--fr-memory", action="store_true", help="run the FR L=4096 memory comparison instead")
    p.add_argument("--goals", action="store_true", help="run what the fused path's goals need and print each verdict")
    p.add_argument(
        "--fused",
        choices=["auto", "always", "never"],
        default="auto",
        help="the materialized kinds' branch: fused (probabilities recomputed), never (stored), auto (by length)",
    )
    p.add_argument("--json", help="write the rows to this JSON file")
    add_record_options(p)
    args = p.parse_args()
    if args.decode:
        args.repeats = max(args.repeats, 50)
    print(
        f"# torch {torch.__version__}, {torch.get_num_threads()} threads, {platform.processor() or platform.machine()}"
        f", fused {args.fused}"
    )
    started = load()
    with fast_path_settings(fused=args.fused):
        rows = run(args)
    write_record(args, rows, started)


def run(args) -> list[dict]:
    """The measurement ``args`` asks for, printed (and written to ``--json``); its rows."""
    if args.fr_memory:
        rows = bench_fr_memory(args)
        print(markdown(rows, ["path", "peak_MiB", "ms"]))
    elif args.decode:
        rows = bench_decode(args)
        print(markdown(rows, ["context", "kind", "us_per_token", "ratio_to_V", "cache_MiB", "cache_ratio_to_V"]))
    else:
        rows = bench_goals(args) if args.goals else bench_module(args)
        columns = ["L", "mode", "kind", "causal", "dtype", "ms", "ratio_to_V", "flop_ratio", "efficiency", "peak_MiB"]
        print(markdown(rows, columns))
        if (args.batch, args.d_model, args.heads) != (16, 512, 8):
            print("# note: the goals are set for B=16, d_model 512, 8 heads; this run used other shapes")
        print("\n".join(module_goals(rows)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                       "rows": rows}, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
