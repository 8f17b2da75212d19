"""The state a study keeps in each run directory: a wall clock of the training and the finished run's result.

Two files of the study's own sit next to what the trainer writes (the run directory never touches files it does
not know)::

    RUN/study_clock.jsonl    {"step", "wall_s", "pause_s"} at every evaluation and checkpoint: seconds since the
                             run started (summed over sittings) and how many of them went to evaluating and saving
    RUN/study_result.json    written once the run is trained and evaluated: the numbers of the results table

The trainer's ``metrics.jsonl`` has steps but no times; the clock gives the validation curve its wall-time axis
(the paper's Figure A.7). When a run resumes from a checkpoint, the clock continues from its record at that step
and the records of the lost steps after it are dropped, as the trainer drops their metric lines.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from synthformer.common import atomic_write_text
from synthformer.train import RunDir

__all__ = ["CLOCK", "RESULT", "RunClock", "RunRecord", "eval_curve", "read_clock", "read_record", "write_record"]

CLOCK = "study_clock.jsonl"
RESULT = "study_result.json"


def read_clock(run_dir: Path) -> list[dict[str, float]]:
    """The clock records of a run, in order (a line torn by a kill is skipped)."""
    path = Path(run_dir) / CLOCK
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and {"step", "wall_s"} <= set(record):
            records.append(record)
    return records


class RunClock:
    """Times one sitting of a run's training; attach it to the trainer with :meth:`attach`.

    Args:
        run_dir: the run directory.
    """

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / CLOCK
        self.offset = 0.0
        self.pause_offset = 0.0
        self.pause = 0.0
        self.start = time.perf_counter()
        self.trainer: Any = None

    def attach(self, trainer: Any) -> None:
        """Continue the clock from the trainer's starting step and record at its evaluations and checkpoints.

        Wraps the trainer's public ``evaluate`` and ``save`` (the loop calls them through ``self``).
        """
        self.trainer = trainer
        kept = [r for r in read_clock(self.path.parent) if r["step"] <= trainer.step]
        if trainer.step > 0 and kept:
            self.offset, self.pause_offset = float(kept[-1]["wall_s"]), float(kept[-1].get("pause_s", 0.0))
        else:
            kept = []
        # the records of steps after the checkpoint belong to steps that will be trained again
        atomic_write_text(self.path, "".join(json.dumps(r) + "\n" for r in kept))
        self.start = time.perf_counter()
        for name in ("evaluate", "save"):
            setattr(trainer, name, self._timed(getattr(trainer, name)))

    def _timed(self, method: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.pause += time.perf_counter() - t0
                self.record()

        return timed

    def record(self) -> None:
        """Append the clock at the trainer's current step."""
        if self.trainer is None:
            return
        wall = self.offset + time.perf_counter() - self.start
        record = {"step": int(self.trainer.step), "wall_s": round(wall, 4),
                  "pause_s": round(self.pause_offset + self.pause, 4)}
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")


def eval_curve(run_dir: Path, metric: str) -> list[tuple[int, float, float]]:
    """``(step, training seconds, value)`` of each evaluation of ``eval_<metric>`` in a run's ``metrics.jsonl``.

    Training seconds: the clock's wall time at that step less the time spent evaluating and saving (so that how
    often a run was evaluated does not stretch its curve); ``nan`` where the clock has no record (a run trained
    outside a study).
    """
    clock: dict[int, float] = {}
    for r in read_clock(run_dir):  # the first record of a step is its evaluation's (a checkpoint's may follow)
        clock.setdefault(int(r["step"]), float(r["wall_s"]) - float(r.get("pause_s", 0.0)))
    out = []
    for record in RunDir(run_dir).read_metrics():
        value = record.get(f"eval_{metric}")
        if isinstance(value, (int, float)) and "step" in record:
            out.append((int(record["step"]), clock.get(int(record["step"]), math.nan), float(value)))
    return out


@dataclass
class RunRecord:
    """One finished run's numbers (``RUN/study_result.json``)."""

    variant: str
    seed: int
    run_dir: str
    parameters: int
    steps: int
    metric: str
    """The task's main metric (``bits_per_character``, ``accuracy``, ``bleu``, ...)."""
    valid_metric: float
    """At the last evaluation during training (the validation curve's end)."""
    valid_loss: float
    test_metric: float | None
    """On the test split after training (``synthformer eval``), when the task has one."""
    steps_per_second: float
    """Training steps per second of training time (evaluation and checkpoints excluded)."""
    wall_seconds: float
    """Training wall time, evaluations and checkpoints included, summed over sittings (data preparation and the
    test evaluation excluded)."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRecord:
        """Read a record back."""
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})


def write_record(record: RunRecord) -> None:
    """Write ``RUN/study_result.json`` atomically: from now on the run counts as finished."""
    atomic_write_text(Path(record.run_dir) / RESULT, json.dumps(record.to_json(), indent=1) + "\n")


def read_record(run_dir: Path) -> RunRecord | None:
    """The record of a finished run, or None (not finished, or a damaged record: the run is finished again)."""
    path = Path(run_dir) / RESULT
    try:
        return RunRecord.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
