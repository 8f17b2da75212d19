"""Time the test suite as the README runs it (``python -m pytest``, every core through pytest-xdist) and append the
result to ``benchmarks/results/suite_time.jsonl``: wall seconds, the counts of pytest's summary line, its exit
status, the machine. Run it with nothing else on the machine: the README quotes the newest passing entry
(``benchmarks/doc_tables/results.py``, ``suite-time``) as the suite's time on the development CPU. Run it with the
python of an environment installed as the README's quick start installs it (no Triton: its tests skip there, as
they do for a contributor who follows it); each entry says whether Triton was importable and which pytest ran.

Each entry also says whether Python wrote its bytecode caches (``bytecode_cached``): a default Python does, so from
its second run on pytest reads every test module's rewritten asserts and the library's compiled modules back
instead of compiling them again in each worker and each process a test starts. An environment with
``PYTHONDONTWRITEBYTECODE`` set (the development machines' containers set it) compiles them on every run; to time
the suite as a default Python runs it there, run the script twice without it (the first run writes the caches):

    python benchmarks/speed/suite_time.py
    env -u PYTHONDONTWRITEBYTECODE python benchmarks/speed/suite_time.py
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, append, load, metadata  # noqa: E402 - benchmarks/records.py

RECORD = RESULTS / "suite_time.jsonl"
COMMAND = [sys.executable, "-m", "pytest"]
SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)")


def counts(output: str) -> dict[str, int]:
    """The counts of pytest's last summary line (``5219 passed, 4 skipped in 650.12s``)."""
    lines = [line for line in output.splitlines() if SUMMARY.search(line) and " in " in line]
    if not lines:
        return {}
    return {word.rstrip("s") if word.startswith("error") else word: int(n)
            for n, word in SUMMARY.findall(lines[-1])}


def bytecode_cached(environ: dict[str, str] | None = None) -> bool:
    """Whether the suite's processes (this environment's children) write and read Python's bytecode caches: not
    with ``PYTHONDONTWRITEBYTECODE`` set to anything non-empty (Python's own rule)."""
    return not (os.environ if environ is None else environ).get("PYTHONDONTWRITEBYTECODE")


def main(argv: list[str] | None = None) -> int:
    # no options: the parser is there so that --help (or a stray argument) explains instead of starting the suite
    argparse.ArgumentParser(prog="suite_time.py", description=__doc__.split("\n\n")[0]).parse_args(argv)
    load_before = load()
    start = time.perf_counter()
    done = subprocess.run(COMMAND, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    found = counts(done.stdout + done.stderr)
    append(RECORD, {"table": "suite_time", "row": "suite", "wall_seconds": round(wall, 1), "status": done.returncode,
                    **found, "load_1min_before": load_before, "triton": importlib.util.find_spec("triton") is not None,
                    "pytest": importlib.metadata.version("pytest"), "bytecode_cached": bytecode_cached(),
                    **metadata("python -m pytest", None, False)})
    print(f"# python -m pytest: {wall:.0f} s, exit status {done.returncode}, {found}")
    for line in (done.stdout + done.stderr).splitlines():  # what failed, so a failing timing need not be re-run
        if line.startswith(("FAILED", "ERROR")):
            print(line)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
