"""Running a study: one run per (variant, seed), each trained, evaluated and recorded, resumable at any point.

Layout of a study directory::

    OUT/study.json                  the manifest (:mod:`synthformer.study.manifest`)
    OUT/<variant>/seed<k>/          a complete run directory (``synthformer eval`` / ``generate`` work on it),
                                    with the study's clock and result record (:mod:`synthformer.study.runs`)

Runs go seed by seed (every variant with the first seed, then every variant with the next): a study stopped
half-way already has one complete row per variant. A run with a result record is finished and is read back, not
trained again; any other run is trained with ``resume=True``, which continues from its latest checkpoint (or
starts fresh when it has none).

Several processes may work on one study at once (the same command started again in another terminal, or on
another device): a run is trained under its run directory's lock, a process skips the runs another one holds,
and when it has nothing left to train it waits for them (taking over any whose process died) before the table
is written.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synthformer.common import ConfigError, to_dict
from synthformer.models import build_model
from synthformer.tasks import RunConfig, TaskData, evaluate_run, prepare_data, resolve_model_config, train_run
from synthformer.train import Run, RunDir, RunError

from .claim import StartingRun, claim_study, clear_earlier_study, release_unstarted
from .manifest import StudySpec, Variant
from .runs import RunClock, RunRecord, read_clock, read_record, write_record

__all__ = ["OnRun", "StudyResult", "check_buildable", "main_metric", "run_dir_of", "run_study"]

logger = logging.getLogger(__name__)

#: Seconds between looks at the runs another process of the same study is training.
POLL_SECONDS = 10.0

#: Called after each run with (runs done, runs in all, the run's record, whether it was read back).
OnRun = Callable[[int, int, RunRecord, bool], None]


@dataclass
class StudyResult:
    """Every run's record, in the study's order, and where they are."""

    out: Path
    spec: StudySpec
    variants: list[Variant]
    records: list[RunRecord]
    metric: str
    seconds: float
    continued: bool
    """True if the study directory already held this study (some runs may have been read back)."""


def run_dir_of(out: Path, variant: Variant, seed: int) -> Path:
    """``OUT/<variant>/seed<k>``."""
    return Path(out) / variant.dir_name / f"seed{seed}"


def main_metric(run: RunConfig) -> str:
    """The metric the table and curves show: the task type's comparison metric (``synthformer compare``'s) when
    the run reports it, else the run's first metric besides the loss (e.g. a generator's ``exact_match``), else
    the loss."""
    names = run.metrics
    preferred = run.task.task_type.comparison_metric(run.task)
    if preferred in names or preferred == "loss":
        return preferred
    return next((m for m in names if m != "loss"), "loss")


def check_buildable(run: RunConfig, variant: Variant) -> None:
    """Build the variant's model on the meta device (no memory, no data): a kind that cannot serve where
    ``with_kind`` puts it (Linformer in a causal decoder) fails now, not after the variants before it trained.

    Raises:
        ConfigError: naming the variant and why its model cannot be built.
    """
    import torch

    # any count builds; the data's comes later
    arch_classes = 2 if "num_classes" in run.task.task_type.derived_model_fields else None
    config = resolve_model_config(run, vocab_size=256, num_classes=arch_classes)
    try:
        with torch.device("meta"):
            build_model(config)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"study: variant {variant.name!r} cannot be built: {err}") from None


def _last_eval(run_dir: Path, key: str) -> float:
    """The last value of ``key`` in the run's ``metrics.jsonl`` (nan if never logged)."""
    for record in reversed(RunDir(run_dir).read_metrics()):
        value = record.get(key)
        if isinstance(value, (int, float)):
            return float(value)
    return math.nan


def _finish(run: RunConfig, variant: Variant, seed: int, run_dir: Path, parameters: int, metric: str) -> RunRecord:
    """Evaluate a trained run on its test split (when it has one) and build its record from the run directory."""
    test = None
    if run.task.has_test_split:
        report = evaluate_run(run_dir, "test")
        value = report.metrics.get(metric, report.metrics.get(f"eval_{metric}"))
        test = float(value) if isinstance(value, (int, float)) else math.nan
    clock = read_clock(run_dir)
    last = clock[-1] if clock else {"step": run.train.steps, "wall_s": math.nan, "pause_s": 0.0}
    train_s = float(last["wall_s"]) - float(last.get("pause_s", 0.0))
    return RunRecord(
        variant=variant.name, seed=seed, run_dir=str(run_dir), parameters=parameters, steps=run.train.steps,
        metric=metric, valid_metric=_last_eval(run_dir, f"eval_{metric}"),
        valid_loss=_last_eval(run_dir, "eval_loss"), test_metric=test,
        steps_per_second=float(last["step"]) / train_s if train_s > 0 else math.nan,
        wall_seconds=float(last["wall_s"]),
    )


def _train_one(run: RunConfig, owner: Run, data: TaskData | None, progress: bool,
               on_trainer: Callable[[Any], None] | None) -> int:
    """Train (or continue) one run in the open ``owner``; returns its parameter count."""
    clock = RunClock(owner)

    def attach(trainer: Any) -> None:
        clock.attach(trainer)
        if on_trainer is not None:
            on_trainer(trainer)

    try:
        result = train_run(run, owner, progress=progress, data=data, on_trainer=attach)
    except BaseException:
        clock.record()  # where a Ctrl-C stopped it: the trainer saved this step
        raise
    return result.parameters


