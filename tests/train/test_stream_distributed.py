"""Two processes (torchrun, gloo) training from a prepared corpus read disjoint parts of every global batch, and
their union is the batch one process reads with the same global batch: the order of the examples does not depend
on the number of processes.

The two processes are a job of the suite's one torchrun launch (tests/two_processes.py, the fixture
``two_processes``)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from stream_script import run as run_one

from tests.two_processes import ONE_LAUNCH


@ONE_LAUNCH
def test_two_processes_read_disjoint_halves_of_the_one_process_sequence(two_processes, tmp_path: Path) -> None:
    # 19 pieces: 2 global batches of 8 an epoch, so 5 steps cross two epoch boundaries (new order, new noise)
    two = two_processes.root / "stream"  # stream_script.py's job: 2 processes of batch 4
    one = tmp_path / "one"
    one.mkdir()
    run_one(two_processes.stream_config, one, ["train.batch_size=8"])

    whole = json.loads((one / "batches-rank0.json").read_text())
    halves = [json.loads((two / f"batches-rank{r}.json").read_text()) for r in (0, 1)]
    assert len(whole) == len(halves[0]) == len(halves[1]) == 5
    key = tuple
    for step in range(5):
        parts = [Counter(map(key, h[step])) for h in halves]
        assert sum(parts[0].values()) == sum(parts[1].values()) == 4
        assert not parts[0] & parts[1]  # disjoint (no piece is repeated in these 19)
        assert parts[0] + parts[1] == Counter(map(key, whole[step]))  # the union is the 1-process batch
