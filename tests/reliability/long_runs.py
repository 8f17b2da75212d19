"""The "Long runs" table of docs/reliability.md: each fault, how often the tests inject it, how many injections the
run survived with its checkpoints intact, and how many were resumed bit-exactly (``None``: nothing to resume).

The tests that inject the faults take their cases from here (``cases``) and assert, for every case, survival and
(where the row has a number) a bit-exact resume; so a passing suite means the numbers hold, and
test_long_runs_meta.py keeps the doc's table equal to this one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fault:
    """A row: ``cases`` are the ids of its injections (pytest parameters or the steps of one test)."""

    key: str
    name: str
    cases: tuple[str, ...]
    resumed: bool = True  # every case is resumed and compared bit for bit

    @property
    def row(self) -> str:
        n = len(self.cases)
        return f"| {self.name} | {n} | {n} | {n if self.resumed else '-'} |"


#: Calls of the rotating saves in tests/reliability/test_faults.py at which a fault is injected, times the modes
#: (see that test): 2 scenarios (the old best kept, a new best written).
ROTATION_FAULTS = 98

FAULTS: tuple[Fault, ...] = (
    Fault("nonfinite-stop", "NaN loss at step k, `train.nonfinite: stop` (with and without clipping)",
          ("clip", "no-clip")),
    Fault("nonfinite-skip", "NaN loss at two steps, `train.nonfinite: skip` (killed between them)", ("skip",)),
    Fault("nonfinite-limit", "`train.nonfinite_limit` non-finite steps in a row", ("limit",), resumed=False),
    Fault("spike", "a finite loss spike (x1e6) at step k, `train.nonfinite: stop`; at two steps with `skip` (killed "
          "between them)", ("spike-stop", "spike-skip")),
    Fault("blow-up", "a blow-up without NaN (`train.lr=1e4`, a real run): `stop`, and `skip` until "
          "`train.nonfinite_limit`", ("lr-1e4-stop", "lr-1e4-skip"), resumed=False),
    Fault("divergence", "a slow blow-up, no step a spike (real runs: `train.lr=5 train.warmup_steps=60`, `lr=2 "
          "grad_clip=0 warmup_steps=30`, a validation loss out of range)",
          ("lr-5-warmup-60", "lr-2-no-clip", "eval-out-of-range"), resumed=False),
    Fault("late-divergence", "a late divergence under `train.max_checkpoints` rotation (stopped; with the check off, "
          "to the end)", ("late-stop", "late-unchecked"), resumed=False),
    Fault("garbage-checkpoint", "a NaN right after a checkpoint of finite weights (a real run at `train.lr=1e30`, a "
          "toy run)", ("lr-1e30", "nan-after-save"), resumed=False),
    Fault("spike-two", "a loss spike on one of 2 torchrun processes (`skip`): both skip the same step",
          ("spike-rank1",), resumed=False),
    Fault("oom", "out of memory in a step (a GPU's `OutOfMemoryError`, the CPU allocator's error)",
          ("cuda", "cpu")),
    Fault("signal-one", "SIGTERM mid-step, SIGUSR1 mid-save (one process)", ("sigterm-step", "sigusr1-save")),
    Fault("signal-two", "SIGTERM to one of 2 torchrun processes mid-step", ("sigterm-torchrun",)),
    Fault("kill-step", "SIGKILL of one of 2 gloo processes mid-step", ("kill-rank1-step",)),
    Fault("kill-save", "SIGKILL of one of 2 gloo processes mid-save (resumed on 2 and on 1 process)",
          ("kill-rank0-save",)),
    Fault("rotation", "a full disk or a kill at each call of a save that rotates checkpoints with `keep_best`",
          tuple(f"rotation-{i}" for i in range(ROTATION_FAULTS)), resumed=False),
)

BY_KEY = {f.key: f for f in FAULTS}


def cases(key: str) -> tuple[str, ...]:
    """The injections of row ``key``."""
    return BY_KEY[key].cases


def table() -> str:
    """The Markdown table docs/reliability.md shows."""
    head = ["| fault | injections | survived, checkpoints intact | resumed bit-exactly |", "|---|---|---|---|"]
    return "\n".join(head + [f.row for f in FAULTS])
