"""``synthformer bench`` draws its progress bar only on a terminal: a log file (stderr not a terminal) gets no tqdm
frames (carriage returns), as ``train`` does; on a terminal the bar stays."""

from __future__ import annotations

import json
import re
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


RUNS = {"table4": TABLE4, "lra-table2": LRA}
#: begins each run's share of the child's stdout and stderr (neither a carriage return nor a bar's "%|")
_MARK = "@@ synthformer bench run: {} @@"
#: both runs in one child process, as ``python -m synthformer.cli.main bench ...`` runs them (``main(["bench",
#: ...])``): the point is only that stderr is a pipe, not a terminal, and one child imports torch once instead of
#: once per run (most of each run's time)
_CHILD = """
import json, sys
from synthformer.cli.main import main
MARK, codes = sys.argv[1], {}
for name, argv in json.loads(sys.argv[2]).items():
    for stream in (sys.stdout, sys.stderr):
        print(MARK.format(name), file=stream, flush=True)
    codes[name] = main(["bench", *argv])
    sys.stdout.flush()
    sys.stderr.flush()
print(MARK.format("exit codes"), json.dumps(codes), sep="\\n", flush=True)
"""


def _split(text: str) -> dict[str, str]:
    """A child's stream cut at the marks: the run's name -> what it wrote."""
    parts = re.split("^" + re.escape(_MARK).replace(r"\{\}", "(.+)") + "\n", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


@pytest.fixture(scope="module")
def piped() -> dict[str, tuple[int, str, str]]:
    """Each run's (exit status, stdout, stderr), stderr a pipe."""
    done = subprocess.run([sys.executable, "-c", _CHILD, _MARK, json.dumps(RUNS)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    out, err = _split(done.stdout), _split(done.stderr)
    codes = json.loads(out.pop("exit codes"))
    assert sorted(out) == sorted(err) == sorted(codes) == sorted(RUNS), (done.stdout, done.stderr)
    return {name: (codes[name], out[name], err[name]) for name in RUNS}


@pytest.mark.xdist_group("bench-progress-child")  # both in the worker that ran the child
@pytest.mark.parametrize("name", list(RUNS))
def test_no_bar_frames_when_stderr_is_not_a_terminal(name, piped) -> None:
    returncode, stdout, stderr = piped[name]
    assert returncode == 0, stderr
    # a frame is "desc:  40%|####      | 2/5 [...step/s]", begun by a carriage return (or a newline, as some tqdm
    # versions write to a pipe)
    assert "\r" not in stderr and "%|" not in stderr and "step/s" not in stderr
    assert "|---" in stdout  # the table was printed: the run went through


@pytest.mark.parametrize("argv", [TABLE4, LRA], ids=["table4", "lra-table2"])
def test_a_terminal_keeps_its_bar(argv, capsys, monkeypatch) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(argv, prog="synthformer bench") == 0
    err = capsys.readouterr().err
    assert "\r" in err and "%|" in err
