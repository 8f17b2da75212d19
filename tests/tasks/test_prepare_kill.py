"""``kill -9`` of ``synthformer prepare`` in the middle of its units: its worker processes die with it (they would
otherwise go on writing into the folder the next prepare takes over), and the same prepare run at once continues to
the bytes of an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from synthformer.common.config import from_dict
from synthformer.tasks import TaskConfig
from synthformer.tasks.prepared import prepare_corpus

from .test_prepare import _c4, _manifest, _shard_bytes

# The prepare of the test, in a process of its own: every shard write of a worker leaves the worker's pid in MARKS
# and takes 0.1 s, so that the kill lands while the workers are in the middle of their units.
_SCRIPT = """
import json, os, sys, time
from pathlib import Path
from synthformer.common.config import from_dict
from synthformer.data.prepared import writer
from synthformer.tasks import TaskConfig
from synthformer.tasks.prepared import prepare_corpus

out, marks, task = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
real = writer.write_bytes

def slow(fh, data):
    (marks / str(os.getpid())).touch()
    time.sleep(0.1)
    real(fh, data)

writer.write_bytes = slow  # forked workers inherit it
prepare_corpus(from_dict(TaskConfig, task), out, workers=2, shard_tokens=150)
"""


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, dead but not yet reaped by its new parent, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads process states from /proc (Linux)")
def test_kill_9_takes_the_workers_with_it_and_a_rerun_completes(tmp_path: Path) -> None:
    fields = {"type": "lm", "train": _c4(tmp_path / "c4", files=4), "valid_fraction": 0.2, "tokenizer": "char"}
    task = from_dict(TaskConfig, fields)
    prepare_corpus(task, tmp_path / "clean", shard_tokens=150)
    out, marks = tmp_path / "out", tmp_path / "marks"
    marks.mkdir()
    log = tmp_path / "stderr.txt"
    with open(log, "w") as err:  # a file, not a pipe: a surviving worker would hold a pipe open (and the test)
        parent = subprocess.Popen([sys.executable, "-c", _SCRIPT, str(out), str(marks), json.dumps(fields)],
                                  stderr=err)
    try:
        deadline = time.monotonic() + 120
        while len(list(marks.iterdir())) < 2:  # both workers are writing their first unit
            assert parent.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the workers never started writing"
            time.sleep(0.02)
        os.kill(parent.pid, signal.SIGKILL)
    finally:
        parent.kill()
        parent.wait()
    workers = [int(p.name) for p in marks.iterdir()]
    assert parent.pid not in workers and len(workers) == 2
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = [pid for pid in workers if _alive(pid)]
    for pid in survivors:  # do not leave them behind, whatever the assertion says
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"workers {survivors} outlived the killed prepare"
    assert not (out / "manifest.json").exists() and (out / ".parts").is_dir()  # it was cut in the middle
    again = prepare_corpus(task, out, workers=2, shard_tokens=150)  # at once, over what the workers left
    assert again.status == "resumed"
    assert _shard_bytes(out) == _shard_bytes(tmp_path / "clean") and _manifest(out) == _manifest(tmp_path / "clean")
    assert not (out / ".parts").exists()
