"""One GPU run that records itself: correctness of the compiled kernels, then the timings, each written down the
moment it is done.

On one GPU, within a time budget (default 8 minutes), in this order:

1. ``correctness``: ``tests/attention/test_triton_gpu.py`` (the compiled Triton kernels against the PyTorch path,
   every materialized kind, bidirectional and causal, fp32 and bf16), run by pytest; one entry with each case's
   outcome and each failure's message.
2. ``attention-fp32``, ``attention-bf16``: every kind against SDPA (FlashAttention) at L=256, 1024, 2048 and 4096,
   through ``benchmarks/speed/gpu_attention.py`` (B=16, d_model 512, 8 heads, forward + backward); one entry per length.
3. ``lra-table2``: LRA's Table 2 (``synthformer.bench.lra``) at 1K-4K with LRA's batch of 32; one entry per length.
4. ``table4-fp32``, ``table4-bf16``: the paper's Table 4 (``synthformer bench --preset lm-base``); one entry each.

Each piece but the first runs in a process of its own (a CUDA error or a hang ends that piece, not the run) and is
killed when the budget is spent; no piece starts with less than a minute left, and a piece that loops over lengths
starts a length only when the last one's time, scaled by the square of the lengths, fits in what is left. Every
entry is appended and synced to ``OUT/gpu_*.jsonl`` as soon as it exists, so a crash or a time-out keeps what was
done; ``OUT/gpu_suite.jsonl`` says how each piece ended. Every entry names the machine and the GPU.

    python benchmarks/speed/gpu_suite.py --out $OUT            # on the GPU machine (8 minutes at most)
    python benchmarks/speed/gpu_suite.py --collect $OUT        # here: append the run's entries to benchmarks/results/
    python benchmarks/speed/gpu_suite.py --out /tmp/smoke --smoke  # on a CPU, tiny shapes, seconds (what CI runs)

Where the GPU machine's copy of the tree has no git history, name the commit: ``--commit abc1234``. docs/benchmarks.md's
GPU section is built from the collected records by ``doc_tables/gpu.py``.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from argparse import Namespace
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, append, metadata, read_entries  # noqa: E402 - benchmarks/records.py

SRC = ROOT / "src"
if str(SRC) not in sys.path:
    sys.path.insert(1, str(SRC))  # a copy of the tree on a GPU machine, synthformer not installed there

PIECES = ["correctness", "attention-fp32", "attention-bf16", "lra-table2", "table4-fp32", "table4-bf16"]
STATUS = "gpu_suite"
#: the suite's record files (``OUT/NAME.jsonl``, collected into benchmarks/results/)
FILES = ["gpu_correctness", "gpu_attention", "gpu_lra_table2", "gpu_table4", STATUS]
GPU_TESTS = ["tests/attention/test_triton_gpu.py"]
BUDGET_S, MIN_START_S = 480.0, 60.0
#: the correctness piece's own limit: the first compile of every kernel variant can take minutes, and a hang there
#: must leave time for the timings
CORRECTNESS_MAX_S = 180.0
#: every kind of the module tables (benchmarks/speed/attention.py's DEFAULT_KINDS)
KINDS = ["V", "R", "Fix", "FR", "D", "FD", "R+V", "D+V", "FR+V", "R+D", "Bottleneck", "GLU", "Conv"]
SHAPES: dict[str, dict[str, Any]] = {
    "attention": {"kinds": KINDS, "lengths": [256, 1024, 2048, 4096], "batch": 16, "d_model": 512, "heads": 8,
                  "repeats": 10, "warmup": 2},
    "lra": {"kinds": None, "lengths": [1024, 2048, 3072, 4096], "batch_size": 32, "repeats": 3, "warmup": 1,
            "memory": True, "overrides": None},
    "table4": {"rows": None, "batch_size": 8, "seq_len": None, "vocab_size": 8000, "steps": 2, "warmup": 2,
               "repeats": 5, "memory": True, "overrides": None},
}
SMOKE: dict[str, dict[str, Any]] = {
    "attention": {"kinds": ["V", "R", "D"], "lengths": [16, 32], "batch": 2, "d_model": 16, "heads": 2,
                  "repeats": 1, "warmup": 1},
    "lra": {"kinds": ["V", "R"], "lengths": [16], "batch_size": 2, "repeats": 1, "warmup": 0, "memory": False,
            "overrides": {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32}},
    "table4": {"rows": ["V", "R"], "batch_size": 2, "seq_len": 16, "vocab_size": 64, "steps": 1, "warmup": 0,
               "repeats": 1, "memory": False, "overrides": {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32}},
}


class Suite:
    """What every piece shares: where records go, the shapes, the deadline, and the metadata of every entry."""

    def __init__(self, out: Path, smoke: bool, deadline: float, run: str, command: str) -> None:
        import torch

        self.out, self.smoke, self.deadline, self.run, self.command = out, smoke, deadline, run, command
        self.device = "cpu" if smoke else "cuda"
        self.shapes = SMOKE if smoke else SHAPES
        self.gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"

    def meta(self) -> dict[str, Any]:
        """The fields every entry carries: the records' metadata, the GPU, the run and the versions."""
        import torch

        try:
            import triton
            triton_version = triton.__version__
        except ImportError:
            triton_version = None
        return {**metadata(self.command, torch.get_num_threads(), False), "gpu": self.gpu, "device": self.device,
                "suite_run": self.run, "smoke": self.smoke, "cuda": torch.version.cuda, "triton": triton_version}

    def write(self, name: str, entry: dict[str, Any]) -> None:
        append(self.out / f"{name}.jsonl", {"table": name, **entry, **self.meta()})
        print(f"# recorded in {self.out / name}.jsonl: {entry['row']}", flush=True)

    def lengths(self, lengths: list[int], measure: Callable[[int], None], name: str) -> None:
        """``measure(L)`` for each length while the budget allows: a length starts only when the last one's time
        times (this length / the last)^2 fits in what is left; the lengths not started get a ``skipped`` entry."""
        last: tuple[int, float] | None = None
        for i, length in enumerate(lengths):
            left = self.deadline - time.time()
            if last is not None and last[1] * (length / last[0]) ** 2 > left:
                self.write(name, {"row": f"skipped {lengths[i:]}", "status": "skipped: budget",
                                  "reason": f"{left:.0f} s left, the last length took {last[1]:.0f} s"})
                return
            start = time.time()
            measure(length)
            last = (length, time.time() - start)


