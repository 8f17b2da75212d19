"""``synthformer study`` through ``synthformer.cli.main.main``: a grid study end to end, the continue command
printed on Ctrl-C (which continues the study), and a different study refused in one line."""

from __future__ import annotations

import shlex

import pytest

import synthformer.study
from synthformer.cli import study as study_cli
from synthformer.cli.main import main
from tests.tasks.helpers import lm_config, write_yaml

pytestmark = pytest.mark.usefixtures("restore_logging")


def test_default_kinds_match_the_library() -> None:
    assert study_cli.DEFAULT_KINDS == synthformer.study.DEFAULT_KINDS


def test_grid_study_end_to_end_then_interrupt_and_continue(tmp_path, capsys, monkeypatch) -> None:
    cfg = write_yaml(tmp_path / "lm.yaml", lm_config(tmp_path, steps=4, save_every=2, eval_every=2, log_every=2))
    out = tmp_path / "grid"
    argv = ["study", str(cfg), "model.d_ff=16", "--kinds", "V,R", "--grid", "model.n_heads=1,2", "--seeds", "1",
            "--out", str(out), "--threads", "1"]
    assert main(argv) == 0
    stdout = capsys.readouterr().out
    assert "4 runs of 4 steps" in stdout and "[4/4] R model.n_heads=2 seed 0" in stdout
    assert "| Random (R), n_heads=2 | 1 |" in stdout and "| n/a |" in stdout  # one seed: no t-test
    for name in ("results.md", "results.csv", "results.json", "curves_steps.png", "curves_wall.png", "report.html",
                 "report.md", "R_model.n_heads=2/seed0/study_result.json"):
        assert (out / name).is_file(), name

    # Ctrl-C: the hint is a command that continues the same study (here: nothing left but the report)
    real = synthformer.study.run_study
    monkeypatch.setattr(synthformer.study, "run_study", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    assert main(argv) == 130
    err = capsys.readouterr().err
    hint = err.strip().splitlines()[-1]
    assert hint.startswith("continue the study with: synthformer study ")
    monkeypatch.setattr(synthformer.study, "run_study", real)
    again = shlex.split(hint.split(": ", 1)[1])[1:]
    assert "--out" in again and main(again) == 0
    assert "continued the study" in capsys.readouterr().out

    # another study into the same directory: one line naming the difference, nothing trained
    assert main([*argv[:4], "V,D", *argv[5:]]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"synthformer study: error: {out} holds a different study (kinds: ['V', 'R'] -> ['V', 'D']); "
                   "continue it with its own command, or choose another --out"]
    assert not (out / "D_model.n_heads=1").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--seeds", "0"], "--seeds must be >= 1, got 0"),
    (["--grid", "model.n_heads"], "--grid: expected KEY=V1,V2,..."),
    (["--kinds", "V,Nope"], "Nope"),
    (["--kinds", "V,Linformer"], "variant 'Linformer' cannot be built: Linformer cannot be causal"),
])
def test_bad_arguments_are_one_line_errors(tmp_path, capsys, args, message) -> None:
    cfg = write_yaml(tmp_path / "lm.yaml", lm_config(tmp_path))
    assert main(["study", str(cfg), *args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not (tmp_path / "out").exists()  # refused before the study directory is made
