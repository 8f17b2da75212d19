"""The Triton kernels of the materialized kinds against SDPA (FlashAttention) and the PyTorch path, on one GPU.

Forward + backward of a ``SynthesizerAttention`` layer (value and output projections included), B=16, d_model
512, 8 heads, fp32 and bf16 autocast; every kind twice, through the Triton kernel (``triton_kernels``, taken on
CUDA when ``triton`` is installed) and through the PyTorch path (the kernel switched off); V through SDPA, which
on CUDA is FlashAttention or memory-efficient attention. Timed with CUDA events, every (kind, path) once per
repeat, round-robin; medians after warm-up (the first warm-up round drops a step that runs out of memory, and a
Triton path the kernels do not serve). Prints the device name, each time and its ratio to V's, and the peak memory
of one step. docs/benchmarks.md asks for these numbers whenever a GPU is at hand (``docs/benchmarks.md``);
``benchmarks/speed/gpu_suite.py`` runs this benchmark as one part of a GPU run that records itself.

    python benchmarks/speed/gpu_attention.py --json gpu.json
    python benchmarks/speed/gpu_attention.py --lengths 1024 4096 --kinds V D R+V --dtype bf16
    python benchmarks/speed/gpu_attention.py --device cpu --lengths 64 --batch 2  # a smoke run without a GPU
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from contextlib import nullcontext

import torch

from synthformer.attention import SynthesizerAttention, paths
from synthformer.attention.fast import triton_kernels
from synthformer.attention.fast.settings import fast_path_settings

KINDS = ["V", "R", "D", "FD", "R+V", "D+V", "GLU", "Bottleneck"]


def _timer(device: torch.device):
    """A function that runs ``step`` once and returns its seconds (CUDA events on a GPU)."""
    if device.type != "cuda":
        def run(step) -> float:
            t0 = time.perf_counter()
            step()
            return time.perf_counter() - t0
        return run

    def run_cuda(step) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 1000.0
    return run_cuda


def _step(layer: torch.nn.Module, x: torch.Tensor, dtype: str, triton: bool):
    autocast = (lambda: torch.autocast(x.device.type, dtype=torch.bfloat16)) if dtype == "bf16" else nullcontext
    off = nullcontext if triton else (lambda: fast_path_settings(triton="never"))

    def step() -> None:
        with off(), autocast():
            y = layer(x)
        y.float().sum().backward()
        layer.zero_grad(set_to_none=True)
        x.grad = None
    return step


def _oom(err: BaseException) -> bool:
    """Whether ``err`` is an allocation failure (a GPU's ``OutOfMemoryError`` or the CPU allocator's message)."""
    return isinstance(err, (torch.OutOfMemoryError, MemoryError)) or "out of memory" in str(err).lower()


def _free(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()  # what a failed step held, so the next kind starts from the same free memory


def _first_round(steps: dict, device: torch.device, rows: list[dict], base: dict) -> None:
    """Run every step once (the first warm-up round) and drop what cannot be timed: a step that runs out of memory
    (its row says so) and a ``triton`` path that the kernels did not serve (R, Fix and FR have no materialized
    logits: that path would time the PyTorch path twice)."""
    for key in list(steps):
        paths.reset_path_calls()
        try:
            steps[key]()
        except (RuntimeError, MemoryError) as err:
            if not _oom(err):
                raise
            del steps[key]
            _free(device)
            rows.append({**base, "kind": key[0], "path": key[1], "status": "out of memory", "ms": float("nan"),
                         "ratio_to_V": float("nan"), "peak_MiB": float("nan")})
            print(f"L={base['L']:5d} {key[0]:10s} {key[1]:8s} out of memory", flush=True)
            continue
        if key[1] == "triton" and not paths.path_calls()["triton"]:
            del steps[key]


def bench(args) -> list[dict]:
    """Time every kind at every length of ``args`` (the options of :func:`main`); one row per (length, kind, path)
    with ``status`` ``measured`` or ``out of memory``."""
    device = torch.device(args.device)
    timer = _timer(device)
    rows = []
    for length in args.lengths:
        steps = {}
        for kind in args.kinds:
            torch.manual_seed(0)
            layer = SynthesizerAttention(args.d_model, args.heads, length, kind=kind, causal=args.causal).to(device)
            x = torch.randn(args.batch, length, args.d_model, device=device, requires_grad=True)
            paths = ["sdpa"] if kind == "V" else (["triton", "pytorch"] if device.type == "cuda" else ["pytorch"])
            for path in paths:
                steps[(kind, path)] = _step(layer.train(), x, args.dtype, path != "pytorch")
        base = {"L": length, "dtype": args.dtype, "causal": args.causal}
        _first_round(steps, device, rows, base)
        times: dict = {key: [] for key in steps}
        for r in range(1, max(1, args.warmup) + args.repeats):
            for key, step in steps.items():
                seconds = timer(step)
                if r >= max(1, args.warmup):
                    times[key].append(seconds)
        v_ms = 1000 * statistics.median(times[("V", "sdpa")]) if times.get(("V", "sdpa")) else float("nan")
        for (kind, path), ts in times.items():
            peak = float("nan")
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
                paths.reset_path_calls()
                steps[(kind, path)]()
                torch.cuda.synchronize()
                peak = torch.cuda.max_memory_allocated(device) / 2**20
            ms = 1000 * statistics.median(ts)
            rows.append({**base, "kind": kind, "path": path, "status": "measured", "ms": ms, "ratio_to_V": ms / v_ms,
                         "peak_MiB": peak})
            print(f"L={length:5d} {kind:10s} {path:8s} {ms:9.2f} ms  x{ms / v_ms:.2f} of V  "
                  f"peak {peak:8.1f} MiB", flush=True)
        del steps
        _free(device)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu for a smoke run")
    p.add_argument("--kinds", nargs="+", default=KINDS)
    p.add_argument("--lengths", nargs="+", type=int, default=[256, 1024, 4096])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--json", help="write the rows (and the device name) to this JSON file")
    args = p.parse_args(argv)
    if "V" not in args.kinds:
        args.kinds = ["V", *args.kinds]  # the baseline of every ratio
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device here: this benchmark times the GPU kernels (use --device cpu for a smoke run)",
              file=sys.stderr)
        return 2
    name = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "cpu"
    print(f"# {name}; torch {torch.__version__}; triton kernels used: "
          f"{triton_kernels.available(torch.device(args.device))}", flush=True)
    rows = bench(args)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"device": name, "torch": torch.__version__, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