def attention(suite: Suite, dtype: str) -> None:
    from speed import gpu_attention  # the sibling script

    shape = suite.shapes["attention"]

    def measure(length: int) -> None:
        args = Namespace(device=suite.device, kinds=shape["kinds"], lengths=[length], batch=shape["batch"],
                         d_model=shape["d_model"], heads=shape["heads"], dtype=dtype, causal=False,
                         repeats=shape["repeats"], warmup=shape["warmup"])
        rows = gpu_attention.bench(args)
        suite.write("gpu_attention", {"row": f"{dtype} L={length}", "dtype": dtype, "L": length, "rows": rows,
                                      **{k: v for k, v in shape.items() if k != "lengths"}})

    suite.lengths(shape["lengths"], measure, "gpu_attention")


def lra_table2(suite: Suite) -> None:
    from synthformer.bench.lra import run_lra_table2

    shape = suite.shapes["lra"]

    def measure(length: int) -> None:
        rows = run_lra_table2(kinds=shape["kinds"], lengths=[length], batch_size=shape["batch_size"], causal="none",
                              warmup=shape["warmup"], repeats=shape["repeats"], overrides=shape["overrides"],
                              memory=shape["memory"], memory_guard=not suite.smoke, device=suite.device)
        suite.write("gpu_lra_table2", {"row": f"L={length}", "L": length, "rows": rows})

    suite.lengths(shape["lengths"], measure, "gpu_lra_table2")


def table4(suite: Suite, dtype: str) -> None:
    from synthformer.bench.table import run_table

    shape = suite.shapes["table4"]
    rows = run_table(preset="lm-base", dtype=dtype, device=suite.device, **shape)
    suite.write("gpu_table4", {"row": dtype, "dtype": dtype, "preset": "lm-base", "rows": rows})


