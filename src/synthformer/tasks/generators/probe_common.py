"""What the matching probes (:mod:`.matching`, :mod:`.recall`) share: split sizes and seeds, lengths derived from
``task.max_len``, and the check of an integer option."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from synthformer.train import ConfigError

__all__ = ["SPLITS", "check_int", "derived", "make_splits"]

#: The splits a probe generator makes, in seed order (split k uses ``seed + k``).
SPLITS: tuple[str, ...] = ("train", "valid", "test")


def check_int(generator: str, name: str, value: Any, low: int, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]``, or a :class:`ConfigError` naming ``generator_options.<name>``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ConfigError(f"task.generator_options.{name}: expected an integer {bound} for generator "
                          f"{generator!r}, got {value!r}")
    return value


def derived(generator: str, name: str, value: Any, max_len: int, fill: Callable[[int], int]) -> int:
    """An option that defaults (None) to what fills ``task.max_len`` (``fill(max_len)``), so that a study that
    varies ``task.max_len`` varies the examples' length with it."""
    if value is None:
        value = fill(int(max_len))
        if value < 1:
            raise ConfigError(f"task.max_len: {max_len} is too short for generator {generator!r} (it derives "
                              f"generator_options.{name} = {value} from it); give max_len >= 8")
    return check_int(generator, name, value, 1)


def make_splits(opts: Mapping[str, Any], make: Callable[[int, int], list[tuple[str, str]]]) -> dict[str, Any]:
    """``{split: make(n, seed + k)}`` for each split k with ``num_<split>`` > 0 (the seed offset keeps the
    splits different draws)."""
    seed = int(opts["seed"])
    return {name: make(int(opts[f"num_{name}"]), seed + offset)
            for offset, name in enumerate(SPLITS) if opts[f"num_{name}"]}
