"""Reading a trained run directory back: the model (weights of the latest checkpoint), its configs and tokenizer.

``config.yaml`` is the run's configuration as it was started; ``model_config.json`` describes the trained weights
and is what the model is built from. When the two disagree about a model setting (an edit of ``config.yaml``),
``model_config.json`` wins and a warning names each difference; when ``model_config.json`` does not fit the
weights (an edit of it, or a file of another version), loading fails with one line naming the first parameter and
both shapes.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from synthformer.common import ConfigError
from synthformer.data import Tokenizer, load_label_set, load_tokenizer
from synthformer.models import ModelConfig, build_model
from synthformer.train import (
    STATE_FILE,
    RunDir,
    RunError,
    WeightsMismatchError,
    load_model_weights,
    read_trainer_state,
    select_checkpoint,
)

from ..contract import LoadedRun
from .config import RunConfig, load_run_config

__all__ = ["load_run", "read_model_config", "read_run_config"]

logger = logging.getLogger(__name__)

def load_run(run_dir: str | Path, checkpoint: str | None = None) -> LoadedRun:
    """Read a run directory written by :func:`train_run`, with the weights of its latest checkpoint or of
    ``checkpoint`` (``best``, ``latest``, a step: :func:`~synthformer.train.select_checkpoint`).

    Raises:
        RunError: the directory is missing, is not a synthformer run, has no checkpoint yet, or holds files that do
            not belong together (a config, tokenizer, labels or weights of another run, or an edited one).
        CheckpointError: the checkpoint is damaged (naming the file).
    """
    rd = RunDir(run_dir)
    run_dir = rd.path
    if run_dir.exists() and not run_dir.is_dir():
        raise RunError(f"{run_dir} is a file, not a run directory")
    if not run_dir.is_dir():
        raise RunError(f"run directory not found: {run_dir}")
    missing = [name for name in (rd.CONFIG, rd.TOKENIZER, rd.MODEL_CONFIG) if not (run_dir / name).is_file()]
    if missing:
        raise RunError(f"{run_dir} is not a synthformer run directory (missing {', '.join(missing)}); "
                       "create one with 'synthformer train CONFIG --run-dir DIR'")
    ckpt = rd.latest_checkpoint()
    if ckpt is None:
        raise RunError(f"{run_dir} has no checkpoint yet (nothing in {rd.checkpoints_path}); train it first "
                       "or resume it with 'synthformer train CONFIG --run-dir DIR --resume'")
    if checkpoint is not None:
        ckpt = select_checkpoint(run_dir, checkpoint)
    step = read_trainer_state(ckpt / STATE_FILE)["step"]
    config = read_run_config(rd)
    tokenizer = load_tokenizer(rd.tokenizer_path)
    model_config = read_model_config(rd)
    _check_belong_together(rd, config, model_config, tokenizer)
    _warn_config_disagreement(rd, config, model_config)
    label_set = _read_labels(rd, model_config)
    model = build_model(model_config)
    try:
        load_model_weights(ckpt, model)
    except WeightsMismatchError as err:
        raise RunError(f"{err}; the model is built from {rd.model_config_path}, which must be the one the run was "
                       "trained with (was it edited, or written by another version?)") from None
    model.eval()
    return LoadedRun(run_dir, config, tokenizer, model, model_config, ckpt, step, label_set)


def read_run_config(rd: RunDir) -> RunConfig:
    """A run's ``config.yaml``.

    Raises:
        RunError: a bad key or value in it, naming the file (a bare ``ConfigError`` would read like a mistake on
            the command line).
    """
    try:
        return load_run_config(rd.config_path)
    except ConfigError as err:
        text = str(err)
        raise RunError(text if text.startswith(str(rd.config_path)) else f"{rd.config_path}: {text}") from None


def _check_belong_together(rd: RunDir, run: RunConfig, model_config: ModelConfig, tokenizer: Tokenizer) -> None:
    """The run's files describe one model: ``config.yaml``'s task trains ``model_config.json``'s architecture, and
    the tokenizer has the model's vocabulary. A file copied from another run (or edited) fails here, in one line,
    rather than deep inside evaluation."""
    arch = run.task.task_type.arch
    if model_config.arch != arch:
        raise RunError(f"{rd.config_path} is a task.type {run.task.type!r} config (arch {arch!r}), but "
                       f"{rd.model_config_path} describes an arch={model_config.arch!r} model: the files come from "
                       "different runs")
    if tokenizer.vocab_size != model_config.vocab_size:
        raise RunError(f"{rd.tokenizer_path} has {tokenizer.vocab_size} ids, but the model ({rd.model_config_path}) "
                       f"has a vocabulary of {model_config.vocab_size}: the tokenizer is not this run's")


def _read_labels(rd: RunDir, model_config: ModelConfig) -> list[str] | None:
    """``labels.json``: required by a classifier, one name per class."""
    num_classes = getattr(model_config, "num_classes", None)
    if not rd.labels_path.is_file():
        if num_classes is not None:
            raise RunError(f"{rd.labels_path} is missing: a classifier run needs its class names (one per class, "
                           f"{num_classes} here)")
        return None
    labels = load_label_set(rd.labels_path)
    if num_classes is not None and len(labels) != num_classes:
        raise RunError(f"{rd.labels_path} names {len(labels)} classes, but the model ({rd.model_config_path}) has "
                       f"{num_classes}: the labels are not this run's")
    return labels


def _warn_config_disagreement(rd: RunDir, run: RunConfig, model_config: ModelConfig) -> None:
    """Warn when a model setting of ``config.yaml`` disagrees with ``model_config.json``: the latter describes the
    trained weights and wins (the former is what the run was started with; an edit of it changes nothing)."""
    saved = model_config.to_dict()
    diffs = [f"model.{key}: config.yaml {value!r}, model_config.json {saved[key]!r}"
             for key, value in run.model.to_dict().items()
             if key in run.model_section and key in saved and value != saved[key]]
    if diffs:
        logger.warning("%s: config.yaml disagrees with model_config.json (%s); the model is built from "
                       "model_config.json, which describes the trained weights", rd.path, "; ".join(diffs))


def read_model_config(rd: RunDir) -> ModelConfig:
    """The saved model config of a run (one written by an earlier version included)."""
    path = rd.model_config_path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        return ModelConfig.from_dict(data)
    except (OSError, ValueError, TypeError) as err:
        raise RunError(f"{path}: not a valid model config ({err})") from None

