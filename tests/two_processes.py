"""The suite's two-process jobs (torchrun, 2 processes, gloo on CPU), all in ONE launch.

Every launch costs its three processes (the launcher and two workers) their imports of torch, accelerate and
synthformer and the process group's start, 7-9 s of a 2-core CPU: more than most of the jobs themselves. So the
tests share one launch of two_process_script.py (the session fixture ``two_processes`` of tests/conftest.py),
which runs every job in turn, each into its own folder of the launch's root, and each test reads its job's folder:

- ``agree``: train/ddp_script.py, replicas agree and resume is exact (train/test_distributed.py);
- ``ddp``, ``fsdp``: train/parallel_script.py in that mode, against the one-process run ``single`` trained here
  first and rewound to step 3 into ``<mode>/one_to_two`` for the 1 -> 2 resume (train/test_distributed.py);
- ``stream``: train/stream_script.py on a prepared span-corruption corpus (train/test_stream_distributed.py);
- ``sharded_eval``: tasks/sharded_eval_script.py, evaluation shared by the processes (tasks/test_sharded_eval.py);
- ``spike``: train/spike_script.py, a loss spike on one process skipped by both (train/test_distributed.py).

The tests carry the ``xdist_group`` mark ``torchrun`` (``ONE_LAUNCH``), so pytest-xdist (``--dist loadgroup``)
runs them on one worker: one launch per test session.

The tests only read what the launch wrote; one that trains further (the 2 -> 1 resume) works on a copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).parent  # tests/
ROOT = HERE.parent
TRAIN = HERE / "train"  # the jobs' scripts and toymodels.py, imported as plain modules
if str(TRAIN) not in sys.path:
    sys.path.insert(0, str(TRAIN))

#: the mark of every test that reads the launch
ONE_LAUNCH = pytest.mark.xdist_group("torchrun")


@dataclass(frozen=True)
class TwoProcessRuns:
    """Where the launch wrote each job (``root / job``), the one-process run and the stream job's config."""

    root: Path
    single: Path
    stream_config: Path


def train_one(run_dir: Path, *, resume: bool = False):
    """One process, the global batch of parallel_script.py (2 x 4 examples) in one batch of 8."""
    from toymodels import CountingPairs, open_run, tiny_seq2seq

    from synthformer.train import TrainConfig, Trainer, seed_everything

    seed_everything(0)
    cfg = TrainConfig(steps=6, batch_size=8, grad_accum=2, lr=1e-2, schedule="constant", save_every=1, log_every=1,
                      eval_every=3, max_checkpoints=0)
    return Trainer(tiny_seq2seq(), CountingPairs(64), cfg, open_run(run_dir, resume=resume),
                   eval_data=CountingPairs(9, seed=1), progress=False)


def rewind(src: Path, dst: Path, step: int) -> Path:
    """A copy of run ``src`` as it was when the checkpoint of ``step`` was its latest."""
    shutil.copytree(src, dst)
    for ckpt in (dst / "checkpoints").glob("step_*"):
        if int(ckpt.name.split("_")[1]) > step:
            shutil.rmtree(ckpt)
    (dst / "checkpoints" / "latest").write_text(f"step_{step:06d}\n")
    return dst


def stream_config(folder: Path) -> Path:
    """The stream job's run config: 19 pieces, 2 global batches of 8 an epoch, so 5 steps cross two epoch
    boundaries (new order, new noise)."""
    from tests.tasks.helpers import write_yaml
    from tests.tasks.test_prepared_training import make_corpus, prepared_config

    folder.mkdir(parents=True)
    cfg = prepared_config(make_corpus(folder, "span_corruption", n_train=9), "span_corruption", steps=5,
                          batch_size=4, save_every=0, eval_every=0, log_every=5)
    cfg["task"]["options"]["mean_noise_span_length"] = 1.5
    return write_yaml(folder / "span.yaml", cfg)


def launch(root: Path) -> TwoProcessRuns:
    """Train the one-process run, prepare every job's input, then run all the jobs in one torchrun launch."""
    single = root / "single" / "one"  # a 6-step single-process run, a checkpoint after every step
    with train_one(single) as trainer:
        trainer.train()
    for mode in ("ddp", "fsdp"):
        rewind(single, root / mode / "one_to_two", 3)
    (root / "agree").mkdir()
    (root / "sharded_eval").mkdir()
    (root / "spike").mkdir()
    runs = TwoProcessRuns(root, single, stream_config(root / "stream"))
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(TRAIN), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           str(HERE / "two_process_script.py"), str(root), str(runs.stream_config)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return runs
