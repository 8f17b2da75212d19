"""RunDir: file names, an earlier run, check/clear, metrics files, and the lock between processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from toymodels import CountingDataset, ToyLM

from synthformer.data.tokenization import TOKENIZER_FILE
from synthformer.train import RunDir, RunError, RunExistsError, TrainConfig, Trainer, runlock

needs_fcntl = pytest.mark.skipif(runlock.fcntl is None, reason="fcntl locks (POSIX)")


def make_trainer(run_dir, steps: int = 1, **kwargs) -> Trainer:
    cfg = TrainConfig(steps=steps, batch_size=4, lr=1e-2)
    return Trainer(ToyLM(), CountingDataset(16), cfg, run_dir, progress=False, **kwargs)


def fake_checkpoint(run, step: int) -> None:
    ckpt = run / "checkpoints" / f"step_{step:06d}"
    ckpt.mkdir(parents=True)
    (ckpt / "trainer_state.json").write_text(json.dumps({"step": step}))


def full_run(run) -> None:
    """Every file a run directory can hold, plus a user's own files."""
    run.mkdir(exist_ok=True)
    fake_checkpoint(run, 4)
    (run / "tensorboard").mkdir()
    for name in ("config.yaml", "metrics.jsonl", "synthformer_tokenizer.json", "model_config.json", "labels.json",
                 "eval_test.json", "eval_test_hypotheses.txt", "notes.txt", "eval_notes.md"):
        (run / name).write_text("x\n")


def test_file_names_are_those_earlier_versions_wrote(tmp_path):
    rd = RunDir(tmp_path)
    names = {p.name for p in (rd.config_path, rd.metrics_path, rd.checkpoints_path, rd.tensorboard_path,
                              rd.tokenizer_path, rd.model_config_path, rd.labels_path)}
    assert names == {"config.yaml", "metrics.jsonl", "checkpoints", "tensorboard", "synthformer_tokenizer.json",
                     "model_config.json", "labels.json"}
    assert rd.eval_path("test") == tmp_path / "eval_test.json"
    assert rd.hypotheses_path("valid") == tmp_path / "eval_valid_hypotheses.txt"
    # the data package's default name for a tokenizer saved into a directory is the run directory's
    assert TOKENIZER_FILE == RunDir.TOKENIZER
    with pytest.raises(RunError, match=r"invalid split name '\.\./x'"):
        rd.eval_path("../x")


def test_earlier_run_lists_what_is_there(tmp_path):
    rd = RunDir(tmp_path / "run")
    assert rd.earlier_run() == []  # missing directory
    rd.path.mkdir()
    (rd.path / "config.yaml").write_text("steps: 1\n")
    (rd.path / "metrics.jsonl").write_text("")  # empty: nothing to lose
    (rd.path / "notes.txt").write_text("mine")
    (rd.path / "checkpoints").mkdir()
    (rd.path / "checkpoints" / ".tmp-step_000001-x").mkdir()  # a crashed save's temporary only
    assert rd.earlier_run() == []
    full_run(rd.path)
    assert rd.earlier_run() == ["checkpoints/ (1 checkpoint)", "metrics.jsonl", "synthformer_tokenizer.json",
                                "model_config.json", "labels.json", "eval_test.json", "eval_test_hypotheses.txt"]
    assert rd.earlier_run(training_only=True) == ["checkpoints/ (1 checkpoint)", "metrics.jsonl"]
    assert rd.latest_checkpoint() == rd.checkpoints_path / "step_000004"
    assert rd.list_checkpoints() == [rd.checkpoints_path / "step_000004"]


def test_check_refuses_an_earlier_run_unless_asked(tmp_path):
    rd = RunDir(tmp_path)
    assert rd.check() == []
    (tmp_path / "model_config.json").write_text("{}")
    with pytest.raises(RunExistsError, match=r"already holds a run \(model_config.json\); pass --resume") as err:
        rd.check()
    assert isinstance(err.value, FileExistsError) and isinstance(err.value, RunError)
    assert str(tmp_path) in str(err.value)
    assert rd.check(resume=True) == rd.check(overwrite=True) == ["model_config.json"]
    assert rd.check(training_only=True) == []  # the trainer's view: a pipeline's own files are not a run
    with pytest.raises(RunError, match="contradict"):
        rd.check(resume=True, overwrite=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunError, match=r"run directory .*file exists and is not a directory"):
        RunDir(tmp_path / "file").check()


def test_clear_deletes_the_runs_files_and_nothing_else(tmp_path):
    full_run(tmp_path)
    RunDir(tmp_path).clear(training_only=True)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["config.yaml", "eval_notes.md", "eval_test.json", "eval_test_hypotheses.txt", "labels.json",
                    "model_config.json", "notes.txt", "synthformer_tokenizer.json"]
    RunDir(tmp_path).clear()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml", "eval_notes.md", "notes.txt"]
    assert RunDir(tmp_path).earlier_run() == []
    RunDir(tmp_path / "missing").clear()  # nothing to do
    assert not (tmp_path / "missing").exists()


