"""``synthformer eval`` shows its progress (a bar on a terminal, a line a minute at most off one, nothing with
--no-progress) and refuses, in one line, a decoding option that the run's task would ignore."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from synthformer.cli import _eval_progress
from synthformer.cli.main import main
from tests.tasks.helpers import classification_config, lm_config, seq2seq_config, write_yaml

#: one pytest-xdist worker runs the module: the three trained runs (the module fixture) are trained once
pytestmark = [pytest.mark.usefixtures("restore_logging"), pytest.mark.xdist_group("eval-progress-runs")]


def trained(tmp: Path, name: str, config: dict) -> Path:
    cfg = write_yaml(tmp / f"{name}.yaml", config)
    run_dir = tmp / name
    assert main(["train", str(cfg), "--run-dir", str(run_dir), "-q", "--threads", "1", "train.steps=2",
                 "train.save_every=2", "train.eval_every=2"]) == 0
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("eval")
    return {"lm": trained(tmp, "lm", lm_config(tmp)), "cls": trained(tmp, "cls", classification_config(tmp)),
            "s2s": trained(tmp, "s2s", seq2seq_config())}


def test_off_a_terminal_eval_logs_progress_lines_and_no_bar(runs, capsys, monkeypatch) -> None:
    capsys.readouterr()
    monkeypatch.setattr(_eval_progress, "HEARTBEAT_S", 0.0)  # a line per batch instead of a minute apart
    assert main(["eval", str(runs["lm"]), "--batch-size", "2", "--threads", "1"]) == 0
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if "batches scored" in line]
    assert lines and re.search(r"INFO .*eval .*lm: 1 batches scored, elapsed \d+s", lines[0])
    assert re.search(rf": {len(lines)} batches scored", lines[-1])
    assert "%|" not in err and "\r" not in err  # no bar frames in a file
    assert "split valid" in out

    # seq2seq: the teacher-forced batches and the batches decoded both count
    assert main(["eval", str(runs["s2s"]), "--batch-size", "4", "--beam", "1", "--threads", "1"]) == 0
    err = capsys.readouterr().err
    assert len([line for line in err.splitlines() if "batches scored" in line]) >= 4  # 8 test pairs: 2 + 2

    # -q and --no-progress: no lines
    for quiet in ("-q", "--no-progress"):
        assert main(["eval", str(runs["lm"]), "--batch-size", "2", "--threads", "1", quiet]) == 0
        assert "batches scored" not in capsys.readouterr().err


def test_a_default_heartbeat_is_a_minute_apart(runs, capsys) -> None:
    assert _eval_progress.HEARTBEAT_S == 60.0
    assert main(["eval", str(runs["lm"]), "--threads", "1"]) == 0
    assert "batches scored" not in capsys.readouterr().err  # a second of work: no line


def test_on_a_terminal_eval_draws_a_bar(runs, capsys, monkeypatch) -> None:
    capsys.readouterr()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["eval", str(runs["cls"]), "--threads", "1"]) == 0
    err = capsys.readouterr().err
    assert "\r" in err and "eval: " in err and "batch" in err


@pytest.mark.parametrize(("run", "options", "named", "task"), [
    ("cls", ["--max-examples", "5"], "--max-examples applies", "a classification task (classifier model)"),
    ("lm", ["--beam", "2", "--min-length", "1"], "--beam and --min-length apply", "a lm task (lm model)"),
    ("cls", ["--length-penalty", "1", "--max-length", "4", "--no-repeat-ngram-size", "2"],
     "--length-penalty, --max-length and --no-repeat-ngram-size apply", "a classification task"),
])
def test_an_option_the_task_would_ignore_is_refused_in_one_line(runs, capsys, run, options, named, task) -> None:
    capsys.readouterr()
    before = sorted(p.name for p in runs[run].iterdir())
    assert main(["eval", str(runs[run]), *options]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"synthformer eval: error: {named} to the tasks of encoder-decoder "
                                               "models, whose evaluation can decode (seq2seq, ")
    assert task in err[0] and err[0].endswith("its options are --split, --batch-size and --checkpoint")
    assert sorted(p.name for p in runs[run].iterdir()) == before  # nothing evaluated, nothing written


def test_the_decoding_options_still_apply_to_a_seq2seq_run(runs, capsys) -> None:
    assert main(["eval", str(runs["s2s"]), "--max-examples", "3", "--beam", "1", "--threads", "1"]) == 0
    assert re.search(r"\n  decoded +3\n", capsys.readouterr().out)
