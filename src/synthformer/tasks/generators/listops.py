"""``generator: listops``: Long Range Arena's ListOps (10 classes), generated at CPU-sized lengths."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synthformer.data import generate_listops, listops_tokenizer

from ..contract import Generator, RawData
from ..registry import register_generator

if TYPE_CHECKING:
    from synthformer.data import Tokenizer

    from ..run.task_config import TaskConfig

__all__ = ["ListOpsGenerator"]


@register_generator
class ListOpsGenerator(Generator):
    """Options: ``num_train``, ``num_valid``, ``num_test``, ``seed`` (split k uses ``seed + k``) and
    :func:`~synthformer.data.generate_listops`'s ``min_length``, ``max_length``, ``max_depth``, ``max_args``.
    The vocabulary is fixed (:func:`~synthformer.data.listops_tokenizer`) and the classes are always 0-9."""

    name = "listops"
    task_type = "classification"
    # sized so a small model learns something in minutes on a CPU
    option_defaults: dict[str, Any] = dict(num_train=10000, num_valid=500, num_test=500, seed=0, min_length=10,
                                           max_length=100, max_depth=4, max_args=5)
    fixed_vocabulary = True
    tokenizer_kind = "fixed"

    def load(self, task: TaskConfig) -> RawData:
        opts = self.options(task)
        sizes = {"train": opts.pop("num_train"), "valid": opts.pop("num_valid"), "test": opts.pop("num_test")}
        seed = opts.pop("seed")
        splits = {name: [(ex.source, str(ex.target)) for ex in generate_listops(n, seed=seed + offset, **opts)]
                  for offset, (name, n) in enumerate(sizes.items()) if n}
        # every value 0-9, even if a small sample misses one
        return RawData("classification", splits, label_set=[str(d) for d in range(10)])

    def tokenizer(self) -> Tokenizer:
        return listops_tokenizer()
