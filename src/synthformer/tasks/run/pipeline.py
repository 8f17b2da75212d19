"""From a :class:`~synthformer.tasks.RunConfig` to a trained run directory.

Flow: the data (:func:`~synthformer.tasks.run.data.prepare_data`: raw splits, tokenizer, the model config sized
for them, datasets) -> the model -> :class:`~synthformer.train.Trainer` with the task's ``eval_fn``.

This module is the only owner of the run directory while a run trains: it locks it (before anything is read, so a
second run into the same directory fails at once), checks it (an earlier run is refused unless resumed or
overwritten; :mod:`.resume` says what a resume may change), clears it (``--overwrite``) and writes its files, each
atomically; the trainer receives it prepared and adds only its records (``metrics.jsonl``, ``checkpoints/``,
``tensorboard/``). :class:`~synthformer.train.RunDir` names the files::

    config.yaml                  the run's configuration, data paths made absolute
    synthformer_tokenizer.json   the tokenizer (loaded back by eval and generate)
    model_config.json            the resolved ModelConfig (vocabulary size, classes, max_len, kinds)
    labels.json                  classification: the class names in id order
    init_from.json               a run started from a pretrained one (init_from): which, and what was new
    eval_<split>.json            written by ``synthformer eval`` (:mod:`.evaluation`)
    eval_<split>_hypotheses.txt  seq2seq: the decoded outputs of that evaluation, one per line
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import nn

from synthformer.common.io import atomic_output, atomic_write_text
from synthformer.data import save_label_set
from synthformer.models import ModelConfig, num_parameters
from synthformer.train import ConfigError, RunDir, Trainer, dump_config, is_main_process
from synthformer.train.optim import freeze_parts

from ..contract import TaskData
from .config import RunConfig
from .data import build_task_model, for_run, prepare_data
from .evaluation import make_eval_fn
from .init_from import (
    InitReport,
    check_pretrained_model,
    load_pretrained_weights,
    pretrained_tokenizer,
    split_init_from,
)
from .lengths import describe_lengths, length_reports
from .resume import check_resumed_model, resumed_inputs

__all__ = ["TrainResult", "absolute_paths", "check_run_dir", "train_run"]

logger = logging.getLogger(__name__)


def check_run_dir(run_dir: str | Path, resume: bool = False, overwrite: bool = False) -> list[str]:
    """Refuse to touch an earlier run unless asked; return what an earlier run left there (:meth:`RunDir.check`).

    Raises:
        RunError: ``resume`` and ``overwrite`` together, a file where the directory should be, or an earlier run
            without ``resume`` / ``overwrite``.
    """
    return RunDir(run_dir).check(resume, overwrite)


def absolute_paths(run: RunConfig) -> RunConfig:
    """A copy of ``run`` whose data file paths (and ``init_from``) are absolute, so the saved config works from any
    directory."""
    task = run.task
    updates = {name: str(Path(getattr(task, name)).resolve()) for name in ("train", "valid", "test", "prepared")
               if getattr(task, name) is not None}
    if updates:
        run = dataclasses.replace(run, task=dataclasses.replace(task, **updates))
    if run.init_from is not None:
        run = dataclasses.replace(run, init_from=str(Path(run.init_from).resolve()))
    return run


@dataclass
class TrainResult:
    """What :func:`train_run` returns: final metrics and the numbers the comparison table shows."""

    run_dir: Path
    metrics: dict[str, Any]
    model_config: ModelConfig
    parameters: int
    steps: int
    tokens_seen: int
    train_seconds: float
    wall_seconds: float
    data_summary: list[str] = field(default_factory=list)
    """One line per split: its example count and how many were truncated or skipped for length."""

    @property
    def tokens_per_second(self) -> float:
        """Training targets per second of training time (evaluation and checkpointing excluded)."""
        return self.tokens_seen / self.train_seconds if self.train_seconds > 0 else 0.0


def train_run(run: RunConfig, run_dir: str | Path, *, resume: bool = False, overwrite: bool = False,
              progress: bool = False, data: TaskData | None = None,
              on_trainer: Callable[[Trainer], None] | None = None) -> TrainResult:
    """Train ``run`` into ``run_dir`` (see the module docstring for what it holds).

    Args:
        run: the run configuration.
        run_dir: the run directory.
        resume: continue the run in ``run_dir`` from its latest checkpoint (its tokenizer is reused).
        overwrite: delete an earlier run in ``run_dir`` first.
        progress: show a progress bar.
        data: already prepared data (e.g. shared by the variants of a comparison); must come from a config with
            the same ``task`` section (the model config is sized again for ``run``'s model settings).
        on_trainer: called with the :class:`Trainer` before training (tests, custom hooks).

    Raises:
        RunError: the run directory cannot be used as asked.
        ConfigError, DataError: bad settings or data (named).
    """
    start = time.perf_counter()
    rd = RunDir(run_dir)
    # Held until training ends (only by the main process): a second run into the same directory fails here.
    with rd.lock():
        return _train_locked(run, rd, start, resume=resume, overwrite=overwrite, progress=progress, data=data,
                             on_trainer=on_trainer)


def _train_locked(run: RunConfig, rd: RunDir, start: float, *, resume: bool, overwrite: bool, progress: bool,
                  data: TaskData | None, on_trainer: Callable[[Trainer], None] | None) -> TrainResult:
    # Under torchrun every process runs this; only the main one checks and writes the run directory (the others
    # would otherwise find the main process's fresh tokenizer and refuse to start). The trainer synchronises them.
    main_process = is_main_process()
    if run.init_from is not None and Path(split_init_from(run.init_from)[0]).resolve() == rd.path.resolve():
        raise ConfigError(f"init_from: {run.init_from} is this run's own directory; finetune into another --run-dir")
    existing = rd.check(resume, overwrite) if main_process else []
    run = absolute_paths(run)
    resumed = resumed_inputs(rd, run, main_process=main_process) if resume else None
    splits = ("train", run.eval.split)
    if data is not None:
        data = for_run(run, data)
    elif resumed is not None:
        data = prepare_data(run, resumed.tokenizer, resumed.label_set, splits=splits)
    elif run.init_from is not None:
        data = prepare_data(run, pretrained_tokenizer(run), splits=splits)
    else:
        data = prepare_data(run, splits=splits)
    if run.eval.split not in data.datasets:
        raise ConfigError(f"eval.split: the task has no {run.eval.split!r} split (it has: "
                          f"{', '.join(data.raw.splits)})")
    if resumed is not None:
        check_resumed_model(rd, data.model_config)
    model, model_config = build_task_model(run, data)
    init_report = None
    # also when resuming a run that stopped before its first checkpoint: the trainer then starts fresh from these
    if run.init_from is not None and rd.latest_checkpoint() is None:
        check_pretrained_model(run, model_config)
        init_report = load_pretrained_weights(run, model)
    if main_process:
        if overwrite and existing:
            rd.clear()
        _write_run_files(rd, run, data, fresh=resumed is None, init_report=init_report)
    return _train(run, rd, data, model, start, resume=resume, progress=progress, on_trainer=on_trainer)


def _write_run_files(rd: RunDir, run: RunConfig, data: TaskData, *, fresh: bool,
                     init_report: InitReport | None) -> None:
    """Write what the run reads back (each file atomically): a fresh run's tokenizer, model config and labels, the
    config unless a checkpoint already has its own, and where the weights came from (``init_from``)."""
    rd.path.mkdir(parents=True, exist_ok=True)
    if fresh:
        with atomic_output(rd.tokenizer_path) as tmp:
            data.tokenizer.save(tmp)
        atomic_write_text(rd.model_config_path, json.dumps(data.model_config.to_dict(), indent=1) + "\n")
        if data.label_set is not None:
            with atomic_output(rd.labels_path) as tmp:
                save_label_set(data.label_set, tmp)
    if rd.latest_checkpoint() is None or not rd.config_path.exists():
        atomic_write_text(rd.config_path, dump_config(run))
    if init_report is not None:
        atomic_write_text(rd.init_from_path, json.dumps(init_report.to_dict(), indent=1) + "\n")


def _train(run: RunConfig, rd: RunDir, data: TaskData, model: nn.Module, start: float, *, resume: bool,
           progress: bool, on_trainer: Callable[[Trainer], None] | None) -> TrainResult:
    """Hand the prepared run directory to a :class:`Trainer` and train."""
    freeze_parts(model, run.train.freeze)  # before the count (the optimizer freezes them too; idempotent)
    params = num_parameters(model)
    frozen = num_parameters(model, trainable_only=False) - params
    logger.info("model: %s, %s trainable parameters%s", type(model).__name__, f"{params:,}",
                f" ({frozen:,} frozen)" if frozen else "")
    data_summary = describe_lengths(run.task, length_reports(data.datasets))
    for line in data_summary:
        logger.info("data: %s", line)
    eval_fn = make_eval_fn(run, data, split=run.eval.split, during_training=True)
    train_set = data.datasets["train"]
    trainer = Trainer(
        model, train_set, run.train, rd, eval_fn=eval_fn, resume=resume, prepared=True,
        collate_fn=train_set.collate, token_counter=run.task.task_type.count_tokens, progress=progress,
    )
    if on_trainer is not None:
        on_trainer(trainer)
    tokens_before, step_before = trainer.tokens_seen, trainer.step
    t0 = time.perf_counter()
    try:
        metrics = trainer.train()
    finally:
        trainer.close()
    elapsed = time.perf_counter() - t0
    eval_seconds = _eval_seconds(trainer)
    return TrainResult(
        run_dir=rd.path, metrics=dict(metrics), model_config=data.model_config, parameters=params,
        steps=trainer.step - step_before, tokens_seen=trainer.tokens_seen - tokens_before,
        train_seconds=max(elapsed - eval_seconds, 1e-9), wall_seconds=time.perf_counter() - start,
        data_summary=data_summary,
    )


def _eval_seconds(trainer: Trainer) -> float:
    """Seconds the trainer's eval_fn ran (our eval functions time themselves)."""
    fn = trainer.eval_fn
    return float(getattr(fn, "seconds", 0.0)) if fn is not None else 0.0
