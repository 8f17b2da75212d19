"""The fused path's backends against each other and against V: forward+backward, module level, one interleaved run.

Each materialized kind runs with the fused path forced (``fast_path_settings(fused="always")``) under every backend
of its block work (``fast_path_settings(backend=...)``: "torch", "cpp", "compile"); V runs through SDPA as in
benchmarks/speed/attention.py, whose layer and step helpers this reuses. Every repeat times every (kind, backend) once,
round-robin, so background load hits them alike; medians after warm-up (which also builds the C++ kernel and
compiles the torch.compile graphs). Reported: ms, the ratio to V's median, and each backend's ratio to the torch
backend's time for the same kind (below 1: faster).

Usage (the numbers of the backend comparison in docs/benchmarks.md came from this):
    python benchmarks/speed/fused_backends.py --threads 1
    python benchmarks/speed/fused_backends.py --threads 1 --configs 256 --kinds D FD --repeats 5
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

import torch

from synthformer.attention import SynthesizerAttention
from synthformer.attention.fast import fused
from synthformer.attention.fast.settings import fast_path_settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import add_record_options, load, write_record  # noqa: E402 - benchmarks/records.py

from speed.attention import make_step, markdown  # noqa: E402

KINDS = ["D", "FD", "R+V", "D+V", "GLU"]
#: name -> (batch, length, causal): the module-level shapes of the fused path's goals
CONFIGS = {"256": (16, 256, False), "1024": (4, 1024, False), "1024-causal": (4, 1024, True)}


def _forced(step: Callable[[], None], backend: str) -> Callable[[], None]:
    """``step`` with the fused path forced and its block work on ``backend`` (forward and backward)."""

    def run() -> None:
        with fast_path_settings(fused="always", backend=backend):
            step()

    return run


def bench_config(args, name: str) -> list[dict]:
    batch, length, causal = CONFIGS[name]
    steps: dict[tuple[str, str], Callable[[], None]] = {}
    for kind in ["V", *args.kinds]:
        torch.manual_seed(0)
        layer = SynthesizerAttention(args.d_model, args.heads, length, kind=kind, causal=causal).train()
        x = torch.randn(batch, length, args.d_model, requires_grad=True)
        step = make_step(layer, x, True, nullcontext)
        for backend in ["sdpa"] if kind == "V" else args.backends:
            steps[(kind, backend)] = step if kind == "V" else _forced(step, backend)
    times: dict[tuple[str, str], list[float]] = {key: [] for key in steps}
    for r in range(args.warmup + args.repeats):
        for key, step in steps.items():
            t0 = time.perf_counter()
            step()
            if r >= args.warmup:
                times[key].append(time.perf_counter() - t0)
    med = {key: statistics.median(ts) for key, ts in times.items()}
    base = med[("V", "sdpa")]
    rows = []
    for (kind, backend), m in med.items():
        torch_time = med.get((kind, "torch"), m)
        row = {
            "config": name,
            "kind": kind,
            "backend": backend,
            "ms": m * 1e3,
            "ratio_to_V": m / base,
            "vs_torch": m / torch_time,
        }
        rows.append(row)
        print(
            f"{name:12s} {kind:5s} {backend:8s} {row['ms']:9.1f} ms  x{row['ratio_to_V']:.3f} of V  "
            f"x{row['vs_torch']:.3f} of the torch backend",
            flush=True,
        )
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    p.add_argument("--kinds", nargs="+", default=KINDS)
    p.add_argument("--backends", nargs="+", default=list(fused.BACKENDS), choices=list(fused.BACKENDS))
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's)")
    p.add_argument("--json", help="write the rows to this JSON file")
    add_record_options(p)
    args = p.parse_args()
    started = load()
    if args.threads:
        torch.set_num_threads(args.threads)
    machine = platform.processor() or platform.machine()
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads, {machine}")
    rows = []
    for name in args.configs:
        rows += bench_config(args, name)
    print(markdown(rows, ["config", "kind", "backend", "ms", "ratio_to_V", "vs_torch"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                       "rows": rows}, f, indent=1)
    write_record(args, rows, started)


if __name__ == "__main__":
    main()
