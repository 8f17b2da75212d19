"""From a :class:`~synthformer.tasks.RunConfig` to a trained run directory, and back.

Flow: raw splits (:func:`~synthformer.tasks.sources.load_raw_data`) -> a tokenizer built on the training split
(or the generator's fixed vocabulary) -> datasets -> the model (vocabulary size from the tokenizer, classes from
the training labels) -> :class:`~synthformer.train.Trainer` with the task's ``eval_fn``.

A run directory (:class:`~synthformer.train.RunDir` owns the names of its files, detects and clears an earlier
run and locks it while a process trains) holds, besides what the trainer writes (``config.yaml``,
``metrics.jsonl``, ``checkpoints/``)::

    synthformer_tokenizer.json   the tokenizer (loaded back by eval and generate)
    model_config.json            the resolved ModelConfig (vocabulary size, classes, max_len, kinds)
    labels.json                  classification: the class names in id order
    init_from.json               a run started from a pretrained one (init_from): which, and what was new
    eval_<split>.json            written by ``synthformer eval`` (metrics)
    eval_<split>_hypotheses.txt  seq2seq: the decoded outputs of that evaluation, one per line
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import nn

from synthformer.data import DataError, Tokenizer, build_tokenizer, load_label_set, load_tokenizer, save_label_set
from synthformer.models import ModelConfig, build_model, num_parameters
from synthformer.train import (
    ConfigError,
    RunDir,
    RunError,
    Trainer,
    is_main_process,
    seed_everything,
)

from .config import RunConfig, resolve_model_config
from .evaluation import evaluate_split, make_eval_fn, record_evaluation
from .init_from import check_pretrained_model, load_pretrained_weights, pretrained_tokenizer, write_init_report
from .lengths import check_truncation, describe_lengths, length_reports
from .loading import LoadedRun, load_run, read_model_config, read_run_config
from .registry import get_generator
from .resume import check_resume_config, config_differences
from .sources import RawData, load_raw_data

__all__ = [
    "CONFIG_FILE",
    "LABELS_FILE",
    "MODEL_CONFIG_FILE",
    "LoadedRun",
    "RunError",
    "TaskData",
    "EvalReport",
    "TrainResult",
    "absolute_paths",
    "build_datasets",
    "build_task_model",
    "check_run_dir",
    "default_eval_split",
    "evaluate_run",
    "load_run",
    "seeded_model",
    "prepare_data",
    "train_run",
]

logger = logging.getLogger(__name__)

CONFIG_FILE = RunDir.CONFIG
MODEL_CONFIG_FILE = RunDir.MODEL_CONFIG
LABELS_FILE = RunDir.LABELS


# ---------------------------------------------------------------------------------------------------------------
# data


@dataclass
class TaskData:
    """Everything a run reads: raw splits, tokenizer, label set and the tokenized datasets (by split)."""

    raw: RawData
    tokenizer: Tokenizer
    datasets: dict[str, Any]
    label_set: list[str] | None = None
    chars_per_token: dict[str, float] = field(default_factory=dict)
    """LM: characters (or bytes) per token of each split, for bits per character of subword models."""


def build_task_tokenizer(run: RunConfig, raw: RawData) -> Tokenizer:
    """The run's tokenizer: the generator's own vocabulary, or one trained on the training split."""
    task = run.task
    if task.generator is not None:
        gen = get_generator(task.generator)[0]
        if gen.fixed_vocabulary:
            return gen.tokenizer()
    kind = task.tokenizer_kind
    try:
        tokenizer = build_tokenizer(kind, raw.training_texts(), task.vocab_size, **task.tokenizer_options)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"task.tokenizer: cannot build a {kind!r} tokenizer with vocab_size={task.vocab_size} and "
                          f"tokenizer_options={task.tokenizer_options}: {err}") from None
    return task.task_type.finish_tokenizer(task, tokenizer)


def build_datasets(run: RunConfig, raw: RawData, tokenizer: Tokenizer, model_config: ModelConfig | None = None,
                   splits: tuple[str, ...] | None = None) -> tuple[dict[str, Any], dict[str, float]]:
    """Tokenized datasets of ``splits`` (default: all the task has), built by the task type, and the characters
    per token of the splits where the task type reports them."""
    task_type = run.task.task_type
    names = [s for s in (splits or tuple(raw.splits)) if s in raw.splits]
    datasets: dict[str, Any] = {}
    ratio: dict[str, float] = {}
    for name in names:
        try:
            datasets[name], chars = task_type.build_dataset(run, raw, name, tokenizer, model_config)
        except DataError:
            raise
        except ValueError as err:
            raise DataError(f"{name} split", None, str(err)) from None
        if chars is not None:
            ratio[name] = chars
        if len(datasets[name]) == 0:
            raise DataError(f"{name} split", None, "no example left after tokenization (all skipped for length?)")
        if name == "train" and (reports := length_reports(datasets)):
            check_truncation(run.task, reports["train"])
    return datasets, ratio


def prepare_data(run: RunConfig, tokenizer: Tokenizer | None = None, label_set: list[str] | None = None,
                 splits: tuple[str, ...] | None = None) -> TaskData:
    """Load the raw data, build (or reuse) the tokenizer and tokenize ``splits`` (default: all)."""
    raw = load_raw_data(run.task)
    if label_set is not None:
        raw.label_set = label_set
    tok = tokenizer if tokenizer is not None else build_task_tokenizer(run, raw)
    model_config = resolve_model_config(run, tok.vocab_size, _num_classes(raw.label_set), _special_ids(tok))
    datasets, ratio = build_datasets(run, raw, tok, model_config, splits)
    return TaskData(raw, tok, datasets, raw.label_set, ratio)


def _num_classes(label_set: list[str] | None) -> int | None:
    if label_set is None:
        return None
    if len(label_set) < 2:
        raise DataError("train split", None, f"classification needs at least 2 classes, found {label_set}")
    return len(label_set)


def _special_ids(tok: Tokenizer) -> tuple[int, int, int]:
    return tok.pad_id, tok.bos_id, tok.eos_id


def seeded_model(config: ModelConfig, seed: int) -> nn.Module:
    """The model of ``config`` initialised from ``seed``: the weights a run with ``train.seed = seed`` starts from
    (``synthformer analyze`` rebuilds them this way instead of storing them)."""
    seed_everything(seed)
    return build_model(config)


def build_task_model(run: RunConfig, data: TaskData) -> tuple[nn.Module, ModelConfig]:
    """The model of ``run`` sized for ``data`` (seeded with ``train.seed`` so its initialisation repeats)."""
    config = resolve_model_config(run, data.tokenizer.vocab_size, _num_classes(data.label_set),
                                  _special_ids(data.tokenizer))
    try:
        return seeded_model(config, run.train.seed), config
    except (TypeError, ValueError) as err:
        # e.g. a mixer option that a kind does not take (model.kind_options reaches every self-attention layer)
        raise ConfigError(f"model: cannot build the model: {err}") from None


# ---------------------------------------------------------------------------------------------------------------
# run directories


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
    updates = {name: str(Path(getattr(task, name)).resolve()) for name in ("train", "valid", "test")
               if getattr(task, name) is not None}
    if updates:
        run = dataclasses.replace(run, task=dataclasses.replace(task, **updates))
    if run.init_from is not None:
        run = dataclasses.replace(run, init_from=str(Path(run.init_from).resolve()))
    return run


# ---------------------------------------------------------------------------------------------------------------
# training


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
            the same ``task`` section.
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
    run_dir = rd.path
    # Under torchrun every process runs this; only the main one checks and writes the run directory (the others
    # would otherwise find the main process's fresh tokenizer and refuse to start). The trainer synchronises them.
    main_process = is_main_process()
    if run.init_from is not None and Path(run.init_from).resolve() == run_dir.resolve():
        raise ConfigError(f"init_from: {run.init_from} is this run's own directory; finetune into another --run-dir")
    existing = rd.check(resume, overwrite) if main_process else []
    run = absolute_paths(run)
    if resume and main_process and rd.latest_checkpoint() is not None:
        lost = [p.name for p in (rd.tokenizer_path, rd.model_config_path) if not p.is_file()]
        if lost:  # a new tokenizer would silently give the saved weights other meanings
            raise RunError(f"cannot resume {run_dir}: {' and '.join(lost)} missing (the checkpoints need the "
                           "tokenizer and model config they were trained with); restore it, or start over with "
                           "--overwrite")
    resuming = resume and rd.tokenizer_path.is_file()
    if resuming:
        if rd.config_path.is_file():
            saved = read_run_config(rd)
            check_resume_config(rd, saved, run)
        tokenizer = load_tokenizer(rd.tokenizer_path)
        label_set = load_label_set(rd.labels_path) if rd.labels_path.is_file() else None
        data = data or prepare_data(run, tokenizer, label_set, splits=("train", run.eval.split))
    elif run.init_from is not None:
        data = data or prepare_data(run, pretrained_tokenizer(run), splits=("train", run.eval.split))
    else:
        data = data or prepare_data(run, splits=("train", run.eval.split))
    if run.eval.split not in data.datasets:
        raise ConfigError(f"eval.split: the task has no {run.eval.split!r} split (it has: "
                          f"{', '.join(data.raw.splits)})")
    model, model_config = build_task_model(run, data)
    if resuming and rd.model_config_path.is_file():
        saved_model = read_model_config(rd).to_dict()  # a config of an earlier version: in today's terms
        diffs = config_differences(saved_model, model_config.to_dict())
        if diffs:
            raise RunError(f"cannot resume {run_dir}: the model differs from the saved one ({'; '.join(diffs)}); "
                           "train into a new --run-dir or pass --overwrite")
    init_report = None
    # also when resuming a run that stopped before its first checkpoint: the trainer then starts fresh from these
    if run.init_from is not None and rd.latest_checkpoint() is None:
        check_pretrained_model(run, model_config)
        init_report = load_pretrained_weights(run, model)
    if overwrite and existing:
        rd.clear()
    run_dir.mkdir(parents=True, exist_ok=True)
    if not resuming and main_process:
        data.tokenizer.save(rd.tokenizer_path)
        rd.model_config_path.write_text(json.dumps(model_config.to_dict(), indent=1) + "\n", encoding="utf-8")
        if data.label_set is not None:
            save_label_set(data.label_set, rd.labels_path)
    if init_report is not None and main_process:
        write_init_report(rd, init_report)
    params = num_parameters(model)
    logger.info("model: %s, %s trainable parameters", type(model).__name__, f"{params:,}")
    data_summary = describe_lengths(run.task, length_reports(data.datasets))
    for line in data_summary:
        logger.info("data: %s", line)

    eval_fn = make_eval_fn(run, data, split=run.eval.split, during_training=True)
    train_set = data.datasets["train"]
    trainer = Trainer(
        model, train_set, run.train, rd, eval_fn=eval_fn, resume=resume, overwrite=overwrite,
        collate_fn=train_set.collate, run_config=run, token_counter=run.task.task_type.count_tokens,
        progress=progress,
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
        run_dir=run_dir, metrics=dict(metrics), model_config=model_config, parameters=params,
        steps=trainer.step - step_before, tokens_seen=trainer.tokens_seen - tokens_before,
        train_seconds=max(elapsed - eval_seconds, 1e-9), wall_seconds=time.perf_counter() - start,
        data_summary=data_summary,
    )


def _eval_seconds(trainer: Trainer) -> float:
    """Seconds the trainer's eval_fn ran (our eval functions time themselves)."""
    fn = trainer.eval_fn
    return float(getattr(fn, "seconds", 0.0)) if fn is not None else 0.0


