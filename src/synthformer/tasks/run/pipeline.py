"""From a :class:`~synthformer.tasks.RunConfig` to a trained run directory.

Flow: the tokenizer a run keeps (a resumed run's, ``init_from``'s: that run is read once,
:func:`~.init_from.open_pretrained`, and handed to the model step as well) -> the data
(:func:`~synthformer.tasks.run.data.prepare_data`: raw splits, tokenizer, the model config sized for them,
datasets) -> the model (built, ``init_from``'s weights, ``train.freeze``) -> :class:`~synthformer.train.Trainer`
with the task's ``eval_fn``. Every step but the data is :mod:`.setup`'s, which a dry run takes too.

The run directory is a :class:`~synthformer.train.Run` opened here (or handed in by a study): opened before anything
is read, so a second run into the same directory fails at once; it refuses an earlier run unless resumed or
overwritten, applies the resume rules (:mod:`.resume`), and, once the data and model are ready, stages the files
below (:meth:`Run.stage`); the trainer receives it, starts it once its own checks passed (deleting an overwritten
run and writing the staged files: a run refused before that leaves no trace) and adds its records
(``metrics.jsonl``, ``checkpoints/``, ``tensorboard/``). :class:`~synthformer.train.RunDir` names the files::

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
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synthformer.common import ConfigError
from synthformer.data import check_data_path
from synthformer.models import ModelConfig
from synthformer.train import Run, RunDir, Trainer, check_earlier_run

from ..contract import TaskData
from .config import RunConfig
from .data import for_run, prepare_data
from .evaluation import make_eval_fn
from .init_from import open_pretrained, split_init_from
from .lengths import describe_lengths, length_reports
from .resume import check_resumed_model, resumed_inputs
from .setup import ModelSetup, kept_tokenizer, setup_model
from .task_config import TaskConfig

__all__ = ["TrainResult", "absolute_paths", "check_data_paths", "check_run_dir", "train_run"]

logger = logging.getLogger(__name__)

_DATA_PATHS = ("train", "valid", "test", "prepared")
"""The task keys that name data files or folders."""


def check_run_dir(run_dir: str | Path, resume: bool = False, overwrite: bool = False) -> list[str]:
    """Refuse to touch an earlier run unless asked; return what an earlier run left there (:meth:`RunDir.check`).

    Raises:
        RunError: ``resume`` and ``overwrite`` together, a file where the directory should be, or an earlier run
            without ``resume`` / ``overwrite``.
    """
    return check_earlier_run(RunDir(run_dir), resume, overwrite)


def check_data_paths(task: TaskConfig) -> None:
    """Refuse a data path of ``task`` (``train``, ``valid``, ``test``, ``prepared``) that is a symlink loop or
    neither a file nor a folder (a FIFO, a device), before anything opens it (:func:`check_data_path`): a FIFO's
    open would wait forever. Whether a folder or a file is right is the format's to say, when it reads it.
    A named data set (``task.data``) not on this machine yet is fetched first (or refused in one line)."""
    task.ensure_data()
    for name in _DATA_PATHS:
        path = getattr(task, name)
        if path is not None:
            expected = "a prepared corpus folder" if name == "prepared" else "a regular file"
            check_data_path(path, what=f"task.{name}", expected=expected)


def absolute_paths(run: RunConfig) -> RunConfig:
    """A copy of ``run`` whose data file paths (and ``init_from``) are absolute, so the saved config works from any
    directory."""
    task = run.task
    updates = {name: str(Path(getattr(task, name)).resolve()) for name in _DATA_PATHS
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


def train_run(run: RunConfig, run_dir: str | Path | Run, *, resume: bool = False, overwrite: bool = False,
              progress: bool = False, data: TaskData | None = None,
              on_trainer: Callable[[Trainer], None] | None = None) -> TrainResult:
    """Train ``run`` into ``run_dir`` (see the module docstring for what it holds).

    Args:
        run: the run configuration.
        run_dir: the run directory; or a :class:`Run` its caller opened and closes (a study, which holds each run
            from before it reads it until its record is written), whose own ``resume`` and ``overwrite`` apply.
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
    # before the run directory is locked (created): a refused path leaves no trace of the run
    check_data_paths(run.task)
    if isinstance(run_dir, Run):
        return _train_owned(run, run_dir, start, progress=progress, data=data, on_trainer=on_trainer)
    # Held until training ends (only by the main process): a second run into the same directory fails here.
    with Run.open(run_dir, resume=resume, overwrite=overwrite) as owner:
        return _train_owned(run, owner, start, progress=progress, data=data, on_trainer=on_trainer)


