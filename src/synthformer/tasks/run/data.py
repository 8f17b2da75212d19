"""From a run configuration to the data a run reads: raw splits (:func:`~synthformer.tasks.sources.load_raw_data`)
-> a tokenizer built on the training split (or the generator's fixed vocabulary) -> the model config sized for
them (vocabulary size and special ids from the tokenizer, classes from the training labels) -> datasets; and the
model built from that config.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from torch import nn

from synthformer.common import ConfigError
from synthformer.data import DataError, Tokenizer, build_tokenizer
from synthformer.models import ModelConfig, build_model
from synthformer.train import seed_everything

from ..contract import RawData, TaskData
from ..prepared.reading import prepared_data
from ..registry import get_generator
from ..sources import load_raw_data
from .config import RunConfig, resolve_model_config
from .lengths import check_truncation, length_reports
from .spelling import check_spelling

__all__ = ["build_datasets", "build_task_model", "build_task_tokenizer", "for_run", "prepare_data", "seeded_model"]


def build_task_tokenizer(run: RunConfig, raw: RawData) -> Tokenizer:
    """The run's tokenizer: the generator's own vocabulary, or one trained on the training split."""
    task = run.task
    if task.generator is not None:
        gen = get_generator(task.generator)[0]
        if gen.fixed_vocabulary:
            return gen.task_tokenizer(task)
    kind = task.tokenizer_kind
    try:
        tokenizer = build_tokenizer(kind, task.task_type.training_texts(raw), task.vocab_size, **task.tokenizer_options)
    except (TypeError, ValueError, OSError) as err:  # OSError: a tokenizer file option (model_file) not found
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
        except (DataError, ConfigError):  # a config error names its key already
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
    """Load the raw data, build (or reuse) the tokenizer and tokenize ``splits`` (default: all). A run on a
    prepared corpus (``task.prepared``) reads its shards instead (:func:`..prepared.reading.prepared_data`)."""
    if run.task.prepared is not None:
        return prepared_data(run, tokenizer, splits)
    raw = load_raw_data(run.task)
    if label_set is not None:
        raw.label_set = label_set
    tok = tokenizer if tokenizer is not None else build_task_tokenizer(run, raw)
    check_spelling(run, tok, raw)
    # the one place the model config is sized for the data: the datasets, the model and the run directory read it
    model_config = resolve_model_config(run, tok.vocab_size, _num_classes(raw.label_set),
                                        (tok.pad_id, tok.bos_id, tok.eos_id))
    datasets, ratio = build_datasets(run, raw, tok, model_config, splits)
    return TaskData(raw, tok, datasets, model_config, raw.label_set, ratio)


def for_run(run: RunConfig, data: TaskData) -> TaskData:
    """``data`` (prepared for a config with the same ``task`` section) with the model config of ``run``: the
    variants of a comparison share their data, not their model settings."""
    model_config = resolve_model_config(run, data.tokenizer.vocab_size, _num_classes(data.label_set),
                                        (data.tokenizer.pad_id, data.tokenizer.bos_id, data.tokenizer.eos_id))
    return dataclasses.replace(data, model_config=model_config)


def _num_classes(label_set: list[str] | None) -> int | None:
    if label_set is None:
        return None
    if len(label_set) < 2:
        raise DataError("train split", None, f"classification needs at least 2 classes, found {label_set}")
    return len(label_set)


def seeded_model(config: ModelConfig, seed: int) -> nn.Module:
    """The model of ``config`` initialised from ``seed``: the weights a run with ``train.seed = seed`` starts from
    (``synthformer analyze`` rebuilds them this way instead of storing them)."""
    seed_everything(seed)
    return build_checked_model(config)


def build_checked_model(config: ModelConfig) -> nn.Module:
    """``build_model(config)``, a model the config cannot describe refused as a :class:`ConfigError` (one line at
    the command line, for a real run and a dry run alike)."""
    try:
        return build_model(config)
    except (TypeError, ValueError) as err:
        # e.g. a mixer option that a kind does not take (model.kind_options reaches every self-attention layer)
        raise ConfigError(f"model: cannot build the model: {err}") from None


def build_task_model(run: RunConfig, data: TaskData) -> tuple[nn.Module, ModelConfig]:
    """The model of ``data.model_config`` (seeded with ``train.seed`` so its initialisation repeats), and that
    config."""
    return seeded_model(data.model_config, run.train.seed), data.model_config
