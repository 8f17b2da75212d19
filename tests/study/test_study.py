"""A study end to end on tiny runs: resuming between runs and inside a run gives the same table, finished runs are
not trained again, and the figures and the report are complete."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from synthformer.study import StudySpec, run_dir_of, run_study, write_outputs
from synthformer.study.runs import read_clock
from synthformer.tasks import RunConfig, load_run_config
from tests.tasks.helpers import lm_config, write_yaml

KINDS = ["V", "R"]
#: one pytest-xdist worker runs the module: the study of the module fixture is run once
pytestmark = pytest.mark.xdist_group("study-runs")


def base_config(tmp: Path) -> RunConfig:
    cfg = write_yaml(tmp / "lm.yaml", lm_config(tmp, steps=4, save_every=2, eval_every=2, log_every=2))
    return load_run_config(cfg)


def numbers(table) -> list[tuple]:
    """Everything in the table that does not depend on timing."""
    return [(r.variant, r.seeds, r.valid, r.valid_mean, r.valid_std, r.valid_loss_mean, r.parameters, r.diff,
             r.p_value) for r in table.rows]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """An uninterrupted study: 2 kinds x 2 seeds x 4 steps, with its outputs."""
    import torch

    torch.set_num_threads(1)
    tmp = tmp_path_factory.mktemp("study")
    base = base_config(tmp)
    spec = StudySpec.from_run(base, KINDS, [], 2)
    result = run_study(base, spec, tmp / "out")
    return base, spec, result, write_outputs(result)


class Stop(Exception):
    pass


def test_study_killed_between_runs_resumes_to_the_same_table(study, tmp_path) -> None:
    _, _, _, outputs = study
    base = base_config(tmp_path)
    spec = StudySpec.from_run(base, KINDS, [], 2)
    out = tmp_path / "out"

    def stop_after_two(done, total, record, read_back) -> None:
        if done == 2:
            raise Stop  # as a kill between the 2nd and the 3rd run

    with pytest.raises(Stop):
        run_study(base, spec, out, on_run=stop_after_two)
    finished = [run_dir_of(out, v, 0) for v in spec.variants]
    assert not run_dir_of(out, spec.variants[0], 1).exists()
    mtimes = {p: p.stat().st_mtime_ns for d in finished for p in (d / "checkpoints").rglob("*")}
    assert mtimes

    seen = []
    result = run_study(base, spec, out, on_run=lambda done, total, record, read_back: seen.append(read_back))
    assert result.continued and seen == [True, True, False, False]
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes  # the finished runs were not trained again
    assert numbers(write_outputs(result).table) == numbers(outputs.table)


def test_half_finished_run_resumes_from_its_checkpoint(study, tmp_path) -> None:
    _, _, _, outputs = study
    base = base_config(tmp_path)
    spec = StudySpec.from_run(base, KINDS, [], 2)
    out = tmp_path / "out"
    starts = []

    def interrupt_at_step_3(trainer) -> None:
        starts.append(trainer.step)
        train_step = trainer._train_step

        def step():
            if trainer.step == 3:
                raise KeyboardInterrupt  # Ctrl-C in step 4: the trainer saves step 3
            return train_step()

        trainer._train_step = step

    with pytest.raises(KeyboardInterrupt):
        run_study(base, spec, out, on_trainer=interrupt_at_step_3)
    first = run_dir_of(out, spec.variants[0], spec.seeds[0])
    assert (first / "checkpoints").is_dir() and not (first / "study_result.json").exists()
    assert read_clock(first)[-1]["step"] == 3

    result = run_study(base, spec, out, on_trainer=lambda trainer: starts.append(trainer.step))
    assert starts == [0, 3, 0, 0, 0]  # the half-finished run continued from its step-3 checkpoint
    assert numbers(write_outputs(result).table) == numbers(outputs.table)
    clock = read_clock(first)
    assert [r["step"] for r in clock] == sorted(r["step"] for r in clock)  # no record of a lost step is left
    assert clock[-1]["wall_s"] > 0


def test_each_run_keeps_its_clock_and_result_beside_the_run_files(study) -> None:
    import json

    _, spec, result, _ = study
    for record in result.records:
        run_dir = Path(record.run_dir)
        clock = read_clock(run_dir)
        # eval_every=2, save_every=2, 4 steps: a record after each evaluation and each checkpoint
        assert [r["step"] for r in clock] == [2, 2, 4, 4]
        assert all(set(r) == {"step", "wall_s", "pause_s"} for r in clock)
        walls, pauses = [r["wall_s"] for r in clock], [r["pause_s"] for r in clock]
        assert walls == sorted(walls) and pauses == sorted(pauses) and 0 < pauses[-1] < walls[-1]
        assert record.wall_seconds == walls[-1]
        saved = json.loads((run_dir / "study_result.json").read_text(encoding="utf-8"))
        assert saved == record.to_json() and saved["run_dir"] == str(run_dir)


def test_another_study_into_the_same_directory_is_refused(study) -> None:
    from synthformer.train import RunError

    base, spec, result, _ = study
    other = StudySpec.from_run(base, ["V", "D"], [], 2)
    with pytest.raises(RunError, match=r"holds a different study \(kinds: \['V', 'R'\] -> \['V', 'D'\]\)"):
        run_study(base, other, result.out)


def test_figures_are_png_images_of_the_expected_size_with_content(study) -> None:
    from matplotlib.image import imread

    from synthformer.study.curves import FIGURE_DPI, FIGURE_SIZE
    from synthformer.study.runs import eval_curve

    _, _, result, outputs = study
    for record in result.records:  # the points: every evaluation, at its training time (evaluations left out)
        curve = eval_curve(Path(record.run_dir), "bits_per_character")
        assert [step for step, _, _ in curve] == [2, 4] and curve[-1][2] == record.valid_metric
        assert 0 < curve[0][1] < curve[1][1] < record.wall_seconds
    assert [p.name for p in outputs.figures] == ["curves_steps.png", "curves_wall.png"]
    for path in outputs.figures:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        pixels = imread(path)
        assert pixels.shape[:2] == (FIGURE_SIZE[1] * FIGURE_DPI, FIGURE_SIZE[0] * FIGURE_DPI)
        assert pixels[..., :3].std() > 0.01


def test_report_embeds_every_table_and_figure(study) -> None:
    _, spec, result, outputs = study
    html = outputs.html.read_text(encoding="utf-8")
    assert html.count('<table class="results">') == 1 and html.count('<table class="runs">') == 1
    assert "Vanilla (V)" in html and "Random (R)" in html and "p (Welch)" in html
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert [base64.b64decode(i) for i in images] == [p.read_bytes() for p in outputs.figures]
    for record in result.records:
        assert record.run_dir in html
    md = outputs.markdown.read_text(encoding="utf-8")
    assert (outputs.tables["md"].read_text(encoding="utf-8").strip() in md)
    assert all(f"]({p.name})" in md for p in outputs.figures)
    assert len(result.records) == len(spec.variants) * len(spec.seeds) == 4
    assert all(r.steps_per_second > 0 and r.wall_seconds > 0 and r.test_metric is None for r in result.records)


def test_classifier_study_sets_the_encoder_kind_and_scores_the_test_split(tmp_path, capsys) -> None:
    from synthformer.study.table import format_markdown
    from synthformer.tasks import load_run
    from tests.tasks.helpers import classification_config

    cfg = write_yaml(tmp_path / "cls.yaml", classification_config(tmp_path, steps=2, save_every=2, eval_every=2))
    base = load_run_config(cfg)
    spec = StudySpec.from_run(base, ["vanilla", "dense+vanilla"], [], 1)  # long names: the paper's spelling
    assert spec.kinds == ["V", "D+V"]
    result = run_study(base, spec, tmp_path / "out", progress=True)
    assert "study" in capsys.readouterr().err  # the bar over the runs
    assert load_run(result.records[1].run_dir).config.model_section["encoder_kind"] == "D+V"
    assert all(r.metric == "accuracy" and r.test_metric is not None for r in result.records)
    table = write_outputs(result).table
    assert table.has_test and "test accuracy" in format_markdown(table)


def test_main_metric_is_the_comparison_metric_when_the_run_reports_it(tmp_path) -> None:
    from synthformer.study.runner import main_metric
    from tests.tasks.helpers import classification_config, seq2seq_config

    assert main_metric(base_config(tmp_path)) == "bits_per_character"
    assert main_metric(load_run_config(write_yaml(tmp_path / "c.yaml", classification_config(tmp_path)))) == "accuracy"
    # the algorithmic generator reports exact match and chrF, not the seq2seq type's BLEU
    assert main_metric(load_run_config(write_yaml(tmp_path / "s.yaml", seq2seq_config()))) == "exact_match"


def test_a_study_another_process_is_running_is_refused(study) -> None:
    import subprocess
    import sys

    from synthformer.train import RunError

    base, spec, result, _ = study
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from synthformer.train import RunDir; "
         "lock = RunDir(sys.argv[1]).lock(); print('held', flush=True); time.sleep(60)", str(result.out)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunError, match=r"^study directory .* is in use by another process"):
            run_study(base, spec, result.out)
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("other_finishes", [True, False])
def test_processes_sharing_a_study_skip_the_runs_another_holds(study, tmp_path, monkeypatch, other_finishes) -> None:
    """A run whose lock another process holds is left to it: read back once it wrote its record, or taken over
    once its lock is free and no record came (the other process died); the table is the uninterrupted one's."""
    import shutil

    from synthformer.study import runner
    from synthformer.study.runs import read_record
    from synthformer.train import RunDir, RunError

    base, spec, uninterrupted, outputs = study
    out = tmp_path / "out"
    held = run_dir_of(out, spec.variants[1], 0)  # R, seed 0: "the other process" is training it
    looks = []
    real_lock = RunDir.lock

    def lock(self, **kwargs):
        if Path(self.path) == held:
            looks.append(len(looks))
            if len(looks) < 3:  # held on the first pass and on the first look while waiting
                raise RunError(f"run directory {held} is in use by another process")
            if other_finishes and len(looks) == 3:
                pytest.fail("a run the other process finished was locked again instead of read back")
        return real_lock(self, **kwargs)

    def sleep(seconds):
        if other_finishes and len(looks) == 2:  # the other process finishes: its run directory appears
            source = Path(next(r.run_dir for r in uninterrupted.records if r.variant == "R" and r.seed == 0))
            shutil.copytree(source, held, dirs_exist_ok=True)
            record = read_record(held)
            (held / "study_result.json").write_text(
                (source / "study_result.json").read_text().replace(str(source), str(held)))
            assert record is not None

    monkeypatch.setattr(RunDir, "lock", lock)
    monkeypatch.setattr(runner.time, "sleep", sleep)
    trained = []
    order = []
    result = run_study(base, spec, out, on_trainer=lambda trainer: trained.append(trainer),
                       on_run=lambda done, total, record, read_back: order.append((record.variant, record.seed,
                                                                                   read_back)))
    assert order[:3] == [("V", 0, False), ("V", 1, False), ("R", 1, False)]  # R seed 0 skipped, not waited on
    assert order[3] == ("R", 0, other_finishes)  # read back, or trained here after the other process died
    assert len(trained) == (3 if other_finishes else 4)
    assert [(r.variant, r.seed) for r in result.records] == [("V", 0), ("R", 0), ("V", 1), ("R", 1)]
    assert numbers(write_outputs(result).table) == numbers(outputs.table)
