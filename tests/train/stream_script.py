"""Run by two_process_script.py under torchrun, 2 processes (and by test_stream_distributed.py in-process for 1): train
a run config (a prepared span-corruption corpus) and record, for each step, the source rows of the batch this
process consumed, to ``OUT/batches-rank<r>.json``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


class Recording:
    """Wraps the trainer's batch stream: each batch's unpadded ``src_ids`` rows, in order."""

    def __init__(self, stream: Any) -> None:
        self.stream, self.batches = stream, []

    def __next__(self) -> Any:
        batch = next(self.stream)
        keep = ~batch["src_padding_mask"]
        self.batches.append([row[k].tolist() for row, k in zip(batch["src_ids"], keep, strict=True)])
        return batch

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def run(config: Path, out: Path, overrides: list[str]) -> None:
    from synthformer.tasks import load_run_config, train_run

    rank = int(os.environ.get("RANK", "0"))
    recorders = []

    def record(trainer: Any) -> None:
        trainer._stream = Recording(trainer._stream)
        recorders.append(trainer._stream)

    train_run(load_run_config(config, overrides), out / "run", on_trainer=record)
    (out / f"batches-rank{rank}.json").write_text(json.dumps(recorders[0].batches))


if __name__ == "__main__":
    run(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:])