TIMED: dict[str, Callable[[Suite], None]] = {
    "attention-fp32": lambda s: attention(s, "fp32"),
    "attention-bf16": lambda s: attention(s, "bf16"),
    "lra-table2": lra_table2,
    "table4-fp32": lambda s: table4(s, "fp32"),
    "table4-bf16": lambda s: table4(s, "bf16"),
}

OUTCOME = re.compile(r"::(?P<test>\w+)\[(?P<id>[^\]]+)\] (?P<outcome>PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)")
FAILURE = re.compile(r"^(?:FAILED|ERROR) \S+?\[(?P<id>[^\]]+)\] - (?P<message>.*)$", re.M)


def parse_pytest(output: str) -> dict[str, Any]:
    """Each case's outcome from ``pytest -v -rfE`` output (a case id ``KIND-CAUSAL-LENGTH[-DTYPE]``, as the Triton
    tests name theirs; fp32 where the id names no dtype), each failure's message, and pytest's last line."""
    cases = []
    for m in OUTCOME.finditer(output):
        parts = m["id"].split("-")
        dtype = parts[-1] if parts[-1] in ("fp32", "bf16") else "fp32"
        cases.append({"id": m["id"], "kind": parts[0], "causal": "causal" in parts, "dtype": dtype,
                      "outcome": m["outcome"].lower()})
    failures = {m["id"]: m["message"][:300] for m in FAILURE.finditer(output)}
    lines = [line.strip("= ") for line in output.strip().splitlines() if line.strip()]
    return {"cases": cases, "failures": failures, "summary": lines[-1] if lines else ""}


def correctness(suite: Suite, tests: list[str], timeout: float) -> str:
    """Run the compiled-kernel tests in pytest (a process of its own); write one entry; return how it ended."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    env.pop("TRITON_INTERPRET", None)  # the compiled kernels, not the interpreter
    command = [sys.executable, "-m", "pytest", "-v", "-rfEs", "--tb=no", "-p", "no:cacheprovider", "-o",
               "addopts=", *tests]
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
                              check=False)
        output, status = done.stdout + done.stderr, f"exit {done.returncode}"
        if done.returncode == 5:  # pytest's "no tests collected": on a machine without CUDA the GPU tests skip
            status = "no test ran (exit 5)"
    except subprocess.TimeoutExpired as err:
        output = (err.stdout or b"").decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        status = f"timed out after {timeout:.0f} s"
    print(output[-3000:], flush=True)
    parsed = parse_pytest(output)
    suite.write("gpu_correctness", {"row": "correctness", "tests": tests, "status": status, **parsed})
    return "ok" if status == "exit 0" else status


def _run_child(piece: str, args: argparse.Namespace, deadline: float, run: str, suite_command: str,
               timeout: float) -> tuple[str, str]:
    """A timed piece in its own process, killed at ``timeout``; (how it ended, the end of its stderr)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--piece", piece, "--out", str(args.out),
               "--deadline", str(deadline), "--run", run, "--command", suite_command,
               *(["--smoke"] if args.smoke else [])]
    child = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    tail: collections.deque[str] = collections.deque(maxlen=30)

    def forward() -> None:  # shown live, the end kept for the status entry
        assert child.stderr is not None
        for line in child.stderr:
            sys.stderr.write(line)
            tail.append(line)

    reader = threading.Thread(target=forward, daemon=True)
    reader.start()
    try:
        code = child.wait(timeout=timeout)
        status = "ok" if code == 0 else f"failed (exit {code})"
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        status = f"timed out after {timeout:.0f} s"
    reader.join(timeout=5)
    return status, "".join(tail)[-2000:]