def test_metrics_append_and_truncate(tmp_path):
    rd = RunDir(tmp_path)
    rd.truncate_metrics(3)  # no file yet: nothing to do
    assert not rd.metrics_path.exists()
    for step in (2, 4, 6):
        rd.append_metrics({"step": step, "loss": 1.0 / step})
    with open(rd.metrics_path, "a") as fh:
        fh.write('{"step": 8, "lo')  # a line cut short by a crash
    rd.truncate_metrics(4)
    assert [json.loads(x)["step"] for x in rd.metrics_path.read_text().splitlines()] == [2, 4]


@needs_fcntl
def test_lock_is_reentrant_and_leaves_nothing_behind(tmp_path):
    rd = RunDir(tmp_path / "new")
    with rd.lock() as outer:
        assert outer.held and rd.locked_by_this_process() and (rd.path / ".lock").is_file()
        inner = RunDir(tmp_path / "new").lock()  # the trainer inside a pipeline that holds the directory
        inner.release()
        inner.release()  # idempotent
        assert rd.locked_by_this_process()
        assert rd.earlier_run() == []  # the lock file is not a run
    assert not outer.held and not rd.locked_by_this_process()
    assert not rd.path.exists()  # created for the lock and left empty: removed again
    with pytest.raises(RunError, match="exists and is not a directory"):
        (tmp_path / "file").write_text("x")
        RunDir(tmp_path / "file").lock()


def test_lock_only_on_the_main_process(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    with RunDir(tmp_path / "run").lock() as lock:
        assert not lock.held and not (tmp_path / "run").exists()
    monkeypatch.setenv("RANK", "0")
    with RunDir(tmp_path / "run").lock(enabled=False) as lock:
        assert not lock.held
    with RunDir(tmp_path / "run").lock() as lock:
        assert lock.held


@needs_fcntl
@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_forked_child_neither_holds_nor_releases_the_parents_lock(tmp_path):
    rd = RunDir(tmp_path)
    with rd.lock() as lock:
        pid = os.fork()
        if pid == 0:  # the child, as a data loader worker would be
            code = 3
            try:
                lock.release()  # must neither unlock nor delete the parent's lock
                code = 1 if rd.locked_by_this_process() or not (tmp_path / ".lock").is_file() else 2
                RunDir(tmp_path).lock()  # the parent holds it: this must fail
            except RunError:
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert (tmp_path / ".lock").is_file() and rd.locked_by_this_process()
    assert not (tmp_path / ".lock").exists()


HOLDER = textwrap.dedent("""
    import sys, time
    from synthformer.train import RunDir
    lock = RunDir(sys.argv[1]).lock()
    print("locked", flush=True)
    time.sleep(120)
""")


@needs_fcntl
def test_a_second_process_fails_fast_and_a_killed_one_blocks_nothing(tmp_path):
    run = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(run)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunError, match=rf"run directory {run} is in use by another process \(pid {holder.pid} "):
            RunDir(run).lock()
        # the trainer takes the lock: a second training into the directory fails before touching anything
        with pytest.raises(RunError, match="in use by another process"):
            make_trainer(run, steps=1)
        assert sorted(p.name for p in run.iterdir()) == [".lock"]
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        holder.stdout.close()
    assert (run / ".lock").is_file()  # a killed process leaves its lock file, which the kernel has unlocked
    trainer = make_trainer(run, steps=1)
    trainer.train()
    assert RunDir(run).locked_by_this_process()
    trainer.close()
    assert not RunDir(run).locked_by_this_process() and not (run / ".lock").exists()
    assert RunDir(run).latest_checkpoint() is not None


def test_a_failed_trainer_leaves_no_directory_and_no_lock(tmp_path):
    with pytest.raises(RunError, match="contradict"):
        make_trainer(tmp_path / "run", resume=True, overwrite=True)
    assert not (tmp_path / "run").exists()
    assert not RunDir(tmp_path / "run").locked_by_this_process()


def test_trainer_overwrite_keeps_the_pipelines_files(tmp_path):
    full_run(tmp_path)
    with make_trainer(tmp_path, steps=1, overwrite=True) as trainer:
        assert RunDir(tmp_path).list_checkpoints() == []
        assert (tmp_path / "synthformer_tokenizer.json").is_file() and (tmp_path / "eval_test.json").is_file()
        trainer.train()
    assert os.listdir(tmp_path).count(".lock") == 0


def test_a_prepared_run_dir_is_left_to_its_owner(tmp_path):
    """prepared=True (the task pipeline): the owner locked, checked, cleared and created the directory and wrote
    config.yaml; the trainer neither locks it nor writes config.yaml, and refuses nothing it finds there."""
    run = tmp_path / "run"
    rd = RunDir(run)
    with rd.lock():  # the owner's lock
        (run / "config.yaml").write_text("owner: wrote this\n")
        trainer = make_trainer(rd, prepared=True)
        with trainer:
            trainer.train()
        assert rd.locked_by_this_process()  # closing the trainer did not release the owner's lock
    assert (run / "config.yaml").read_text() == "owner: wrote this\n"
    assert rd.latest_checkpoint() is not None and rd.metrics_path.is_file()  # its own records, as always


def test_a_trainer_on_its_own_prepares_its_run_dir(tmp_path):
    with make_trainer(tmp_path / "run") as trainer:
        assert trainer.rundir.locked_by_this_process()
        trainer.train()
    assert (tmp_path / "run" / "config.yaml").is_file() and not trainer.rundir.locked_by_this_process()