def _run_one(run: RunConfig, variant: Variant, seed: int, owner: Run, metric: str, shared: dict[str, TaskData],
             progress: bool, on_trainer: Callable[[Any], None] | None) -> RunRecord:
    """Train (or continue), evaluate and record one run of the study in the open ``owner``."""
    run_dir = owner.path
    run = dataclasses.replace(run, train=dataclasses.replace(run.train, seed=seed))
    data = None  # a half-finished run reads its own saved tokenizer (train_run does that)
    if owner.resume and RunDir(run_dir).tokenizer_path.is_file():
        logger.info("%s seed %d: continuing the half-finished run in %s", variant.name, seed, run_dir)
    else:
        key = json.dumps([to_dict(run.task), run.eval.split], sort_keys=True, default=str)
        if key not in shared:
            shared[key] = prepare_data(run, splits=("train", run.eval.split))
        data = shared[key]
    parameters = _train_one(run, owner, data, progress, on_trainer)
    record = _finish(run, variant, seed, run_dir, parameters, metric)
    write_record(owner, record)
    return record


def run_study(base: RunConfig, spec: StudySpec, out: str | Path, *, progress: bool = False,
              on_run: OnRun | None = None, on_trainer: Callable[[Any], None] | None = None,
              overwrite: bool = False) -> StudyResult:
    """Train and evaluate every (variant, seed) of ``spec`` into ``out``, continuing an earlier sitting.

    Args:
        base: the base run config (``spec.config`` is its dict).
        spec: the study.
        out: the study directory.
        progress: one progress bar over the runs, with the trainer's bar inside.
        on_run: called after each run (finished now or read back).
        on_trainer: handed to :func:`~synthformer.tasks.train_run` for each run trained (tests, custom hooks).
        overwrite: replace the study ``out`` holds (a different one, or this one to train again): it is deleted
            when this study's first run starts training, not before (:mod:`synthformer.study.claim`).

    A study that fails before any of its runs started leaves ``out`` free for the next (corrected) one.

    Raises:
        RunError: ``out`` holds a different study that started a run, without ``overwrite`` (or is a file).
        ConfigError: an unknown kind or grid value (found before anything is trained).
    """
    start = time.perf_counter()
    out = Path(out)
    variants = spec.variants
    runs = {v.name: spec.variant_config(base, v) for v in variants}  # checks every variant before training any
    for variant in variants:
        check_buildable(runs[variant.name], variant)
    # The manifest is written or checked under the study's lock, so that two processes started together agree.
    created = not out.exists()
    try:
        with RunDir(out).lock():
            claim = claim_study(out, spec, overwrite=overwrite)
    except RunError as err:  # its message speaks of a run directory
        raise RunError(str(err).replace("run directory", "study directory", 1)) from None
    continued = claim == "continued"
    # overwrite: the earlier study's runs are neither read back nor resumed until the first new run starts
    replacing = [claim == "replace"]

    def replace_earlier(owner: Run) -> None:
        with RunDir(out).lock():
            clear_earlier_study(out, owner, spec)
        replacing[0] = False
    metric = main_metric(base)
    plan = [(v, seed) for seed in spec.seeds for v in variants]
    found: dict[tuple[str, int], RunRecord] = {}
    shared: dict[str, TaskData] = {}  # variants that differ only in the model share the prepared data

    def attempt(variant: Variant, seed: int) -> bool:
        """Read back or train one run; False when another process holds it (it is training it now)."""
        run_dir = run_dir_of(out, variant, seed)
        record = None if replacing[0] else read_record(run_dir)
        if record is None:
            try:
                # held until the run's record is written, so that no other process trains it meanwhile;
                # resume: a half-finished run continues (an earlier sitting stopped it); overwrite: the earlier
                # study's run is deleted when this one starts
                owner = StartingRun.open(run_dir, resume=not replacing[0], overwrite=replacing[0])
            except RunError:
                return False
            if replacing[0]:
                owner.on_start = lambda: replace_earlier(owner)
            with owner:
                # finished by the other process between the read and the lock
                record = None if replacing[0] else read_record(run_dir)
                if record is None:
                    bar.set_description(f"{variant.name} seed {seed}")
                    record = _run_one(runs[variant.name], variant, seed, owner, metric, shared, progress,
                                      on_trainer)
                    found[variant.name, seed] = record
                    _report(record, False)
                    return True
        logger.info("%s seed %d: finished earlier, read back from %s", variant.name, seed, run_dir)
        found[variant.name, seed] = record
        _report(record, True)
        return True

    def _report(record: RunRecord, read_back: bool) -> None:
        bar.update(1)
        if on_run is not None:
            on_run(len(found), len(plan), record, read_back)

    try:
        with _outer_bar(len(plan), progress) as bar:
            # Several processes may share a study (the same command in a second terminal, on a second device): each
            # trains the runs no other holds, then waits for the ones the others are training.
            waiting = [(v, seed) for v, seed in plan if not attempt(v, seed)]
            if waiting:
                logger.info("waiting for %d run(s) that another process is training: %s", len(waiting),
                            ", ".join(f"{v.name} seed {seed}" for v, seed in waiting))
            while waiting:
                time.sleep(POLL_SECONDS)
                waiting = [(v, seed) for v, seed in waiting if not attempt(v, seed)]
    except BaseException:
        if claim == "new":  # a study that started no run does not keep the directory from the next one
            _release(out, created)
        raise
    records = [found[v.name, seed] for v, seed in plan]
    return StudyResult(out, spec, variants, records, metric, time.perf_counter() - start, continued)


def _release(out: Path, created: bool) -> None:
    """Give ``out`` back after a failure if no run started (and remove it if this study created it)."""
    try:
        with RunDir(out).lock():
            released = release_unstarted(out)
    except RunError:  # another process holds the study: it may still start a run
        return
    if released and created:
        try:
            out.rmdir()
        except OSError:  # not empty: something else is in it
            pass


def _outer_bar(total: int, progress: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="study", unit="run", dynamic_ncols=True, disable=not progress, position=0,
                leave=True)
