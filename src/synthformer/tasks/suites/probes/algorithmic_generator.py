"""``generator: algorithmic:<copy|reverse|sort|add>``: digit-string transduction tasks for encoder-decoders."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...contract import Generator, RawData
from ...registry import register_generator
from .algorithmic import ALGORITHMIC_TASKS, algorithmic_tokenizer, generate_algorithmic

if TYPE_CHECKING:
    from synthformer.data import Tokenizer

    from ...run.task_config import TaskConfig

__all__ = ["AlgorithmicGenerator"]


@register_generator
class AlgorithmicGenerator(Generator):
    """Options: ``num_train``, ``num_valid``, ``num_test``, ``min_len``, ``max_len``, ``seed`` (split k uses
    ``seed + k``; a few random strings may recur across splits, as in any sample). The vocabulary is fixed
    (:func:`.algorithmic.algorithmic_tokenizer`).

    An answer is a single "word" (a digit string), where BLEU is all or nothing: the default metrics are exact
    match and chrF instead.
    """

    name = "algorithmic"
    task_type = "seq2seq"
    arguments = ALGORITHMIC_TASKS
    option_defaults: dict[str, Any] = dict(num_train=10000, num_valid=500, num_test=500, seed=0, min_len=1,
                                           max_len=12)
    fixed_vocabulary = True
    tokenizer_kind = "char"

    def load(self, task: TaskConfig) -> RawData:
        opts = self.options(task)
        sizes = {"train": opts["num_train"], "valid": opts["num_valid"], "test": opts["num_test"]}
        splits = {name: generate_algorithmic(task.generator_arg or "", n, min_len=opts["min_len"],
                                             max_len=opts["max_len"], seed=opts["seed"] + offset)
                  for offset, (name, n) in enumerate(sizes.items()) if n}
        return RawData("seq2seq", splits)

    def tokenizer(self) -> Tokenizer:
        return algorithmic_tokenizer()

    def default_metrics(self, task: TaskConfig) -> list[str]:
        return ["loss", "exact_match", "chrf"]
