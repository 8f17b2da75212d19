"""Two processes (torchrun, gloo) training from a prepared corpus read disjoint parts of every global batch, and
their union is the batch one process reads with the same global batch: the order of the examples does not depend
on the number of processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from stream_script import run as run_one

from tests.tasks.helpers import write_yaml
from tests.tasks.test_prepared_training import make_corpus, prepared_config

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def test_two_processes_read_disjoint_halves_of_the_one_process_sequence(tmp_path: Path) -> None:
    # 19 pieces: 2 global batches of 8 an epoch, so 5 steps cross two epoch boundaries (new order, new noise)
    cfg = prepared_config(make_corpus(tmp_path, "span_corruption", n_train=9), "span_corruption", steps=5,
                          batch_size=4, save_every=0, eval_every=0, log_every=5)
    cfg["task"]["options"]["mean_noise_span_length"] = 1.5
    config = write_yaml(tmp_path / "span.yaml", cfg)
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    two = tmp_path / "two"
    two.mkdir()
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                           str(HERE / "stream_script.py"), str(config), str(two)],
                          env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    one = tmp_path / "one"
    one.mkdir()
    run_one(config, one, ["train.batch_size=8"])

    whole = json.loads((one / "batches-rank0.json").read_text())
    halves = [json.loads((two / f"batches-rank{r}.json").read_text()) for r in (0, 1)]
    assert len(whole) == len(halves[0]) == len(halves[1]) == 5
    key = tuple
    for step in range(5):
        parts = [Counter(map(key, h[step])) for h in halves]
        assert sum(parts[0].values()) == sum(parts[1].values()) == 4
        assert not parts[0] & parts[1]  # disjoint (no piece is repeated in these 19)
        assert parts[0] + parts[1] == Counter(map(key, whole[step]))  # the union is the 1-process batch
