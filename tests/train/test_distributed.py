"""Two processes with torchrun (gloo on CPU): replicas stay identical and resume is exact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

HERE = Path(__file__).parent


def test_torchrun_two_processes_train_and_agree(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(
        [str(HERE), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           str(HERE / "ddp_script.py"), str(tmp_path)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    weights = {(name, r): load_file(tmp_path / f"{name}-rank{r}.safetensors")
               for name in ("reference", "run") for r in (0, 1)}
    ref = weights["reference", 0]
    # Both replicas agree, and the stopped-and-resumed run equals the uninterrupted one bit for bit.
    for w in weights.values():
        assert w.keys() == ref.keys() and all(torch.equal(w[k], ref[k]) for k in ref)

    from synthformer.train import load_checkpoint

    run = tmp_path / "run"
    ck = load_checkpoint(run)
    assert ck.step == 10 and len(ck.rng_states) == 2 and ck.trainer_state["world_size"] == 2
    assert not torch.equal(ck.rng_states[0]["torch"], ck.rng_states[1]["torch"])  # per-process dropout
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [d["step"] for d in lines if "loss" in d] == [2, 4, 6, 8, 10]
    assert [d["step"] for d in lines if "eval_loss" in d] == [3, 6, 9, 10]
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["loss"] < lines[0]["loss"]  # it learned