def _train_owned(run: RunConfig, owner: Run, start: float, *, progress: bool, data: TaskData | None,
                 on_trainer: Callable[[Trainer], None] | None) -> TrainResult:
    rd = owner.rundir
    if run.init_from is not None and Path(split_init_from(run.init_from)[0]).resolve() == rd.path.resolve():
        raise ConfigError(f"init_from: {run.init_from} is this run's own directory; finetune into another --run-dir")
    run = absolute_paths(run)
    resumed = resumed_inputs(owner, run) if owner.resume else None
    # init_from unless the trainer continues a checkpoint: a resumed run that stopped before its first one starts
    # fresh, and so does an overwritten run (its old checkpoints are deleted when it starts)
    init_weights = not owner.resume or rd.latest_checkpoint() is None
    # the pretrained run is read once, where its tokenizer or its weights are taken, and handed to both steps
    pretrained = (open_pretrained(run.init_from) if run.init_from is not None
                  and (init_weights or (data is None and resumed is None)) else None)
    splits = ("train", run.eval.split)
    if data is not None:
        data = for_run(run, data)
    elif (kept := kept_tokenizer(run, resumed, pretrained)) is not None:  # a plan's steps (:mod:`.setup`) from here on
        data = prepare_data(run, kept.tokenizer, kept.label_set, splits=splits)
    else:
        data = prepare_data(run, splits=splits)
    if run.eval.split not in data.datasets:
        raise ConfigError(f"eval.split: the task has no {run.eval.split!r} split (it has: "
                          f"{', '.join(data.raw.splits)})")
    if resumed is not None:
        check_resumed_model(owner, data.model_config)
    setup = setup_model(run, data.model_config, init_weights=init_weights, pretrained=pretrained)
    init_report = setup.init_report
    # written (and an overwritten run deleted) only when the trainer starts the run, after its own checks (one
    # batch of examples, the checkpoint): a run refused until then leaves the directory as it was
    owner.stage(run, tokenizer=data.tokenizer, model_config=data.model_config.to_dict(), labels=data.label_set,
                init_from=init_report.to_dict() if init_report is not None else None)
    return _train(run, owner, data, setup, start, progress=progress, on_trainer=on_trainer)


def _train(run: RunConfig, owner: Run, data: TaskData, setup: ModelSetup, start: float, *, progress: bool,
           on_trainer: Callable[[Trainer], None] | None) -> TrainResult:
    """Hand the started run to a :class:`Trainer` and train."""
    model, params = setup.model, setup.trainable
    logger.info("model: %s, %s trainable parameters%s", type(model).__name__, f"{params:,}",
                f" ({setup.frozen:,} frozen)" if setup.frozen else "")
    data_summary = describe_lengths(run.task, length_reports(data.datasets))
    for line in data_summary:
        logger.info("data: %s", line)
    eval_fn = make_eval_fn(run, data, split=run.eval.split, during_training=True)
    train_set = data.datasets["train"]
    trainer = Trainer(
        model, train_set, run.train, owner, eval_fn=eval_fn, collate_fn=train_set.collate,
        token_counter=run.task.task_type.count_tokens, progress=progress,
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
        run_dir=owner.path, metrics=dict(metrics), model_config=data.model_config, parameters=params,
        steps=trainer.step - step_before, tokens_seen=trainer.tokens_seen - tokens_before,
        train_seconds=max(elapsed - eval_seconds, 1e-9), wall_seconds=time.perf_counter() - start,
        data_summary=data_summary,
    )


def _eval_seconds(trainer: Trainer) -> float:
    """Seconds the trainer's eval_fn ran (our eval functions time themselves)."""
    fn = trainer.eval_fn
    return float(getattr(fn, "seconds", 0.0)) if fn is not None else 0.0
