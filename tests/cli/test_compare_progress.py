"""``synthformer compare`` says where it is: which kind trains (``[2/3] R``), the ETA of the whole comparison (the
kinds to come at the mean wall time of the finished ones), and the thread count, at the start, under the table
and in the saved table."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from synthformer.cli._compare_progress import ComparisonProgress, HeartbeatFilter, duration, parse_duration
from synthformer.cli.main import main

pytestmark = pytest.mark.usefixtures("restore_logging")

TINY = ["model.d_model=16", "model.n_heads=2", "model.n_layers=1", "model.d_ff=32", "task.max_len=16",
        "train.batch_size=4", "task.generator_options.max_train_chars=20000",
        "task.generator_options.max_eval_chars=2000"]


def test_the_whole_comparisons_eta_is_the_finished_kinds_mean_wall_time_per_kind_to_come() -> None:
    where = ComparisonProgress(["V", "R", "D", "R+V"])
    assert where.label == "[1/4] V" and where.eta() is None  # nothing measured yet
    # the first kind, 30 s in with 90 s left: three more kinds of its projected 120 s
    assert where.eta(90.0, 30.0) == (90.0 + 3 * 120.0, "3 more kinds x 120 s, this kind's projected wall time")
    where.finish(0, 100.0)
    where.finish(1, 60.0)
    assert where.label == "[3/4] D"
    assert where.eta() == (160.0, "2 more kinds x 80 s, the 2 finished kinds' mean wall time")
    assert where.eta(10.0, 50.0) == (90.0, "1 more kind x 80 s, the 2 finished kinds' mean wall time")
    assert [parse_duration(duration(s)) for s in (7, 65, 3720)] == [7, 65, 3720]
    assert parse_duration("soon") is None


def test_heartbeat_lines_name_the_kind_and_the_comparisons_eta() -> None:
    where = ComparisonProgress(["V", "R"])
    record = logging.LogRecord("synthformer.train.recording", logging.INFO, __file__, 1,
                               "step %d/%d (%.0f%%): loss %s, %s tokens/s, elapsed %s, ETA %s",
                               (10, 40, 25.0, "2.1000", "1,000", "1m00s", "3m00s"), None)
    assert HeartbeatFilter(where).filter(record)
    assert record.getMessage() == ("[1/2] V: step 10/40 (25%): loss 2.1000, 1,000 tokens/s, elapsed 1m00s, "
                                   "ETA 3m00s (this kind); comparison ETA 7m00s (1 more kind x 240 s, this kind's "
                                   "projected wall time)")


def test_compare_prints_the_kind_the_eta_and_the_threads(tmp_path: Path, capsys, monkeypatch) -> None:
    from synthformer.train import Trainer

    init = Trainer.__init__

    def every_step(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        self.heartbeat_s = 0.0  # the default is 60 s; here a line after every step

    monkeypatch.setattr(Trainer, "__init__", every_step)
    out_dir = tmp_path / "cmp"
    argv = ["compare", *TINY, "--steps", "3", "--kinds", "V", "R", "D", "--out", str(out_dir), "--threads", "1"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[1].startswith("threads: 1 (--threads 1")
    assert "  [1/3] V: training (after the data is prepared); the comparison's ETA follows it" in lines
    assert "  [2/3] R: training" in lines and "  [3/3] D: training" in lines
    done = [line for line in lines if "val loss" in line]
    assert re.fullmatch(r"  \[1/3\] V: .* \(\d+ s\); comparison ETA \S+ \(2 more kinds x \d+ s, the finished "
                        r"kind's wall time\)", done[0]), done[0]
    assert "the 2 finished kinds' mean wall time" in done[1] and "comparison ETA" not in done[2]
    beats = [line for line in err.splitlines() if "tokens/s, elapsed" in line]
    assert len(beats) == 9
    assert "[1/3] V: step 1/3" in beats[0] and "this kind's projected wall time" in beats[0]
    assert "[3/3] D: step 3/3 (100%)" in beats[-1] and "comparison ETA 0s (0 more kinds" in beats[-1]
    footer = ("threads: 1; the recorded numbers (docs/results/compare.md) are for the default threads (one per "
              "core): another count changes the last digits")
    assert footer in lines and lines.index(footer) > lines.index(done[-1])
    assert (out_dir / "comparison.md").read_text(encoding="utf-8").rstrip().endswith(footer)
    assert json.loads((out_dir / "comparison.json").read_text(encoding="utf-8"))["settings"]["threads"] == 1


def test_a_busy_machine_is_named_in_the_threads_line(tmp_path: Path, capsys, monkeypatch) -> None:
    from synthformer.cli import _compare_progress

    monkeypatch.setattr(_compare_progress.os, "getloadavg", lambda: (9.0, 9.0, 9.0))
    note = _compare_progress.threads_note(2, None)
    assert note.startswith("2 (the default: one per core; the machine is busy: load 9.0 on ")
