"""Run by test_long_runs.py as a real process (alone, one of two started with torchrun's environment variables, or
under torchrun): ``python longrun_launcher.py SPEC.json OUT``.

SPEC is a list of runs done one after the other in this process, each ``{"argv": [...synthformer arguments],
"inject": FAULT or null}``. FAULT is ``[ACTION, RANK, WHERE, N]``: on process RANK, at the N-th training forward
pass (``WHERE`` "step") or right after the N-th checkpoint's weights are written (``WHERE`` "save"), this process
sends itself ``ACTION`` (``SIGKILL``, ``SIGTERM``, ``SIGUSR1``): a real signal, through the real handlers. The exit
status of each run goes to ``OUT/rc-RANK.json`` as it ends; before a SIGKILL the time goes to ``OUT/died.json``, and
the time each run ended to ``OUT/ended-RANK.json`` (how long a survivor took to notice).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time
from pathlib import Path

from synthformer.cli.main import main
from synthformer.train import checkpoint, trainer

RANK = int(os.environ.get("RANK", "0"))


def inject(fault: list | None, out: Path) -> None:
    """Install ``fault`` (see the module) by wrapping the trainer's forward pass and the checkpoint's weight writer."""
    trainer.forward_loss, checkpoint.save_model = REAL_FORWARD, REAL_SAVE
    if fault is None or fault[1] != RANK:
        return
    action, _, where, n = fault
    calls = []

    def act() -> None:
        calls.append(1)
        if len(calls) != n:
            return
        if action == "SIGKILL":
            (out / "died.json").write_text(json.dumps(time.time()))
        os.kill(os.getpid(), getattr(signal, action))

    def forward(*args, **kwargs):
        act()
        return REAL_FORWARD(*args, **kwargs)

    def save(*args, **kwargs):
        result = REAL_SAVE(*args, **kwargs)
        act()
        return result

    if where == "step":
        trainer.forward_loss = forward
    else:
        checkpoint.save_model = save


REAL_FORWARD, REAL_SAVE = trainer.forward_loss, checkpoint.save_model

if __name__ == "__main__":
    spec, out = json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2])
    codes = []
    for run in spec:
        inject(run["inject"], out)
        codes.append(main(run["argv"]))
        (out / f"rc-{RANK}.json").write_text(json.dumps(codes))
        (out / f"ended-{RANK}.json").write_text(json.dumps(time.time()))
    # Every run is over and its records written: leave without the interpreter's teardown of torch (seconds a
    # process on a busy machine, in every launch the tests wait for), with what was printed flushed first.
    logging.shutdown()
    sys.stdout.flush(), sys.stderr.flush()
    os._exit(0)
