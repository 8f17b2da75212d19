"""Long runs with real processes: SIGTERM and SIGUSR1 (a batch system's preemption notice) mid-step and mid-save,
SIGTERM to one of two torchrun processes, SIGKILL of one of two gloo processes mid-step and mid-save; a real run that
blows up without NaN (``train.lr=1e4``) and the same run at its own rate, which never meets the spike check; and
the best checkpoint through the command line (``eval --checkpoint best``, ``init_from: RUN@best``).

Every signal is real: the launcher (longrun_launcher.py) makes the process send it to itself at an exact point
(the N-th training forward pass, or right after a checkpoint's weights are written), through the real handlers.
The cases are rows of docs/reliability.md's "Long runs" table (long_runs.py).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from synthformer.cli.main import main
from synthformer.train import latest_checkpoint, list_checkpoints, load_checkpoint
from tests.tasks.helpers import lm_config, write_yaml
from tests.two_processes import rewind

from .long_runs import cases
from .test_faults import final_weights, uninterrupted  # noqa: F401 - uninterrupted: the fixture

pytestmark = [pytest.mark.usefixtures("restore_logging"),
              pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]

LAUNCHER = Path(__file__).with_name("longrun_launcher.py")
TIMEOUT_S = 30  # train.collective_timeout_s of the two-process runs
QUIET = ["--no-progress", "-q"]


def launch(spec: list[dict], out: Path, torchrun: bool = False) -> subprocess.Popen[str]:
    """Start the launcher on ``spec`` (see longrun_launcher.py), writing its records to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "spec.json").write_text(json.dumps(spec))
    start = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"] if torchrun else [
        sys.executable]
    return subprocess.Popen([*start, str(LAUNCHER), str(out / "spec.json"), str(out)], text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def run_spec(argv: list, inject: list | None = None) -> dict:
    return {"argv": [str(a) for a in argv], "inject": inject}


def codes(out: Path, rank: int) -> list[int]:
    return json.loads((out / f"rc-{rank}.json").read_text())


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def intact(run: Path) -> None:
    """Every listed checkpoint of ``run`` loads (weights, optimizer, RNG and trainer state)."""
    for ckpt in list_checkpoints(run):
        loaded = load_checkpoint(ckpt)
        assert loaded.rng_states and loaded.trainer_state["step"] == int(ckpt.name.split("_")[1])


# -- one process: SIGTERM mid-step, then SIGUSR1 mid-save, then the end ----------------------------------------------


def test_sigterm_and_sigusr1_finish_the_step_save_and_exit_75_then_resume_exactly(uninterrupted, tmp_path):  # noqa: F811
    assert cases("signal-one") == ("sigterm-step", "sigusr1-save")
    cfg, expected = uninterrupted  # 6 steps, a checkpoint every 2
    run = tmp_path / "run"
    train = ["train", cfg, "--run-dir", run, *QUIET]
    spec = [run_spec(train, ["SIGTERM", 0, "step", 3]),                      # during step 3
            run_spec([*train, "--resume"], ["SIGUSR1", 0, "save", 1]),       # while step 4's checkpoint is written
            run_spec([*train, "--resume"])]
    proc = launch(spec, tmp_path / "out")
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0 and codes(tmp_path / "out", 0) == [75, 75, 0], err
    stops = [line for line in err.splitlines() if line.startswith("synthformer train: stopped")]
    assert stops == [f"synthformer train: stopped by {name} at step {step}; its checkpoint is saved; continue with: "
                     f"synthformer train {cfg} --run-dir {run} --resume"
                     for name, step in (("SIGTERM", 3), ("SIGUSR1", 4))], err
    assert "Traceback" not in err
    assert same(final_weights(run), expected)  # as if never stopped
    intact(run)


# -- a blow-up without NaN: a real run at lr 1e4 (3.58 at step 1, 1.1e9 from step 2 on, every number finite) -------


def finite_on_disk(run: Path) -> bool:
    from safetensors.torch import load_file

    return all(torch.isfinite(t).all() for ckpt in list_checkpoints(run)
               for t in load_file(str(ckpt / "model.safetensors")).values())


@pytest.mark.parametrize("case", cases("blow-up"))
def test_a_run_that_blows_up_without_nan_stops_in_one_line(tmp_path, capsys, case):
    cfg = write_yaml(tmp_path / "lm.yaml", lm_config(tmp_path, steps=30, save_every=3, eval_every=0))
    run = tmp_path / "run"
    skip = ["train.nonfinite=skip"] if case == "lr-1e4-skip" else []
    assert main(["train", str(cfg), "train.lr=1e4", *skip, "--run-dir", str(run), *QUIET]) == 2
    err = capsys.readouterr().err
    last = err.rstrip("\n").splitlines()[-1]
    assert "Traceback" not in err and "a loss spike" in last and "train.spike_factor 10" in last, err
    if skip:  # each skipped step leaves the blown-up weights of step 1's update: 10 in a row stop the run
        assert last.startswith("synthformer train: error: step 11: the loss "), err
        assert "(10 skipped steps in a row, train.nonfinite_limit 10)" in last
        assert "every checkpoint holds the weights that gave this loss (unchanged since the update of step 1)" in last
        assert [p.name for p in list_checkpoints(run)][-1] == "step_000009"
    else:
        assert last.startswith("synthformer train: error: step 2: the loss "), err
        assert "there is no checkpoint yet" in last and not list_checkpoints(run)
    assert finite_on_disk(run)
    intact(run)


def test_the_same_run_at_its_own_lr_never_meets_the_spike_check(tmp_path, capsys):
    cfg = write_yaml(tmp_path / "lm.yaml", lm_config(tmp_path, steps=30, save_every=0, eval_every=0, log_every=1))
    run = tmp_path / "run"
    assert main(["train", str(cfg), "--run-dir", str(run), *QUIET]) == 0, capsys.readouterr().err
    losses = [json.loads(x)["loss"] for x in (run / "metrics.jsonl").read_text().splitlines() if '"loss"' in x]
    assert len(losses) == 30 and "skipped_steps" not in load_checkpoint(run).trainer_state
    assert max(loss / max(losses[:i]) for i, loss in enumerate(losses) if i) < 1.2  # the factor is 10


# -- two processes ---------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def two_runs(specs: list[tuple[list[dict], Path]], folder: Path) -> list[tuple[int, str]]:
    """Each spec run by two processes, all at once, each given the environment torchrun gives its workers (as a
    SLURM script that starts one task per process does): what each process ended with (its exit status, or minus
    its signal) and its stderr, in the order of ``specs`` and of the ranks.

    The processes are forked from one launcher process that has imported torch and synthformer (longrun_launcher.py
    ``--fork``): each is a process of its own, with its own signals, sockets and end; only the imports (about 5 s of
    CPU a process) are not paid once per process."""
    processes = []
    for spec, out in specs:
        out.mkdir(parents=True, exist_ok=True)
        (out / "spec.json").write_text(json.dumps(spec))
        port = str(free_port())
        processes += [{"spec": str(out / "spec.json"), "out": str(out),
                       "env": {"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
                               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}} for r in (0, 1)]
    folder.mkdir(parents=True)
    (folder / "processes.json").write_text(json.dumps(processes))
    launcher = subprocess.run([sys.executable, str(LAUNCHER), "--fork", str(folder / "processes.json")], text=True,
                              env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, timeout=900)
    assert launcher.returncode == 0, launcher.stderr
    ends = json.loads((folder / "returncodes.json").read_text())
    return [(end, (Path(p["out"]) / f"stderr-{p['env']['RANK']}.txt").read_text()) for end, p in
            zip(ends, processes, strict=True)]


def survivor(ended: tuple[int, str], out: Path, rank: int) -> str:
    """Check that the process that was left ended within the timeout, with one error line; return stderr."""
    returncode, err = ended
    assert returncode == 0 and codes(out, rank)[-1] == 2, err
    took = json.loads((out / f"ended-{rank}.json").read_text()) - json.loads((out / "died.json").read_text())
    assert took < TIMEOUT_S, (took, err)
    assert "Traceback" not in err, err
    last = err.rstrip("\n").splitlines()[-1]
    assert last.startswith(f"synthformer train: error: process {rank} of 2 lost the other processes after step 4 "
                           f"(one died, or did not answer within train.collective_timeout_s={TIMEOUT_S} s: "), err
    assert "continue with --resume" in last, err
    return last


def test_a_process_that_dies_mid_step_or_mid_save_costs_no_checkpoint_and_sigterm_reaches_both(tmp_path):
    assert cases("kill-step") == ("kill-rank1-step",) and cases("kill-save") == ("kill-rank0-save",)
    assert cases("signal-two") == ("sigterm-torchrun",)
    cfg = write_yaml(tmp_path / "lm.yaml", lm_config(tmp_path, steps=8, save_every=2, eval_every=0, max_checkpoints=0,
                                                      collective_timeout_s=TIMEOUT_S))
    ref, a, b = (tmp_path / name for name in ("ref", "a", "b"))

    def train(run: Path, *extra: str) -> list[str]:
        return ["train", str(cfg), "--run-dir", str(run), *QUIET, *extra]

    # an uninterrupted run; run a loses process 1 during step 5; run b loses process 0 while step 4 is saved
    one_0, one_1, two_0, two_1 = two_runs([([run_spec(train(ref)), run_spec(train(a), ["SIGKILL", 1, "step", 5])],
                                            tmp_path / "one"),
                                           ([run_spec(train(b), ["SIGKILL", 0, "save", 2])], tmp_path / "two")],
                                          tmp_path / "forked")
    for dead in (one_1, two_0):
        assert dead[0] == -9, dead[1]
    line = survivor(one_0, tmp_path / "one", 0)
    assert line.endswith(f"the newest complete checkpoint is {a / 'checkpoints' / 'step_000004'}; continue with "
                         "--resume (on any number of processes)")
    survivor(two_1, tmp_path / "two", 1)
    assert latest_checkpoint(a).name == "step_000004" and latest_checkpoint(b).name == "step_000002"
    intact(a), intact(b)
    rewind(b, tmp_path / "b-one", 2)  # for the resume on one process below

    # under torchrun: run a resumed, process 1 alone gets SIGTERM during step 6: both stop after it and save it
    # together; then a and b are resumed to the end
    third = launch([run_spec(train(a, "--resume"), ["SIGTERM", 1, "step", 2]), run_spec(train(a, "--resume")),
                    run_spec(train(b, "--resume"))], tmp_path / "three", torchrun=True)
    _, err = third.communicate(timeout=900)
    assert third.returncode == 0 and codes(tmp_path / "three", 0) == codes(tmp_path / "three", 1) == [75, 0, 0], err
    assert "synthformer train: stopped by SIGTERM at step 6; its checkpoint is saved; continue with: torchrun " \
           f"--standalone --nproc_per_node 2 -m synthformer.cli.main train {cfg} --run-dir {a} --resume" in err, err
    saved = load_checkpoint(a / "checkpoints" / "step_000006")
    assert saved.trainer_state["world_size"] == 2 and len(saved.rng_states) == 2
    expected = final_weights(ref)
    assert same(final_weights(a), expected) and same(final_weights(b), expected)

    # on one process (twice the batch per process: the same global batch): b continues as the uninterrupted run's
    # checkpoint of the same step does, bit for bit (not as 2 processes do: their sums run in another order)
    rewind(ref, tmp_path / "ref-one", 2)
    for run in (tmp_path / "b-one", tmp_path / "ref-one"):
        assert main(train(run, "--resume", "train.batch_size=16")) == 0
    got, want = final_weights(tmp_path / "b-one"), final_weights(tmp_path / "ref-one")
    assert same(got, want) and all(torch.allclose(got[k], expected[k], atol=1e-4) for k in got)


# -- the best checkpoint through the command line --------------------------------------------------------------------


def test_eval_checkpoint_best_and_init_from_run_at_best(tmp_path, capsys):
    cfg = write_yaml(tmp_path / "lm.yaml", lm_config(tmp_path, steps=4, eval_every=1, save_every=0,
                                                      max_checkpoints=1, keep_best="loss"))
    run = tmp_path / "run"
    assert main(["train", str(cfg), "--run-dir", str(run), *QUIET]) == 0
    best = json.loads((run / "checkpoints" / "best").read_text())
    evals = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if "eval_loss" in x]
    assert best["value"] == min(d["eval_loss"] for d in evals) and best["metric"] == "eval_loss"
    capsys.readouterr()
    assert main(["eval", str(run), "--checkpoint", "best", "--split", "valid"]) == 0
    assert f"{run} (step {best['step']}), split valid:" in capsys.readouterr().out
    assert main(["eval", str(run), "--checkpoint", "7", "--split", "valid"]) == 2
    assert "checkpoint '7' of" in capsys.readouterr().err
    fine = tmp_path / "fine"
    assert main(["train", str(cfg), f"init_from={run}@best", "train.steps=1", "train.keep_best=null", "--run-dir",
                 str(fine), *QUIET]) == 0
    assert json.loads((fine / "init_from.json").read_text())["checkpoint"] == str(run / "checkpoints" / best[
        "checkpoint"])
