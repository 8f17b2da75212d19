"""Run ``synthformer bench`` (the paper's Table 4 at model level) and append its table to a JSONL record.

``synthformer bench`` writes ``OUT.md`` and ``OUT.csv``; this wrapper runs it in a subprocess (this checkout's
``src`` first on ``PYTHONPATH``) into a temporary folder, reads the CSV rows and appends one entry with the
metadata of ``benchmarks/records.py`` (command, date, machine, commit, threads, shared CPU or not).

    python benchmarks/speed/record_bench.py --record benchmarks/results/model_bench.jsonl -- --preset lm-base \
        --vocab-size 8000
    python benchmarks/speed/record_bench.py --record benchmarks/results/model_bench_bf16.jsonl -- --preset lm-base \
        --vocab-size 8000 --bf16
"""

from __future__ import annotations

import argparse
import csv
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import ROOT, add_record_options, append, load, metadata  # noqa: E402 - benchmarks/records.py


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_record_options(p)
    p.add_argument("bench_args", nargs=argparse.REMAINDER, help="arguments of synthformer bench (after --)")
    args = p.parse_args(argv)
    bench = [a for a in args.bench_args if a != "--"]
    if args.record is None:
        p.error("--record FILE is required")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    started = load()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench"
        command = [sys.executable, "-m", "synthformer.cli.main", "bench", *bench, "--out", str(out), "--no-progress"]
        code = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
        if code != 0:
            return code
        with open(out.with_suffix(".csv"), encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
    threads = int(rows[0]["threads"]) if rows and rows[0].get("threads") else None  # the bench's own count
    name = args.name or args.record.stem
    entry = {"table": name, "row": name, "rows": rows, "bench_args": bench,
             **metadata("synthformer bench " + shlex.join(bench), threads, args.shared_cpu),
             "load_1min": [started, load()]}
    append(args.record, entry)
    print(f"# recorded in {args.record} as {name!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
