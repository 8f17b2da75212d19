"""What the matching probes (:mod:`.matching`, :mod:`.recall`) share: their base class (split sizes and seeds,
the labelled splits), lengths derived from ``task.max_len``, and the check of an integer option."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from synthformer.common import ConfigError

from ...contract import Generator, RawData

if TYPE_CHECKING:
    from ...run.task_config import TaskConfig

__all__ = ["SPLITS", "ProbeGenerator", "check_int", "derived"]

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


class ProbeGenerator(Generator):
    """A classification probe with a fixed vocabulary: options ``num_train``, ``num_valid``, ``num_test``, ``seed``
    (split k uses ``seed + k``, so the splits are different draws) besides the subclass's own, which
    :meth:`examples` reads."""

    task_type = "classification"
    fixed_vocabulary = True
    tokenizer_kind = "fixed"

    def examples(self, task: TaskConfig, opts: dict[str, Any]) -> tuple[Callable[[int, int], Sequence[Any]],
                                                                         Callable[[Any], str], list[str]]:
        """``(make, label, classes)``: ``make(n, seed)`` draws n inputs (each with a ``text``), ``label`` names an
        input's class, ``classes`` lists them all (checking the subclass's options on the way)."""
        raise NotImplementedError

    def load(self, task: TaskConfig) -> RawData:
        opts = self.options(task)
        for key in ("num_train", "num_valid", "num_test", "seed"):
            check_int(str(task.generator), key, opts[key], 0)
        make, label, classes = self.examples(task, opts)
        splits = {name: [(ex.text, label(ex)) for ex in make(opts[f"num_{name}"], opts["seed"] + offset)]
                  for offset, name in enumerate(SPLITS) if opts[f"num_{name}"]}
        return RawData("classification", splits, label_set=classes)