def run_suite(args: argparse.Namespace, command: str) -> list[dict[str, Any]]:
    """Every piece of ``args.pieces`` in order within the budget; the status entries written."""
    start = time.time()
    deadline = start + args.budget_s
    run = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    suite = Suite(args.out, args.smoke, deadline, run, command)
    print(f"# GPU suite {run}: {suite.gpu}; device {suite.device}; budget {args.budget_s:.0f} s; out {args.out}",
          flush=True)
    statuses = []
    for piece in args.pieces:
        left = deadline - time.time()
        began = time.time()
        tail = ""
        if left < args.min_start_s:
            status = f"skipped: budget ({left:.0f} s left)"
        elif piece == "correctness":
            status = correctness(suite, args.tests, min(left, args.correctness_max_s))
        elif args.in_process:
            try:
                TIMED[piece](suite)
                status = "ok"
            except Exception as err:  # noqa: BLE001 - recorded; the next piece still runs
                status, tail = "failed", f"{type(err).__name__}: {err}"[-2000:]
        else:
            status, tail = _run_child(piece, args, deadline, run, command, left)
        entry = {"row": piece, "status": status, "seconds": round(time.time() - began, 1), "error_tail": tail}
        suite.write(STATUS, entry)
        statuses.append(entry)
        print(f"# {piece}: {status} ({entry['seconds']:.0f} s)", flush=True)
    return statuses


def collect(folder: Path, into: Path = RESULTS) -> dict[str, int]:
    """Append the entries of a GPU run's record files in ``folder`` to the same files in ``into`` (smoke entries
    left out); how many each file got."""
    added = {}
    for name in FILES:
        entries = [e for e in read_entries(folder / f"{name}.jsonl") if not e.get("smoke")]
        for entry in entries:
            append(into / f"{name}.jsonl", entry)
        added[name] = len(entries)
    return added


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, help="the folder the record files are written to")
    p.add_argument("--smoke", action="store_true", help="on the CPU, tiny shapes: a test of the suite itself")
    p.add_argument("--budget-s", type=float, default=BUDGET_S, help=f"total seconds (default {BUDGET_S:.0f})")
    p.add_argument("--min-start-s", type=float, default=None,
                   help=f"no piece starts with less left (default {MIN_START_S:.0f}; 0 with --smoke)")
    p.add_argument("--pieces", nargs="+", choices=PIECES, default=PIECES, help="the pieces to run, in this order")
    p.add_argument("--tests", nargs="+", default=GPU_TESTS, help="the correctness piece's test files")
    p.add_argument("--correctness-max-s", type=float, default=CORRECTNESS_MAX_S,
                   help=f"the correctness piece's own limit in seconds (default {CORRECTNESS_MAX_S:.0f})")
    p.add_argument("--in-process", action="store_true", help="run the timed pieces in this process (no isolation, "
                   "no kill at the budget: for smoke runs)")
    p.add_argument("--commit", help="the commit of this tree, where it has no git history (SYNTHFORMER_COMMIT)")
    p.add_argument("--collect", type=Path, metavar="DIR", help="append DIR's record files to benchmarks/results/")
    p.add_argument("--piece", help=argparse.SUPPRESS)  # a child process: run this one piece
    p.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    p.add_argument("--run", help=argparse.SUPPRESS)
    p.add_argument("--command", help=argparse.SUPPRESS)  # the suite's command line, for the child's entries
    args = p.parse_args(argv)
    if args.collect is None and args.out is None:
        p.error("--out DIR is required (or --collect DIR)")
    if args.min_start_s is None:
        args.min_start_s = 0.0 if args.smoke else MIN_START_S
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.commit:
        os.environ["SYNTHFORMER_COMMIT"] = args.commit  # records.commit() reads it where git cannot answer
    if args.collect is not None:
        added = collect(args.collect)
        print("\n".join(f"{RESULTS / name}.jsonl: {n} entries added" for name, n in added.items()))
        return 0
    command = "python " + shlex.join(["benchmarks/speed/gpu_suite.py", *(sys.argv[1:] if argv is None else argv)])
    if args.piece is not None:  # a child of run_suite
        TIMED[args.piece](Suite(args.out, args.smoke, args.deadline, args.run, args.command or command))
        return 0
    import torch

    if not args.smoke and not torch.cuda.is_available():
        print("no CUDA device here: this suite times GPU kernels (--smoke runs it on the CPU with tiny shapes)",
              file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    statuses = run_suite(args, command)
    return 0 if all(s["status"] == "ok" for s in statuses) else 1


if __name__ == "__main__":
    sys.exit(main())
