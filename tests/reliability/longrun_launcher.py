"""Run by test_long_runs.py as a real process (alone, one of two started with torchrun's environment variables, or
under torchrun): ``python longrun_launcher.py SPEC.json OUT``.

SPEC is a list of runs done one after the other in this process, each ``{"argv": [...synthformer arguments],
"inject": FAULT or null}``. FAULT is ``[ACTION, RANK, WHERE, N]``: on process RANK, at the N-th training forward
pass (``WHERE`` "step") or right after the N-th checkpoint's weights are written (``WHERE`` "save"), this process
sends itself ``ACTION`` (``SIGKILL``, ``SIGTERM``, ``SIGUSR1``): a real signal, through the real handlers. The exit
status of each run goes to ``OUT/rc-RANK.json`` as it ends; before a SIGKILL the time goes to ``OUT/died.json``, and
the time each run ended to ``OUT/ended-RANK.json`` (how long a survivor took to notice).

``python longrun_launcher.py --fork PROCESSES.json``: the processes of PROCESSES (a list of ``{"spec": SPEC.json,
"out": OUT, "env": {...}}``), each as above, forked from this one once it has imported torch and synthformer
(about 5 s of CPU a process otherwise); each sets its environment (torchrun's variables) before its runs, writes its
stdout and stderr to ``OUT/stdout-RANK.txt`` and ``OUT/stderr-RANK.txt``, and its end as subprocess reports it
(the exit status, or minus the signal that ended it) goes to ``PROCESSES.json``'s folder as ``returncodes.json``.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time
import traceback
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

def run(spec: list[dict], out: Path) -> None:
    """The runs of ``spec`` one after the other, recording their exit statuses and end times in ``out``; then
    leave without the interpreter's teardown of torch (seconds a process on a busy machine, in every launch the
    tests wait for), with what was printed flushed first."""
    codes = []
    for one in spec:
        inject(one["inject"], out)
        codes.append(main(one["argv"]))
        (out / f"rc-{RANK}.json").write_text(json.dumps(codes))
        (out / f"ended-{RANK}.json").write_text(json.dumps(time.time()))
    logging.shutdown()
    sys.stdout.flush(), sys.stderr.flush()
    os._exit(0)


def fork(processes: list[dict]) -> list[int]:
    """Fork the processes of ``processes`` (see the module), wait for all; their ends as subprocess gives them."""
    global RANK
    # every run of the processes imports this too (its optimizer does): once here instead of once per process
    import torch._dynamo  # noqa: F401

    pids = []
    sys.stdout.flush(), sys.stderr.flush()  # nothing of this process's buffers printed again by the children
    for proc in processes:
        pid = os.fork()
        if pid == 0:  # the child: one process of its run, as if started with its environment
            try:
                os.environ.update(proc["env"])
                RANK = int(os.environ.get("RANK", "0"))
                out = Path(proc["out"])
                for fd, name in ((1, "stdout"), (2, "stderr")):
                    with open(out / f"{name}-{RANK}.txt", "w") as fh:
                        os.dup2(fh.fileno(), fd)
                run(json.loads(Path(proc["spec"]).read_text()), out)
            except BaseException:  # as an uncaught error ends a process: its traceback, exit status 1
                traceback.print_exc()
                sys.stderr.flush()
            os._exit(1)  # run leaves with os._exit(0): here only after an error
        pids.append(pid)
    ends = []
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        ends.append(-os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
    return ends


if __name__ == "__main__":
    if sys.argv[1] == "--fork":
        listing = Path(sys.argv[2])
        (listing.parent / "returncodes.json").write_text(json.dumps(fork(json.loads(listing.read_text()))))
    else:
        run(json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2]))
