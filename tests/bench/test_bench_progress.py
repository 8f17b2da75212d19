"""``synthformer bench`` draws its progress bar only on a terminal: a log file (stderr not a terminal) gets no tqdm
frames (carriage returns), as ``train`` does; on a terminal the bar stays."""

from __future__ import annotations

import subprocess
import sys

import pytest

from synthformer.bench.cli import main

TABLE4 = ["--preset", "lm-small", "--rows", "V", "--set", "n_layers=1", "d_model=16", "n_heads=2", "d_ff=32",
          "--seq-len", "8", "--batch-size", "1", "--vocab-size", "20", "--steps", "1", "--repeats", "1",
          "--warmup", "0", "--no-memory", "--threads", "1"]
LRA = ["--lra-table2", "--kinds", "R", "--lengths", "16", "--batch-size", "1", "--warmup", "0", "--repeats", "1",
       "--causal", "none", "--no-memory", "--no-memory-guard", "--threads", "1",
       "--set", "d_model=16", "n_heads=2", "n_layers=1", "d_ff=32"]


@pytest.mark.parametrize("argv", [TABLE4, LRA], ids=["table4", "lra-table2"])
def test_no_bar_frames_when_stderr_is_not_a_terminal(argv) -> None:
    done = subprocess.run([sys.executable, "-m", "synthformer.cli.main", "bench", *argv], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    # a frame is "desc:  40%|####      | 2/5 [...step/s]", begun by a carriage return (or a newline, as some tqdm
    # versions write to a pipe)
    assert "\r" not in done.stderr and "%|" not in done.stderr and "step/s" not in done.stderr
    assert "|---" in done.stdout  # the table was printed: the run went through


@pytest.mark.parametrize("argv", [TABLE4, LRA], ids=["table4", "lra-table2"])
def test_a_terminal_keeps_its_bar(argv, capsys, monkeypatch) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(argv, prog="synthformer bench") == 0
    err = capsys.readouterr().err
    assert "\r" in err and "%|" in err
