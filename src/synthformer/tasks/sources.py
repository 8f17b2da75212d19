"""Raw data of a run: the train / valid / test splits as text (LM), sentence pairs (seq2seq) or labelled texts
(classification), from files, a built-in generator or a Hugging Face data set, as ``task`` describes.

Nothing here tokenizes; :mod:`synthformer.tasks.pipeline` does that with the run's tokenizer.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from synthformer.data import (
    DataError,
    TranslationPair,
    generate_algorithmic,
    generate_listops,
    load_hf_dataset,
    load_hf_pairs,
    load_hf_text,
    read_classification,
    read_listops_tsv,
    read_parallel,
    read_parallel_tsv,
    read_text_file,
    split_text,
)
from synthformer.data.errors import read_utf8
from synthformer.train import ConfigError

from .config import TaskConfig
from .pystdlib import load_pystdlib

__all__ = ["SPLITS", "RawData", "load_raw_data"]

logger = logging.getLogger(__name__)

SPLITS: tuple[str, ...] = ("train", "valid", "test")
_T = TypeVar("_T")

# Generator defaults: sized so a small model learns something in minutes on a CPU.
_LISTOPS_DEFAULTS: dict[str, Any] = dict(num_train=10000, num_valid=500, num_test=500, seed=0,
                                         min_length=10, max_length=100, max_depth=4, max_args=5)
_ALGORITHMIC_DEFAULTS: dict[str, Any] = dict(num_train=10000, num_valid=500, num_test=500, seed=0,
                                             min_len=1, max_len=12)
_PYSTDLIB_DEFAULTS: dict[str, Any] = dict(max_train_chars=None, max_eval_chars=None)


@dataclass
class RawData:
    """The splits of a task before tokenization.

    ``splits[name]`` is a ``str`` (or ``bytes`` for a byte-level LM read from files) for ``lm``, a list of
    :class:`~synthformer.data.TranslationPair` for ``seq2seq`` and a list of ``(text, label)`` records for
    ``classification``; a split that the task does not have is absent. ``label_set`` lists the classes
    (classification only; from the training labels, or the generator's fixed set).
    """

    task_type: str
    splits: dict[str, Any]
    label_set: list[str] | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def split(self, name: str) -> Any:
        """One split; a missing one raises ``KeyError`` with the splits that exist."""
        if name not in self.splits:
            raise KeyError(f"this task has no {name!r} split; available: {', '.join(self.splits)}")
        return self.splits[name]

    def training_texts(self) -> list[str]:
        """The training text(s) a tokenizer is built from (both sides of seq2seq pairs)."""
        train = self.splits["train"]
        if self.task_type == "lm":
            return [train] if isinstance(train, str) else []
        if self.task_type == "seq2seq":
            return [p[0] for p in train] + [p[1] for p in train]
        return [ex[0] for ex in train]


def _options(task: TaskConfig, defaults: dict[str, Any]) -> dict[str, Any]:
    """``generator_options`` over the defaults; unknown keys name the valid ones."""
    unknown = sorted(set(task.generator_options) - set(defaults))
    if unknown:
        raise ConfigError(f"task.generator_options: unknown option(s) {unknown} for generator {task.generator!r}; "
                          f"valid: {', '.join(sorted(defaults))}")
    return {**defaults, **task.generator_options}


def _subset(items: Sequence[_T], limit: int | None, seed: int = 0) -> list[_T]:
    """At most ``limit`` items: a seeded random subset in the original order (files are often sorted by label)."""
    if limit is None or limit >= len(items):
        return list(items)
    keep = sorted(random.Random(seed).sample(range(len(items)), limit))
    return [items[i] for i in keep]


def _hold_out(items: list[_T], fraction: float, seed: int = 0) -> tuple[list[_T], list[_T]]:
    """Split off a seeded random ``fraction`` of ``items``: (kept, held out)."""
    n_out = int(len(items) * fraction)
    if n_out == 0:
        raise ConfigError(f"task.valid_fraction: {fraction} of {len(items)} training examples is no example; "
                          f"raise it or give a valid file")
    out = set(random.Random(seed).sample(range(len(items)), n_out))
    return [x for i, x in enumerate(items) if i not in out], [x for i, x in enumerate(items) if i in out]


# -- language modelling --------------------------------------------------------------------------------------
def _read_lm_file(path: str, as_bytes: bool) -> str | bytes:
    if not as_bytes:
        return read_text_file(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError as exc:
        raise DataError(path, None, "file not found") from exc
    except IsADirectoryError as exc:
        raise DataError(path, None, "is a directory, expected a file") from exc
    if not data:
        raise DataError(path, 1, "file is empty")
    return data


def _lm_data(task: TaskConfig) -> RawData:
    as_bytes = task.tokenizer_kind == "byte"
    splits: dict[str, Any] = {}
    info: dict[str, Any] = {}
    if task.generator_name == "pystdlib":
        opts = _options(task, _PYSTDLIB_DEFAULTS)
        valid_fraction = task.valid_fraction or 0.05
        corpus = load_pystdlib(valid_fraction, task.test_fraction, opts["max_train_chars"], opts["max_eval_chars"])
        splits = {"train": corpus.train, "valid": corpus.valid}
        if corpus.test:
            splits["test"] = corpus.test
        info["files"] = {s: len(f) for s, f in corpus.files.items()}
    elif task.hf_name is not None:
        for ours, theirs in task.hf_splits.items():
            texts = load_hf_text(task.hf_name, theirs, str(task.text_field), config=task.hf_config, **task.hf_options)
            splits[ours] = "\n".join(texts)
    else:
        assert task.train is not None
        train = _read_lm_file(task.train, as_bytes)
        valid = _read_lm_file(task.valid, as_bytes) if task.valid is not None else None
        test = _read_lm_file(task.test, as_bytes) if task.test is not None else None
        if valid is None and task.valid_fraction == 0:
            raise ConfigError("task.valid: an LM needs a validation split: give task.valid (a file) or "
                              "task.valid_fraction (the end of the training file)")
        cut_valid = task.valid_fraction if valid is None else 0.0
        cut_test = task.test_fraction if test is None else 0.0
        train, held_valid, held_test = split_text(train, cut_valid, cut_test)
        splits = {"train": train, "valid": valid if valid is not None else held_valid}
        if test is not None or cut_test:
            splits["test"] = test if test is not None else held_test
    if task.train_limit is not None:
        splits["train"] = splits["train"][: task.train_limit]
    if task.eval_limit is not None:
        for name in ("valid", "test"):
            if name in splits:
                splits[name] = splits[name][: task.eval_limit]
    for name, text in splits.items():
        if len(text) < 2:
            raise ConfigError(f"task: the LM {name} split is empty or a single character; check the data source "
                              f"and the split fractions")
    return RawData("lm", splits, info=info)


# -- sequence to sequence -----------------------------------------------------------------------------------
def _read_pairs(task: TaskConfig, path: str) -> list[TranslationPair]:
    fmt = task.file_format
    if fmt == "parallel":
        return read_parallel(f"{path}.{task.source_lang}", f"{path}.{task.target_lang}",
                             empty_lines=task.empty_lines)
    if fmt == "tsv":
        return read_parallel_tsv(path, empty_lines=task.empty_lines)
    # jsonl / csv records: the classification reader checks fields and lines; its "label" is our target text.
    records = read_classification(path, format=fmt, text_field=task.source_field, label_field=task.target_field,
                                  empty_lines=task.empty_lines)
    return [TranslationPair(r.text.strip(), r.label, r.line) for r in records]


def _seq2seq_data(task: TaskConfig) -> RawData:
    splits: dict[str, Any] = {}
    if task.generator_name == "algorithmic":
        opts = _options(task, _ALGORITHMIC_DEFAULTS)
        sizes = {"train": opts["num_train"], "valid": opts["num_valid"], "test": opts["num_test"]}
        for offset, (name, n) in enumerate(sizes.items()):
            if n:
                # Each split has its own seed; a few random strings may recur across splits, as in any sample.
                splits[name] = generate_algorithmic(task.generator_arg or "", n, min_len=opts["min_len"],
                                                    max_len=opts["max_len"], seed=opts["seed"] + offset)
    elif task.hf_name is not None:
        for ours, theirs in task.hf_splits.items():
            splits[ours] = load_hf_pairs(task.hf_name, theirs, task.source_field, task.target_field,
                                         config=task.hf_config, empty=task.empty_lines, **task.hf_options)
    else:
        splits.update(_read_file_splits(task, _read_pairs))
    _finish_example_splits(task, splits)
    return RawData("seq2seq", splits)


def _read_file_splits(task: TaskConfig, reader: Callable[[TaskConfig, str], list[Any]]) -> dict[str, list[Any]]:
    """The train split and whichever of valid/test the config names, each read with ``reader``."""
    assert task.train is not None
    paths = {"train": task.train, "valid": task.valid, "test": task.test}
    return {name: reader(task, path) for name, path in paths.items() if path is not None}


# -- classification -----------------------------------------------------------------------------------------
def _read_examples(task: TaskConfig, path: str) -> list[Any]:
    fmt = task.file_format
    if fmt == "listops_tsv":
        return [(ex.source, str(ex.target)) for ex in read_listops_tsv(path)]
    return read_classification(path, format=fmt, text_field=task.text_field, label_field=task.label_field,
                               empty_lines=task.empty_lines)


def _classification_data(task: TaskConfig) -> RawData:
    splits: dict[str, Any] = {}
    label_set: list[str] | None = None
    if task.generator_name == "listops":
        opts = _options(task, _LISTOPS_DEFAULTS)
        sizes = {"train": opts.pop("num_train"), "valid": opts.pop("num_valid"), "test": opts.pop("num_test")}
        seed = opts.pop("seed")
        for offset, (name, n) in enumerate(sizes.items()):
            if n:
                splits[name] = [(ex.source, str(ex.target)) for ex in generate_listops(n, seed=seed + offset, **opts)]
        label_set = [str(d) for d in range(10)]  # every value 0-9, even if a small sample misses one
    elif task.hf_name is not None:
        for ours, theirs in task.hf_splits.items():
            splits[ours] = load_hf_dataset(task.hf_name, theirs, str(task.text_field), str(task.label_field),
                                           config=task.hf_config, empty=task.empty_lines, **task.hf_options)
    else:
        splits.update(_read_file_splits(task, _read_examples))
    _finish_example_splits(task, splits)
    if label_set is None:
        label_set = _label_set([str(ex[1]) for ex in splits["train"]])
    known = set(label_set)
    for name in ("valid", "test"):
        for i, ex in enumerate(splits.get(name, [])):
            if str(ex[1]) not in known:
                where = getattr(ex, "line", None)
                raise DataError(f"{name} split", where if where is not None else i + 1,
                                f"label {ex[1]!r} never occurs in the training split (labels: {label_set})")
    return RawData("classification", splits, label_set=label_set)


def _label_set(labels: list[str]) -> list[str]:
    """Sorted distinct labels: numerically when all are integers (so "2" < "10"), else as strings."""
    distinct = set(labels)
    try:
        return sorted(distinct, key=int)
    except ValueError:
        return sorted(distinct)


def _finish_example_splits(task: TaskConfig, splits: dict[str, Any]) -> None:
    """Hold out a valid split if needed, then apply the size limits."""
    if "valid" not in splits:
        if task.valid_fraction == 0:
            raise ConfigError("task.valid: the task needs a validation split: give task.valid (a file), "
                              "task.valid_fraction (held out of the training data) or, for HF data, hf_splits.valid")
        splits["train"], splits["valid"] = _hold_out(splits["train"], task.valid_fraction)
    splits["train"] = _subset(splits["train"], task.train_limit)
    for name in ("valid", "test"):
        if name in splits:
            splits[name] = _subset(splits[name], task.eval_limit)


def load_raw_data(task: TaskConfig) -> RawData:
    """Read or generate the splits ``task`` describes.

    Raises:
        DataError: malformed or missing data files (the message names file and line).
        ConfigError: settings that do not fit the data (no validation split, unknown generator options, ...).
    """
    loader = {"lm": _lm_data, "seq2seq": _seq2seq_data, "classification": _classification_data}[task.type]
    data = loader(task)
    sizes = {name: len(split) for name, split in data.splits.items()}
    logger.info("data (%s): %s", task.type, ", ".join(f"{k} {v:,}" for k, v in sizes.items()))
    return data


def read_input_lines(path: str) -> list[str]:
    """Lines of a UTF-8 file (for ``generate --input``): line ends stripped, empty lines kept."""
    from synthformer.data.errors import split_lines

    return split_lines(read_utf8(path))
