"""The state a study keeps in each run directory: a wall clock of the training and the finished run's result.

Two files of the study's own sit next to what the trainer writes, the run's extra files (written through the
run, :class:`~synthformer.train.run.ExtraFiles`; the run never touches them otherwise)::

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

from synthformer.train import ExtraFiles, Run, RunDir, Trainer, TrainerCallback

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


class RunClock(TrainerCallback):
    """Times one sitting of a run's training: a callback of its trainer (:meth:`attach`) that records the clock
    after each evaluation and checkpoint, counting the time they took as paused.

    Args:
        run: the open run (the clock is one of its extra files).
    """

    def __init__(self, run: Run) -> None:
        self.run = run
        self.offset = 0.0
        self.pause_offset = 0.0
        self.pause = 0.0
        self.start = time.perf_counter()
        self.trainer: Trainer | None = None
        self._paused_at: float | None = None  # while an evaluation or a checkpoint runs

    def attach(self, trainer: Trainer) -> None:
        """Continue the clock from the trainer's starting step and register it as the trainer's callback."""
        self.trainer = trainer
        kept = [r for r in read_clock(self.run.path) if r["step"] <= trainer.step]
        if trainer.step > 0 and kept:
            self.offset, self.pause_offset = float(kept[-1]["wall_s"]), float(kept[-1].get("pause_s", 0.0))
        else:
            kept = []
        # the records of steps after the checkpoint belong to steps that will be trained again
        self.run.write_extra(CLOCK, "".join(json.dumps(r) + "\n" for r in kept))
        self.start = time.perf_counter()
        trainer.add_callback(self)

    def on_evaluate_start(self, trainer: Trainer) -> None:
        self._paused_at = time.perf_counter()

    def on_evaluate(self, trainer: Trainer, metrics: Mapping[str, Any]) -> None:
        self.record()

    def on_save_start(self, trainer: Trainer) -> None:
        self._paused_at = time.perf_counter()

    def on_save(self, trainer: Trainer, path: Path | None) -> None:
        self.record()

    def record(self) -> None:
        """Append the clock at the trainer's current step (also where an exception stopped the training: an
        evaluation or a checkpoint it cut short counts as paused up to now)."""
        if self.trainer is None:
            return
        now = time.perf_counter()
        if self._paused_at is not None:
            self.pause += now - self._paused_at
            self._paused_at = None
        wall = self.offset + now - self.start
        record = {"step": int(self.trainer.step), "wall_s": round(wall, 4),
                  "pause_s": round(self.pause_offset + self.pause, 4)}
        self.run.append_extra_jsonl(CLOCK, record)


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


def write_record(run: ExtraFiles, record: RunRecord) -> None:
    """Write ``RUN/study_result.json`` of ``run`` (the run of ``record.run_dir``) atomically: from now on the run
    counts as finished."""
    run.write_extra(RESULT, json.dumps(record.to_json(), indent=1) + "\n")


def read_record(run_dir: Path) -> RunRecord | None:
    """The record of a finished run, or None (not finished, or a damaged record: the run is finished again)."""
    path = Path(run_dir) / RESULT
    try:
        return RunRecord.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
