"""What a user sees while runs go on without a terminal: a heartbeat line per interval (step, loss, tokens/s,
elapsed, ETA) instead of a progress bar, one line per finished model in ``compare``, rounded metric lines, and one
measured runtime of ``compare`` in the README and both ``--help`` texts. (Each test failed before its fix.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from synthformer.cli.main import main
from tests.tasks.helpers import lm_config

pytestmark = pytest.mark.usefixtures("restore_logging")


def test_compare_runtime_is_one_measured_number(capsys) -> None:
    """The README and both ``--help`` texts give one runtime, and it is the record's: the four default kinds'
    ``compare --kinds KIND`` processes together, measured at the default steps on a quiet machine."""
    from synthformer.tasks import DEFAULT_KINDS, compare_config

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    help_text = capsys.readouterr().out
    in_readme = re.search(r"speed \(about (\d+) minutes on the 2-core development CPU", readme)
    in_help = re.search(r"Python's stdlib \(~(\d+) min\)", help_text)
    with pytest.raises(SystemExit):
        main(["--help"])
    in_main_help = re.search(r"on a built-in task \(~(\d+) min\)", capsys.readouterr().out)
    assert in_readme and in_help and in_main_help
    assert in_readme.group(1) == in_help.group(1) == in_main_help.group(1)
    lines = (root / "benchmarks" / "results" / "compare.jsonl").read_text(encoding="utf-8").splitlines()
    rows = {e["row"]: e for e in map(json.loads, lines) if e.get("table") == "compare"}  # the newest entry wins
    measured = [rows[kind] for kind in DEFAULT_KINDS]
    assert {r["steps"] for r in measured} == {compare_config().train.steps}
    assert not any(r["shared_cpu"] for r in measured)
    assert round(sum(r["process_wall_s"] for r in measured) / 60) == int(in_readme.group(1))


def test_a_run_without_a_progress_bar_logs_heartbeats_and_rounded_evaluations(tmp_path: Path, caplog) -> None:
    from synthformer.common.config import from_dict
    from synthformer.tasks import RunConfig, train_run
    from synthformer.train.recording import format_metrics

    def every_step(trainer) -> None:
        trainer.heartbeat_s = 0.0  # the default is 60 s; here a line after every step

    with caplog.at_level("INFO"):
        train_run(from_dict(RunConfig, lm_config(tmp_path)), tmp_path / "run", progress=False,
                  on_trainer=every_step)
    beats = [r.getMessage() for r in caplog.records if "tokens/s, elapsed" in r.getMessage()]
    assert len(beats) == 6  # one per step of the 6
    assert re.fullmatch(r"step 6/6 \(100%\): loss \d+\.\d{4}, [\d,]+ tokens/s, elapsed \d+s, ETA 0s", beats[-1])
    # a beat right after a logged step (step 6 is one) reports that step's window, never "loss -, 0 tokens/s"
    assert all(" loss -" not in b and " 0 tokens/s" not in b for b in beats)
    evals = [r.getMessage() for r in caplog.records if " eval: " in r.getMessage()]
    assert evals and all(not re.search(r"\d\.\d{5,}", e) for e in evals)  # no 16-digit floats
    assert format_metrics({"eval_loss": 1.234567891, "eval_tokens": 12345, "eval_ppl": 12345.678}) == \
        "eval_loss 1.2346, eval_tokens 12,345, eval_ppl 12345.68"


def test_compare_without_a_terminal_prints_a_line_per_model_and_heartbeats(tmp_path: Path, capsys,
                                                                           monkeypatch) -> None:
    from synthformer.train import Trainer

    init = Trainer.__init__

    def every_step(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        self.heartbeat_s = 0.0  # the default is 60 s; here a line after every step

    monkeypatch.setattr(Trainer, "__init__", every_step)
    tiny = ["model.d_model=16", "model.n_heads=2", "model.n_layers=1", "model.d_ff=32", "task.max_len=16",
            "train.batch_size=4", "task.generator_options.max_train_chars=20000",
            "task.generator_options.max_eval_chars=2000"]
    assert main(["compare", *tiny, "--steps", "3", "--kinds", "V", "R", "--out", str(tmp_path / "cmp")]) == 0
    out, err = capsys.readouterr()
    finished = [line for line in out.splitlines() if re.match(r"  \[\d/2\] .*val loss", line)]
    assert [line.split()[1] for line in finished] == ["V:", "R:"]  # one line as each model finishes
    beats = [line for line in err.splitlines() if "tokens/s, elapsed" in line]
    assert len(beats) == 6 and "[2/2] R: step 3/3 (100%)" in beats[-1]  # at the default log level, on stderr
