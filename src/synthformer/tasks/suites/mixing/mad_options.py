"""What the MAD benchmarks (Poli et al. 2024, "Mechanistic Design and Scaling of Hybrid Architectures") share: the
checks of their options, the split sizes of MAD's protocol and the context-free baseline.

Every check raises :class:`~synthformer.common.config.ConfigError` naming ``task.generator_options.<name>``, the
value given and what was expected, so a bad setting fails when the config is read, before any sequence is drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from synthformer.common import ConfigError

from .sequences import MixingSequence, unigram_guess_accuracy

__all__ = ["MAX_VOCAB", "SPLIT_DEFAULTS", "check_counts", "check_even", "check_fraction", "check_int",
           "context_free_unigram", "option_error"]

#: The largest vocabulary a benchmark accepts (ids stay far below any tokenizer limit).
MAX_VOCAB = 1 << 16

#: MAD's split sizes (``num_train_examples`` 12,800 and ``num_test_examples`` 1,280; MAD has no validation set, so
#: ``num_valid`` takes the test size) and the seed of the train split (valid: ``seed + 1``, test: ``seed + 2``).
SPLIT_DEFAULTS: dict[str, int] = {"num_train": 12_800, "num_valid": 1_280, "num_test": 1_280, "seed": 0}


def option_error(benchmark: str, name: str, message: str) -> ConfigError:
    """The error of option ``name`` of ``mixing:<benchmark>``: ``message`` says the value and what was expected."""
    return ConfigError(f"task.generator_options.{name}: {message} (mixing:{benchmark})")


def check_int(benchmark: str, opts: dict[str, Any], name: str, low: int, high: int | None = None) -> int:
    """``opts[name]`` as an integer in ``[low, high]`` (``high`` None: no upper bound); a bool is not one."""
    value = opts[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise option_error(benchmark, name, f"expected an integer {bound}, got {value!r}")
    return value


def check_even(benchmark: str, opts: dict[str, Any], name: str, low: int, why: str) -> int:
    """``opts[name]`` as an even integer >= ``low``; ``why`` says what makes it even."""
    value = check_int(benchmark, opts, name, low, MAX_VOCAB if name == "vocab_size" else None)
    if value % 2:
        raise option_error(benchmark, name, f"expected an even number ({why}), got {value}")
    return value


def check_fraction(benchmark: str, opts: dict[str, Any], name: str) -> float:
    """``opts[name]`` as a number in ``[0, 1)``."""
    value = opts[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) < 1.0:
        raise option_error(benchmark, name, f"expected a number in [0, 1), got {value!r}")
    return float(value)


def check_counts(benchmark: str, opts: dict[str, Any]) -> None:
    """The split sizes and the seed: integers >= 0."""
    for name in ("num_train", "num_valid", "num_test", "seed"):
        check_int(benchmark, opts, name, 0)


def context_free_unigram(train: Sequence[MixingSequence], evaluate: Sequence[MixingSequence],
                         opts: dict[str, Any]) -> float:
    """The best guess that reads no context: always the most frequent training answer
    (:func:`~.sequences.unigram_guess_accuracy`)."""
    return unigram_guess_accuracy(train, evaluate)
