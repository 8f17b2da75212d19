"""Raw data of a run: the train / valid / test splits before tokenization, from the task's data source.

:func:`load_raw_data` asks the registry: a generator makes the splits itself, otherwise the task type reads its
files or Hugging Face data set. The helpers here (seeded subsets and held-out splits, reading the split files)
are shared by the task types. Nothing here tokenizes.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from synthformer.common import ConfigError
from synthformer.data import read_utf8, split_lines

from .contract import RawData
from .registry import get_generator

if TYPE_CHECKING:
    from .run.task_config import TaskConfig

__all__ = ["SPLITS", "finish_example_splits", "load_raw_data", "read_file_splits", "read_input_lines"]

logger = logging.getLogger(__name__)

SPLITS: tuple[str, ...] = ("train", "valid", "test")
_T = TypeVar("_T")


def subset(items: Sequence[_T], limit: int | None, seed: int = 0) -> list[_T]:
    """At most ``limit`` items: a seeded random subset in the original order (files are often sorted by label)."""
    if limit is None or limit >= len(items):
        return list(items)
    keep = sorted(random.Random(seed).sample(range(len(items)), limit))
    return [items[i] for i in keep]


def hold_out(items: list[_T], fraction: float, seed: int = 0) -> tuple[list[_T], list[_T]]:
    """Split off a seeded random ``fraction`` of ``items``: (kept, held out)."""
    n_out = int(len(items) * fraction)
    if n_out == 0:
        raise ConfigError(f"task.valid_fraction: {fraction} of {len(items)} training examples is no example; "
                          f"raise it or give a valid file")
    out = set(random.Random(seed).sample(range(len(items)), n_out))
    return [x for i, x in enumerate(items) if i not in out], [x for i, x in enumerate(items) if i in out]


def read_file_splits(task: TaskConfig, reader: Callable[[TaskConfig, str], list[Any]]) -> dict[str, list[Any]]:
    """The train split and whichever of valid/test the config names, each read with ``reader``."""
    assert task.train is not None
    paths = {"train": task.train, "valid": task.valid, "test": task.test}
    return {name: reader(task, path) for name, path in paths.items() if path is not None}


def finish_example_splits(task: TaskConfig, splits: dict[str, Any]) -> None:
    """For tasks made of examples: hold out a valid split if needed, then apply the size limits."""
    if "valid" not in splits:
        if task.valid_fraction == 0:
            raise ConfigError("task.valid: the task needs a validation split: give task.valid (a file), "
                              "task.valid_fraction (held out of the training data) or, for HF data, hf_splits.valid")
        splits["train"], splits["valid"] = hold_out(splits["train"], task.valid_fraction)
    splits["train"] = subset(splits["train"], task.train_limit)
    for name in ("valid", "test"):
        if name in splits:
            splits[name] = subset(splits[name], task.eval_limit)


def load_raw_data(task: TaskConfig) -> RawData:
    """Read or generate the splits ``task`` describes.

    Raises:
        DataError: malformed or missing data files (the message names file and line).
        ConfigError: settings that do not fit the data (no validation split, unknown generator options, ...).
    """
    task.ensure_data()  # a named data set not on this machine yet: fetched now, or refused in one line
    task_type = task.task_type
    data = get_generator(task.generator)[0].load(task) if task.generator is not None else task_type.read(task)
    data = task_type.finish(task, data)
    sizes = {name: len(split) for name, split in data.splits.items()}
    logger.info("data (%s): %s", task.type, ", ".join(f"{k} {v:,}" for k, v in sizes.items()))
    return data


def read_input_lines(path: str) -> list[str]:
    """Lines of a UTF-8 file (for ``generate --input``): line ends stripped, empty lines kept."""
    return split_lines(read_utf8(path))
