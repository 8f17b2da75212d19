"""Run by two_processes.py under one ``torchrun --standalone --nproc_per_node=2`` (gloo on CPU): ``ROOT CONFIG``.

Every two-process job of the suite in turn, in the same two processes (one process group), each into its own
folder of ROOT: train/ddp_script.py into ``agree``, train/parallel_script.py in DDP and FSDP2 mode into ``ddp`` and
``fsdp``, train/stream_script.py on the run config CONFIG into ``stream``, tasks/sharded_eval_script.py into
``sharded_eval``, train/spike_script.py into ``spike``. Each job seeds its own runs. PYTHONPATH holds tests/train
and the repository root.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import ddp_script
import parallel_script
import spike_script
import stream_script

from tests.tasks import sharded_eval_script


def main(root: Path, stream_config: Path) -> None:
    ddp_script.main(root / "agree")
    for mode in ("ddp", "fsdp"):
        parallel_script.main(mode, root / mode)
    stream_script.run(stream_config, root / "stream", [])
    sharded_eval_script.main(root / "sharded_eval")
    spike_script.main(root / "spike")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
    # Every job is done and written: leave without the interpreter's teardown of torch (seconds on a busy machine,
    # which torchrun, and the session fixture, would wait for), with what was printed flushed first.
    logging.shutdown()
    sys.stdout.flush(), sys.stderr.flush()
    os._exit(0)
