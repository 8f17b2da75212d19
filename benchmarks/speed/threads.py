"""Thread oversubscription: training throughput when several trainings share this machine's cores.

Each scenario starts ``procs`` worker processes at once. A worker trains the ``compare`` model (a 2-layer
character LM, d_model 128, batch 32 x 128, V attention) with ``torch.set_num_threads(threads)`` for
``--seconds`` after two warm-up steps and reports its tokens/s. The table gives each scenario's per-process
and total throughput, so one can see what happens when the workers ask for more threads than there are cores,
and whether OpenMP's waiting policy (``OMP_WAIT_POLICY``: ``active`` spins, ``passive`` sleeps) is the cause.

    python benchmarks/speed/threads.py --seconds 20

Results and the conclusion: ``docs/reliability.md`` ("Threads").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import add_record_options, load, write_record  # noqa: E402 - benchmarks/records.py

# (name, processes, threads per process, OMP_WAIT_POLICY or None for the default)
SCENARIOS: list[tuple[str, int, int | None, str | None]] = [
    ("1 process, default threads", 1, None, None),
    ("2 processes, default threads", 2, None, None),
    ("2 processes, OMP_WAIT_POLICY=passive", 2, None, "passive"),
    ("2 processes, OMP_WAIT_POLICY=active", 2, None, "active"),
    ("2 processes, 1 thread each (--threads 1)", 2, 1, None),
    ("3 processes, default threads", 3, None, None),
    ("3 processes, 1 thread each (--threads 1)", 3, 1, None),
]


def worker(threads: int | None, seconds: float) -> None:
    """Train for ``seconds`` and print one JSON line with the tokens/s (run in a child process)."""
    import torch

    from synthformer.models import LMConfig, build_model

    if threads is not None:
        torch.set_num_threads(threads)
    torch.manual_seed(0)
    config = LMConfig(vocab_size=128, d_model=128, n_heads=4, n_layers=2, d_ff=512, max_len=128, dropout=0.0,
                      decoder_kind="V")
    model = build_model(config)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 128, (32, 129))  # (B, L + 1): inputs and next-token labels

    def step() -> None:
        loss = model(input_ids=ids[:, :-1], labels=ids[:, 1:])["loss"]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(2):
        step()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        steps += 1
    elapsed = time.perf_counter() - start
    print(json.dumps({"tokens_per_s": steps * 32 * 128 / elapsed, "steps": steps,
                      "threads": torch.get_num_threads()}), flush=True)


def scenario(procs: int, threads: int | None, policy: str | None, seconds: float) -> list[dict]:
    """Start ``procs`` workers at once; return their reports."""
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    if policy is not None:
        env["OMP_WAIT_POLICY"] = policy
    argv = [sys.executable, __file__, "--worker", "--seconds", str(seconds)]
    if threads is not None:
        argv += ["--threads", str(threads)]
    children = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True) for _ in range(procs)]
    return [json.loads(child.communicate()[0].strip().splitlines()[-1]) for child in children]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds per worker")
    parser.add_argument("--threads", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    add_record_options(parser)
    args = parser.parse_args()
    if args.worker:
        worker(args.threads, args.seconds)
        return
    print(f"cores: {os.cpu_count()}, {args.seconds:.0f} s per scenario after warm-up")
    print("| scenario | threads each | tokens/s per process | total tokens/s |")
    print("|---|---|---|---|")
    started, rows = load(), []
    for name, procs, threads, policy in SCENARIOS:
        reports = scenario(procs, threads, policy, args.seconds)
        rates = [r["tokens_per_s"] for r in reports]
        per = " / ".join(f"{r:,.0f}" for r in rates)
        print(f"| {name} | {reports[0]['threads']} | {per} | {sum(rates):,.0f} "
              f"(median {statistics.median(rates):,.0f}) |", flush=True)
        rows.append({"scenario": name, "threads": reports[0]["threads"], "tokens_per_s": rates})
    write_record(args, rows, started)


if __name__ == "__main__":
    main()
