"""A regression guard for the attention paths: the current tree timed against a named commit in the same run.

Workload: one ``SynthesizerAttention`` layer, forward + backward, B=16, d_model 512, 8 heads, for every kind at
L=256 and 1024, attention dropout 0 and 0.1, bidirectional and causal. The named commit's ``src/`` is unpacked
from git (``git archive``) into a temporary folder; each tree is timed by a process of its own
(``bench_guard_worker.py`` with that tree first on ``PYTHONPATH``), the two never at once. Each measurement is the
median of ``--repeats`` steps after ``--warmup``; in every round each kind is measured once by each tree, the old
tree first in even rounds and the new one first in odd rounds, so drift and load hit both alike.

Reported per (kind, L, dropout, causal): the new/old time ratio (median over rounds of the per-round ratios) with
its spread over the rounds (min-max and the quartiles), and each tree's time as a fraction of its own V's (SDPA) in
the same rounds. A difference is called only when it exceeds the spread: "slower" when every round's ratio is
above 1 and the median above 1 + ``--tolerance``, "faster" likewise below, "same" otherwise; with fewer than 3
rounds nothing is called. Comparing a clean tree with ``HEAD`` shows the spread this machine gives when nothing
changed.

    python benchmarks/speed/bench_guard.py                        # against HEAD: the whole grid, recorded
    python benchmarks/speed/bench_guard.py --against main~3 --kinds V D FD R+V --lengths 1024
    python benchmarks/speed/bench_guard.py --quick                # V R D R+V at L=256, 3 rounds, not recorded

Every row is appended to ``benchmarks/results/bench_guard.jsonl`` (``--record FILE``; ``--quick`` records only
with ``--record``) as soon as its (L, dropout, causal) group is done, with the metadata of ``records.py``;
``doc_tables/guard.py`` builds docs/benchmarks.md's table from the newest run.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shlex
import statistics
import subprocess
import sys
import tarfile
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, append, load, metadata  # noqa: E402 - benchmarks/records.py

TABLE = "bench_guard"
RECORD = RESULTS / f"{TABLE}.jsonl"
WORKER = Path(__file__).resolve().parent / "bench_guard_worker.py"
#: every kind of the module tables (benchmarks/speed/attention.py's DEFAULT_KINDS), V first: the unit of the V ratios
KINDS = ["V", "R", "Fix", "FR", "D", "FD", "R+V", "D+V", "FR+V", "R+D", "Bottleneck", "GLU", "Conv"]
FULL = {"kinds": KINDS, "lengths": [256, 1024], "dropout": [0.0, 0.1], "causal": ["bidir", "causal"],
        "rounds": 5, "repeats": 3, "warmup": 1}
#: fewer rounds call no difference (with 3, all on one side by chance: 1 time in 4; with 5: 1 in 16)
MIN_ROUNDS = 3
QUICK = {"kinds": ["V", "R", "D", "R+V"], "lengths": [256], "dropout": [0.0], "causal": ["bidir", "causal"],
         "rounds": 3, "repeats": 3, "warmup": 1}


def extract(ref: str, into: Path) -> str:
    """Unpack ``src/`` of commit ``ref`` into ``into/src``; return the commit's full hash. Nothing in the
    repository changes (no worktree, no checkout): other work in this tree is left alone."""
    full = subprocess.run(["git", "rev-parse", "--verify", f"{ref}^{{commit}}"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout.strip()
    archive = subprocess.run(["git", "archive", "--format=tar", full, "src"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return full


def check_import(name: str, hello: dict[str, Any], src: Path) -> None:
    """Raise unless a worker's greeting says it imported ``synthformer`` from under ``src``: a package missing
    there would be found elsewhere (the installed one), and the guard would time one tree against itself."""
    if not Path(hello["synthformer"]).resolve().is_relative_to(src.resolve()):
        raise RuntimeError(f"the {name} tree's worker imported {hello['synthformer']}, not the package under {src}")


class Tree:
    """One tree's worker process: ``request`` sends a measurement and waits for its answer."""

    def __init__(self, name: str, src: Path, threads: int | None, log: IO[str]) -> None:
        self.name, self.src = name, src
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")])))
        # cwd outside both trees: nothing there can shadow the package PYTHONPATH names
        self.process = subprocess.Popen([sys.executable, str(WORKER), str(threads or 0)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=log, text=True, env=env,
                                        cwd=tempfile.gettempdir())
        self.log = log

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("@guard "):
                return json.loads(line[len("@guard "):])
        self.log.flush()
        self.log.seek(0)
        raise RuntimeError(f"the {self.name} tree's worker ended (exit {self.process.wait()}):\n"
                           + self.log.read()[-2000:])

    def ready(self) -> dict[str, Any]:
        """The worker's greeting, checked by :func:`check_import`."""
        hello = self._read()
        check_import(self.name, hello, self.src)
        return hello

    def request(self, req: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(req) + "\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.process.poll() is None and self.process.stdin is not None:
            self.process.stdin.close()  # end of input ends the worker
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


def spread(values: list[float]) -> dict[str, float]:
    """Median, min, max and quartiles of ``values`` (the quartiles equal min and max for fewer than 2 values)."""
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "q1": q1, "q3": q3}


def verdict(ratios: list[float], tolerance: float) -> str:
    """``slower`` / ``faster`` when every round's new/old ratio lies on one side of 1 and the median beyond the
    tolerance; ``same`` otherwise (the difference is within the spread of the rounds); ``not called`` with fewer
    than :data:`MIN_ROUNDS` rounds, where all rounds agree on a side too often by chance (2 rounds: half the
    time)."""
    if len(ratios) < MIN_ROUNDS:
        return "not called"
    middle = statistics.median(ratios)
    if min(ratios) > 1 and middle > 1 + tolerance:
        return "slower"
    if max(ratios) < 1 and middle < 1 - tolerance:
        return "faster"
    return "same"


def summarize(times: dict[str, list[float]], v_times: dict[str, list[float]] | None,
              tolerance: float) -> dict[str, Any]:
    """One row's numbers from the per-round medians of each tree (``times["old"]``, ``times["new"]``) and those of
    V in the same rounds."""
    ratios = [n / o for n, o in zip(times["new"], times["old"], strict=True)]
    row: dict[str, Any] = {"new_ms": statistics.median(times["new"]), "old_ms": statistics.median(times["old"]),
                           "new_round_ms": times["new"], "old_round_ms": times["old"], "round_ratios": ratios}
    stats = spread(ratios)
    row.update({"ratio": stats["median"], "ratio_min": stats["min"], "ratio_max": stats["max"],
                "ratio_q1": stats["q1"], "ratio_q3": stats["q3"], "verdict": verdict(ratios, tolerance)})
    for tree in ("new", "old"):
        if v_times is not None and len(v_times[tree]) == len(times[tree]):
            row[f"{tree}_vs_V"] = statistics.median([t / v for t, v in zip(times[tree], v_times[tree], strict=True)])
    return row


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--against", default="HEAD", help="the commit (any git revision) to time against (default HEAD)")
    p.add_argument("--quick", action="store_true", help="a smoke run: kinds V R D R+V at L=256, dropout 0, 3 rounds "
                   "(given options still win); recorded only with --record")
    p.add_argument("--kinds", nargs="+", help=f"default: {' '.join(KINDS)} (V is always measured: the unit)")
    p.add_argument("--lengths", nargs="+", type=int, help="default: 256 1024")
    p.add_argument("--dropout", nargs="+", type=float, help="attention dropout values (default: 0 0.1)")
    p.add_argument("--causal", nargs="+", choices=["bidir", "causal"], help="default: both")
    p.add_argument("--rounds", type=int, help="alternating rounds per row (default 5; the spread is over them)")
    p.add_argument("--repeats", type=int, help="timed steps per measurement, of which the median (default 3)")
    p.add_argument("--warmup", type=int, help="untimed steps before each measurement (default 1)")
    p.add_argument("--batch", nargs="+", default=["16"], metavar="B | L=B",
                   help="batch size: one number for every length, or one per length as L=B (e.g. 256=16 1024=4: "
                        "the long rows at a quarter of the batch, a quarter of the time); default 16")
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--threads", type=int, default=None, help="torch threads of both workers (default: torch's)")
    p.add_argument("--tolerance", type=float, default=0.02,
                   help="a called difference's median ratio is at least this far from 1 (default 0.02)")
    p.add_argument("--record", type=Path, default=None, help=f"JSONL record (default {RECORD.relative_to(ROOT)}; "
                   "none for --quick)")
    p.add_argument("--no-record", action="store_true", help="print only")
    p.add_argument("--shared-cpu", action="store_true", help="record that other work shared the CPU meanwhile")
    p.add_argument("--fail-on-slower", action="store_true", help="exit 1 when a row is called slower")
    args = p.parse_args(argv)
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.kinds = ["V", *[k for k in dict.fromkeys(args.kinds) if k != "V"]]
    for name in ("rounds", "repeats"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    try:
        args.batch = batch_per_length(args.batch, args.lengths)
    except ValueError as err:
        p.error(str(err))
    if args.record is None and not args.quick:
        args.record = RECORD
    if args.no_record:
        args.record = None
    return args


def batch_per_length(values: list[str], lengths: list[int]) -> dict[int, int]:
    """``--batch``'s values as {length: batch}: one plain number sets every length; ``L=B`` items set one length
    each and must name exactly the lengths measured."""
    if len(values) == 1 and "=" not in values[0]:
        if not values[0].isdigit() or int(values[0]) < 1:
            raise ValueError(f"--batch {values[0]!r}: expected a positive whole number or L=B items")
        return {length: int(values[0]) for length in lengths}
    batches: dict[int, int] = {}
    for item in values:
        length, _, batch = item.partition("=")
        if not (length.isdigit() and batch.isdigit() and int(batch) >= 1):
            raise ValueError(f"--batch {item!r}: expected L=B with whole numbers (e.g. 1024=4), or one number")
        batches[int(length)] = int(batch)
    if set(batches) != set(lengths):
        raise ValueError(f"--batch names lengths {sorted(batches)} but the lengths measured are {sorted(lengths)}")
    return batches


def batch_label(batch: dict[int, int]) -> str:
    """``B=16`` or ``B=16 at L=256, 4 at L=1024`` (the printed header and the doc table's settings line)."""
    if len(set(batch.values())) == 1:
        return f"B={next(iter(batch.values()))}"
    return "B=" + ", ".join(f"{b} at L={n}" for n, b in sorted(batch.items()))


def run(args: argparse.Namespace, command: str) -> list[dict[str, Any]]:
    """Measure the grid of ``args`` (see the module docstring); print each row, append it to the record."""
    started, load_start = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"), load()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench_guard_") as tmp, \
            tempfile.TemporaryFile("w+", encoding="utf-8") as old_log, \
            tempfile.TemporaryFile("w+", encoding="utf-8") as new_log:
        against = extract(args.against, Path(tmp))
        trees = {"old": Tree("old", Path(tmp) / "src", args.threads, old_log),
                 "new": Tree("new", ROOT / "src", args.threads, new_log)}
        try:
            hello = {name: tree.ready() for name, tree in trees.items()}
            print(f"# new: this tree ({hello['new']['synthformer']}); old: {args.against} = {against[:12]} "
                  f"(unpacked); {hello['new']['threads']} threads each; {args.rounds} rounds x (median of "
                  f"{args.repeats} after {args.warmup}); {batch_label(args.batch)}, d_model {args.d_model}, "
                  f"{args.heads} heads")
            print("kind         L      dropout causal  new/old [min-max]      verdict  new/V  old/V")
            groups = [(n, p, c) for n in args.lengths for p in args.dropout for c in args.causal]
            for length, dropout, causal in groups:
                group = measure_group(args, trees, length, dropout, causal)
                for kind, result in group.items():
                    row = {"table": TABLE, "row": f"{kind} L={length} dropout={dropout:g} {causal}",
                           "run": f"{started} against {against[:12]}", "kind": kind, "L": length,
                           "dropout": dropout, "causal": causal == "causal", "against": against[:12],
                           "against_ref": args.against, "quick": args.quick, "rounds": args.rounds,
                           "repeats": args.repeats, "warmup": args.warmup, "batch": args.batch[length],
                           "d_model": args.d_model, "heads": args.heads, "tolerance": args.tolerance, **result}
                    print(line(row), flush=True)
                    rows.append(row)
                    if args.record is not None:
                        append(args.record, {**row, **metadata(command, hello["new"]["threads"], args.shared_cpu),
                                             "load_1min": [load_start, load()]})
        finally:
            for tree in trees.values():
                tree.close()
    return rows


def measure_group(args: argparse.Namespace, trees: dict[str, Tree], length: int, dropout: float,
                  causal: str) -> dict[str, dict[str, Any]]:
    """Every kind at one (length, dropout, causality), ``rounds`` alternating rounds; each kind's summary (or its
    error, when a tree could not run it: e.g. a kind the old commit does not know)."""
    times = {kind: {"old": [], "new": []} for kind in args.kinds}
    errors: dict[str, str] = {}
    base = {"L": length, "dropout": dropout, "causal": causal == "causal", "batch": args.batch[length],
            "d_model": args.d_model, "heads": args.heads, "warmup": args.warmup, "repeats": args.repeats}
    for r in range(args.rounds):
        for kind in args.kinds:
            if kind in errors:
                continue
            for name in (("old", "new") if r % 2 == 0 else ("new", "old")):
                answer = trees[name].request({**base, "kind": kind})
                if "error" in answer:
                    errors[kind] = f"{name} tree: {answer['error'][:160]}"  # the first line's worth
                    break
                times[kind][name].append(answer["ms"])
    v = times["V"] if "V" not in errors else None
    return {kind: ({"error": errors[kind]} if kind in errors else summarize(times[kind], v, args.tolerance))
            for kind in args.kinds}


def line(row: dict[str, Any]) -> str:
    """One printed row."""
    head = f"{row['kind']:12s} {row['L']:<6d} {row['dropout']:<7g} {'yes' if row['causal'] else 'no':7s}"
    if "error" in row:
        return f"{head} {row['error']}"
    return (f"{head} {row['ratio']:.3f} [{row['ratio_min']:.3f}-{row['ratio_max']:.3f}]  {row['verdict']:8s} "
            f"{row.get('new_vs_V', float('nan')):.3f}  {row.get('old_vs_V', float('nan')):.3f}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    command = "python " + shlex.join(["benchmarks/speed/bench_guard.py", *(sys.argv[1:] if argv is None else argv)])
    rows = run(args, command)
    called = {v: sum(r.get("verdict") == v for r in rows) for v in ("slower", "faster", "same")}
    print(f"# {called['slower']} slower, {called['faster']} faster, {called['same']} within the spread, "
          f"{len(rows) - sum(called.values())} not called (an error, or fewer than {MIN_ROUNDS} rounds)"
          + (f"; recorded in {args.record}" if args.record else ""))
    return 1 if args.fail_on_slower and called["slower"] else 0


if __name__ == "__main__":
    sys.exit(main())
