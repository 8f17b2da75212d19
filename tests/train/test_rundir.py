"""RunDir and Run: file names, an earlier run, check/clear, metrics files, and the lock between processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from toymodels import CountingDataset, ToyLM, open_run

from synthformer.data.tokenization import TOKENIZER_FILE
from synthformer.train import Run, RunDir, RunError, RunExistsError, TrainConfig, Trainer, runlock
from synthformer.train.resume import check_earlier_run

needs_fcntl = pytest.mark.skipif(runlock.fcntl is None, reason="fcntl locks (POSIX)")


def make_trainer(run_dir, steps: int = 1, *, resume: bool = False, overwrite: bool = False) -> Trainer:
    cfg = TrainConfig(steps=steps, batch_size=4, lr=1e-2)
    return Trainer(ToyLM(), CountingDataset(16), cfg, open_run(run_dir, resume=resume, overwrite=overwrite),
                   progress=False)


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
    assert check_earlier_run(rd) == []
    (tmp_path / "model_config.json").write_text("{}")
    with pytest.raises(RunExistsError, match=r"already holds a run \(model_config.json\); pass --resume") as err:
        check_earlier_run(rd)
    assert isinstance(err.value, FileExistsError) and isinstance(err.value, RunError)
    assert str(tmp_path) in str(err.value)
    assert check_earlier_run(rd, resume=True) == check_earlier_run(rd, overwrite=True) == ["model_config.json"]
    assert check_earlier_run(rd, training_only=True) == []  # a Trainer on its own: task files are not its run
    with pytest.raises(RunError, match="contradict"):
        check_earlier_run(rd, resume=True, overwrite=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunError, match=r"run directory .*file exists and is not a directory"):
        check_earlier_run(RunDir(tmp_path / "file"))


def test_overwrite_deletes_the_runs_files_and_nothing_else_when_the_run_starts(tmp_path):
    full_run(tmp_path)
    with Run.open(tmp_path, overwrite=True, training_only=True) as run:
        assert RunDir(tmp_path).list_checkpoints() != []  # opening deletes nothing: the run may still fail
        run.start({"steps": 1})
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["config.yaml", "eval_notes.md", "eval_test.json", "eval_test_hypotheses.txt", "labels.json",
                    "model_config.json", "notes.txt", "synthformer_tokenizer.json"]
    full_run(tmp_path / "full")
    with Run.open(tmp_path / "full", overwrite=True) as run:
        run.start({"steps": 1})
    assert sorted(p.name for p in (tmp_path / "full").iterdir()) == ["config.yaml", "eval_notes.md", "notes.txt"]
    assert RunDir(tmp_path / "full").earlier_run() == []


def test_metrics_append_and_truncate(tmp_path):
    rd = RunDir(tmp_path)
    run = Run.open(tmp_path, resume=True)
    run.truncate_metrics(3)  # no file yet: nothing to do
    assert not rd.metrics_path.exists()
    for step in (2, 4, 6):
        run.append_metrics({"step": step, "loss": 1.0 / step})
    with open(rd.metrics_path, "a") as fh:
        fh.write('{"step": 8, "lo')  # a line cut short by a crash
    run.truncate_metrics(4)
    run.close()
    assert [json.loads(x)["step"] for x in rd.metrics_path.read_text().splitlines()] == [2, 4]


@needs_fcntl
def test_lock_is_held_once_and_leaves_nothing_behind(tmp_path):
    rd = RunDir(tmp_path / "new")
    with rd.lock() as outer:
        assert outer.held and rd.locked_by_this_process() and (rd.path / ".lock").is_file()
        # one owner: a second hold in the same process is refused (its release would unlock the first)
        with pytest.raises(RunError, match="already held by this process: hand its open Run"):
            RunDir(tmp_path / "new").lock()
        with pytest.raises(RunError, match="already held by this process"):
            Run.open(tmp_path / "new")
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
        # opening the run takes the lock: a second training into the directory fails before touching anything
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
    trainer.run.close()  # its opener's part
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
    trainer.run.close()
    assert os.listdir(tmp_path).count(".lock") == 0


def test_a_run_started_by_its_opener_is_only_recorded_into_by_the_trainer(tmp_path):
    """The task pipeline's way: the opener starts the run with its own config.yaml; the trainer's start is then a
    no-op (config.yaml stays), it adds its records, and closing it leaves the run to its opener."""
    run = tmp_path / "run"
    with Run.open(run) as owner:
        owner.start({"owner": "wrote this"})
        trainer = Trainer(ToyLM(), CountingDataset(16), TrainConfig(steps=1, batch_size=4, lr=1e-2), owner,
                          progress=False)
        with trainer:
            trainer.train()
        assert owner.rundir.locked_by_this_process()  # closing the trainer did not release the opener's lock
    assert (run / "config.yaml").read_text() == "owner: wrote this\n"
    assert RunDir(run).latest_checkpoint() is not None and RunDir(run).metrics_path.is_file()
    assert not RunDir(run).locked_by_this_process()


def test_a_trainer_on_its_own_starts_its_run(tmp_path):
    with Run.open(tmp_path / "run") as run:
        with Trainer(ToyLM(), CountingDataset(16), TrainConfig(steps=1, batch_size=4), run, progress=False) as trainer:
            assert trainer.rundir.locked_by_this_process()
            trainer.train()
    assert (tmp_path / "run" / "config.yaml").is_file() and not trainer.rundir.locked_by_this_process()
