"""``generator: pathfinder``: Long Range Arena's Pathfinder (32 x 32, 1024 pixel tokens) and Path-X (``size: 128``,
16384 tokens), generated images of dashed curves (:mod:`.pathfinder`); 2 classes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synthformer.data import ByteTokenizer

from ...contract import Generator, RawData
from ...registry import register_generator
from .pathfinder import generate_pathfinder

if TYPE_CHECKING:
    from synthformer.data import Tokenizer

    from ...run.task_config import TaskConfig

__all__ = ["PathfinderGenerator"]


@register_generator
class PathfinderGenerator(Generator):
    """Options: ``size`` (32 or 128), ``num_train``, ``num_valid``, ``num_test``, ``seed`` (split k uses
    ``seed + k``). Each image is one token per pixel: the ``byte`` vocabulary (intensity ``b`` is id ``b + 4``).

    The default counts are sized for a CPU; LRA's Pathfinder has 160k / 20k / 20k images (its 200k split
    80 / 10 / 10)."""

    name = "pathfinder"
    task_type = "classification"
    option_defaults: dict[str, Any] = dict(size=32, num_train=8000, num_valid=1000, num_test=1000, seed=0)
    fixed_vocabulary = True
    tokenizer_kind = "byte"

    def load(self, task: TaskConfig) -> RawData:
        opts = self.options(task)
        sizes = {"train": opts["num_train"], "valid": opts["num_valid"], "test": opts["num_test"]}
        splits = {name: generate_pathfinder(n, size=opts["size"], seed=opts["seed"] + offset)
                  for offset, (name, n) in enumerate(sizes.items()) if n}
        return RawData("classification", splits, label_set=["0", "1"])

    def tokenizer(self) -> Tokenizer:
        return ByteTokenizer()
