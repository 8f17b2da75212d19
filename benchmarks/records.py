"""The shared shape of a results record (``benchmarks/results/NAME.jsonl``): reading it, and the metadata every
entry carries.

One JSON object per line, appended and fsynced the moment a measurement finishes, so a killed job leaves at most a
torn last line (skipped on reading). Every entry names its ``table`` and ``row`` and carries how it was measured:
``command`` (what was run, copyable), ``date`` (UTC), ``machine``, ``commit`` (of the code that ran, ``-dirty`` when
the working tree had changes), ``threads`` (torch threads) and ``shared_cpu`` (whether other work ran on the machine
meanwhile; the 1-minute load average at the start and the end is kept beside it as evidence). A later entry for the
same (table, row) supersedes an earlier one: tables show only the newest.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def read_entries(path: Path) -> list[dict[str, Any]]:
    """Every well-formed entry of a JSONL record in file order (a torn or non-object line is skipped)."""
    entries: list[dict[str, Any]] = []
    if not path.is_file():
        return entries
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def latest(path: Path, table: str | None = None) -> dict[str, dict[str, Any]]:
    """row -> its newest entry (the last line of a row wins), of ``table`` only when given."""
    found: dict[str, dict[str, Any]] = {}
    for entry in read_entries(path):
        if "row" in entry and (table is None or entry.get("table") == table):
            found[str(entry["row"])] = entry
    return found


def _cpu(entries: list[dict[str, Any]]) -> str:
    """``1 thread, CPU shared with other work`` (or the mix of them) over a table's entries."""
    threads = sorted({str(e.get("threads") or "default") for e in entries})
    shared = {bool(e.get("shared_cpu")) for e in entries}
    where = ("CPU shared with other work" if shared == {True} else "nothing else running" if shared == {False}
             else "some rows on a shared CPU")
    word = "thread" if threads == ["1"] else "threads"
    return f"{' / '.join(threads)} {word}, {where}"


def provenance(entries: list[dict[str, Any]], record: str) -> str:
    """The line under a table: its record, the dates, commits and how the CPU was used."""
    dates = sorted(str(e.get("date", "?")) for e in entries)
    span = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
    commits = ", ".join(dict.fromkeys(str(e.get("commit", "?")) for e in entries))
    rows = f"{len(entries)} row{'s' if len(entries) != 1 else ''}"
    return f"Record: `{record}` ({rows}; {span}; commit {commits}; {machines(entries)}; {_cpu(entries)})."


def machines(entries: list[dict[str, Any]]) -> str:
    """The entries' machines, each once in order of appearance, ``"; "``-joined; an entry of several runs names each
    of theirs that way, so its parts count one by one."""
    return "; ".join(dict.fromkeys(m for e in entries for m in str(e.get("machine", "?")).split("; ")))


def commit() -> str:
    """The short commit of this checkout, ``-dirty`` when tracked files other than records and docs differ from it
    (a record appended by the run before, or a doc being edited meanwhile, is not a change of the code that
    ran); ``unknown`` outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)benchmarks/results", ":(exclude)docs"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        # a copy of the checkout without its .git (e.g. sent to a GPU machine) names its commit in the environment
        return os.environ.get("SYNTHFORMER_COMMIT", "unknown")
    return head + ("-dirty" if dirty else "")


def machine() -> str:
    """CPU model (from /proc/cpuinfo where there is one), core count and torch's CPU capability, e.g. ``AMD EPYC,
    2 CPUs, torch CPU capability AVX2``, and the GPU where torch sees one."""
    name = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    # the vector instructions torch dispatches its CPU kernels to (AVX512 / AVX2 / DEFAULT): two hosts that both
    # say "AMD EPYC" measured 2.6x apart at L=256 because one lacked AVX-512 (2026-11-26)
    try:
        import torch
    except ImportError:
        return f"{name}, {os.cpu_count()} CPUs"
    get_capability = getattr(torch.backends.cpu, "get_cpu_capability", None)
    capability = f", torch CPU capability {get_capability()}" if get_capability else ""
    gpu = f", GPU {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""  # runs trained on a GPU
    return f"{name}, {os.cpu_count()} CPUs{capability}{gpu}"


def load() -> float:
    """The 1-minute load average (NaN where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return float("nan")


def metadata(command: str, threads: int | None, shared_cpu: bool) -> dict[str, Any]:
    """The fields every entry carries besides its table, row and numbers (the date is taken now: at the end)."""
    import torch

    return {"command": command, "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine(), "commit": commit(), "threads": threads, "shared_cpu": shared_cpu,
            "python": platform.python_version(), "torch": torch.__version__}


def append(path: Path, entry: dict[str, Any]) -> None:
    """Append one entry as one line, flushed and synced (a kill leaves at most a torn last line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def add_record_options(parser: Any) -> None:
    """``--record FILE`` / ``--name NAME`` / ``--shared-cpu`` on a benchmark script's argument parser."""
    parser.add_argument("--record", type=Path, default=None, metavar="FILE",
                        help="append the measurement to this JSONL record, e.g. benchmarks/results/NAME.jsonl")
    parser.add_argument("--name", default=None, help="the measurement's table name in the record (default: the "
                        "record's file name)")
    parser.add_argument("--shared-cpu", action="store_true",
                        help="record that other work shared the CPU (timings from such a run are not publishable)")


def write_record(args: Any, rows: Any, started_load: float, started_commit: str | None = None,
                 **extra: Any) -> None:
    """With ``--record``: append one entry for the whole run (its rows, its arguments and the metadata of
    :func:`metadata`: the command line, date, machine, commit, torch threads and the load average).
    ``started_commit``: :func:`commit` taken when the run started, for a run that records as it goes (the
    checkout may move on while it runs; the code that runs is the one it imported at the start)."""
    if getattr(args, "record", None) is None:
        return
    import shlex
    import sys

    import torch

    name = args.name or Path(args.record).stem
    command = "python " + shlex.join([str(Path(sys.argv[0]).resolve().relative_to(ROOT)
                                          if Path(sys.argv[0]).resolve().is_relative_to(ROOT) else sys.argv[0]),
                                         *sys.argv[1:]])
    arguments = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    entry = {"table": name, "row": name, "rows": rows, "args": arguments, **extra,
             **metadata(command, torch.get_num_threads(), bool(args.shared_cpu)),
             "load_1min": [started_load, load()]}
    if started_commit is not None:
        entry["commit"] = started_commit
    append(Path(args.record), entry)
    print(f"# recorded in {args.record} as {name!r}")