def default_eval_split(run: RunConfig) -> str:
    """The split ``synthformer eval`` scores by default: test when the task has one, else valid."""
    return "test" if run.task.has_test_split else "valid"


@dataclass
class EvalReport:
    """What :func:`evaluate_run` measured and where it wrote it."""

    split: str
    step: int
    metrics: dict[str, Any]
    hypotheses: list[str]
    path: Path


def evaluate_run(run_dir: str | Path, split: str | None = None, *, beam: int | None = None,
                 max_examples: int | None = None, batch_size: int | None = None,
                 decoding: Mapping[str, Any] | None = None) -> EvalReport:
    """Score the latest checkpoint of a run on ``split`` (default: :func:`default_eval_split`), write
    ``RUN/eval_<split>.json`` (and, for seq2seq, the decoded outputs to ``RUN/eval_<split>_hypotheses.txt``) and
    append the metrics to ``RUN/metrics.jsonl`` as ``<split>_<name>`` at the checkpoint's step.

    ``decoding`` replaces ``eval`` settings of the run for this evaluation (``length_penalty``,
    ``max_decode_len``, ``min_length``, ``no_repeat_ngram_size``; None values are ignored).

    Raises:
        RunError: not a usable run directory, or a split the task does not have.
    """
    loaded = load_run(run_dir)
    run = loaded.config
    split = split or default_eval_split(run)
    if batch_size is not None:
        run = dataclasses.replace(run, eval=dataclasses.replace(run.eval, batch_size=batch_size))
    if max_examples is not None:
        run = dataclasses.replace(run, eval=dataclasses.replace(run.eval, max_examples=max_examples))
    changes = {k: v for k, v in (decoding or {}).items() if v is not None}
    if changes:  # EvalConfig checks the names and values again
        run = dataclasses.replace(run, eval=dataclasses.replace(run.eval, **changes))
    data = prepare_data(run, loaded.tokenizer, loaded.label_set, splits=(split,))
    if split not in data.datasets:
        raise RunError(f"the task of {loaded.run_dir} has no {split!r} split (it has: {', '.join(data.raw.splits)})")
    beam = beam if beam is not None else run.eval.beam
    start = time.perf_counter()
    metrics, hypotheses = evaluate_split(run, data, loaded.model, split, beam=beam, max_examples=run.eval.max_examples)
    report = {
        "split": split,
        "step": loaded.step,
        "checkpoint": str(loaded.checkpoint),
        "metrics": metrics,
        "seconds": time.perf_counter() - start,
    }
    report.update(run.task.task_type.report_extras(run, beam))
    rd = RunDir(loaded.run_dir)
    path = rd.eval_path(split)
    path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if hypotheses:
        rd.hypotheses_path(split).write_text(
            "".join(h.replace("\n", " ") + "\n" for h in hypotheses), encoding="utf-8")
    record_evaluation(loaded.run_dir, split, loaded.step, metrics)
    return EvalReport(split, loaded.step, metrics, hypotheses, path)
