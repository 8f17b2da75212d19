"""Two ``synthformer train`` processes, one run directory: the second fails at once in one line naming the first
(pid and host), touches nothing, and once the first is killed its lock file blocks nobody (a stale lock); the
killed run is refused without ``--resume`` and continues with it (the command line's resume of a killed run, checked
on the same killed process: each such process pays torch's import and trains to its first checkpoint)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from synthformer.cli.main import main
from synthformer.train import runlock
from tests.tasks.helpers import lm_config, write_yaml

pytestmark = [pytest.mark.usefixtures("restore_logging"),
              pytest.mark.skipif(runlock.fcntl is None, reason="fcntl locks (POSIX)")]


# written once when a run starts: the second process must not touch them (the first keeps adding checkpoints)
STARTED = ("config.yaml", "model_config.json", "synthformer_tokenizer.json")


def _snapshot(run: Path) -> dict[str, tuple[str, int]]:
    return {name: (hashlib.sha256((run / name).read_bytes()).hexdigest(), (run / name).stat().st_mtime_ns)
            for name in STARTED}


def test_a_second_train_into_a_run_in_use_fails_at_once_and_a_killed_first_blocks_nothing(tmp_path: Path,
                                                                                         capsys) -> None:
    cfg = write_yaml(tmp_path / "lm.yaml", lm_config(tmp_path, steps=100000, save_every=5, eval_every=0))
    run = tmp_path / "run"
    first = subprocess.Popen([sys.executable, "-m", "synthformer.cli.main", "train", str(cfg), "--run-dir", str(run),
                              "--no-progress", "-q"], env={**os.environ, "OMP_NUM_THREADS": "1"},
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (run / "checkpoints" / "latest").is_file():  # the first is training and has saved
            assert first.poll() is None and time.monotonic() < deadline, first.stderr.read() if first.stderr else ""
            time.sleep(0.2)
        for mode in ([], ["--resume"], ["--overwrite"]):
            before = _snapshot(run)
            assert main(["train", str(cfg), "--run-dir", str(run), "--no-progress", *mode]) == 2
            stderr = capsys.readouterr().err
            err = [line for line in stderr.splitlines() if line.startswith("synthformer train:")]
            assert err == [f"synthformer train: error: run directory {run} is in use by another process (pid "
                           f"{first.pid} on {os.uname().nodename}); wait for it to finish (or stop it), or choose "
                           "another run directory"]
            assert "synthformer.tasks.sources" not in stderr  # at once: refused before the data was even loaded
            assert _snapshot(run) == before  # nothing rewritten
            assert (run / "checkpoints" / "latest").is_file()  # and nothing deleted, --overwrite included
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        first.stderr.close()
    assert (run / ".lock").is_file()  # the killed first left its lock file: stale, the kernel released the lock
    step = int((run / "checkpoints" / "latest").read_text().strip()[len("step_"):])
    assert step >= 5 and step % 5 == 0  # SIGKILL: no chance to save, so the last checkpoint is a periodic one

    # without --resume the killed run is refused, untouched
    assert main(["train", str(cfg), "--run-dir", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "already holds a run" in err and "--resume" in err
    # --resume continues from that checkpoint up to the (now shorter) goal
    goal = step + 4
    assert main(["train", str(cfg), f"train.steps={goal}", "--run-dir", str(run), "--resume", "--no-progress",
                 "-q"]) == 0
    assert "trained 4 steps" in capsys.readouterr().out
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == sorted(steps) and steps[-1] == goal
    assert (run / "checkpoints" / "latest").read_text().strip() == f"step_{goal:06d}"
    assert not (run / ".lock").exists()
