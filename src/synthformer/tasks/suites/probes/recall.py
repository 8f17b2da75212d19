"""``generator: mqar:<recall|control>``: multi-query associative recall (MQAR) and its control.

MQAR is the probe the Zoology paper (Arora et al. 2023, "Zoology: measuring and improving recall in efficient
language models"; the task as its description defines it, no code taken) uses to separate attention from its
efficient substitutes: a context of key-value pairs, then keys to look up. Answering needs the query compared
with every key by content, the operation the paper says synthesized attention lacks.

How it is trained here: **one classification per query**. Each context (``num_pairs`` pairs of distinct keys
``k0`` ... ``k<num_keys-1>`` and values ``v0`` ... ``v<num_values-1>``, drawn uniformly) is asked ``queries``
different keys, each in an example of its own: ``k5 v2 k9 v7 ... ? k9`` labelled ``v7``. So the encoder
classifier (the paper's encoder setting, bidirectional, pooled, one label) answers one query per sequence, and a
context recurs ``queries`` times in a split with different questions. Zoology's own form puts every query in one
causal sequence with a loss at each answer position; this project's language models train on every position,
so the per-query classification is the form that keeps the loss on the answers alone.

``mqar:control`` makes the same inputs (same seed: the same sequences) labelled with the value of the *first*
pair: a fixed position, read without comparing any token with another.

Options: ``num_train``, ``num_valid``, ``num_test`` (examples, i.e. queries), ``seed`` (split k uses
``seed + k``), ``num_keys`` and ``num_values`` (at most 256 each), ``num_pairs`` (None: the most that fit
``task.max_len``, ``(max_len - 2) // 2``), ``queries`` (per context). The vocabulary is fixed (256 keys,
256 values and ``?``); the classes are ``v0`` ... ``v<num_values-1>``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from synthformer.common import ConfigError
from synthformer.data import FixedVocabTokenizer

from ...registry import register_generator
from .common import ProbeGenerator, check_int, derived

if TYPE_CHECKING:
    from ...run.task_config import TaskConfig

__all__ = ["MAX_KEYS", "MAX_VALUES", "RecallExample", "RecallGenerator", "control_value", "generate_recall",
           "recalled_value"]

MAX_KEYS = 256
MAX_VALUES = 256
#: The token between the pairs and the queried key.
QUERY = "?"


@dataclass(frozen=True)
class RecallExample:
    """One query on a context: the pairs' keys and values (indices) and the queried key."""

    keys: tuple[int, ...]
    values: tuple[int, ...]
    query: int

    @property
    def text(self) -> str:
        """``k5 v2 k9 v7 ... ? k9``: 2 * num_pairs + 2 tokens."""
        pairs = [token for k, v in zip(self.keys, self.values, strict=True) for token in (f"k{k}", f"v{v}")]
        return " ".join([*pairs, QUERY, f"k{self.query}"])


def recalled_value(example: RecallExample) -> str:
    """The label of ``mqar:recall``: the value paired with the queried key."""
    return f"v{example.values[example.keys.index(example.query)]}"


def control_value(example: RecallExample) -> str:
    """The label of ``mqar:control``: the first pair's value."""
    return f"v{example.values[0]}"


def generate_recall(n: int, *, num_keys: int, num_values: int, num_pairs: int, queries: int,
                    seed: int) -> list[RecallExample]:
    """``n`` seeded queries: contexts of ``num_pairs`` distinct keys with uniform values, each asked ``queries``
    distinct keys (the last context may be asked fewer, to give exactly ``n``)."""
    if num_keys < num_pairs:
        raise ConfigError(f"task.generator_options.num_keys: {num_keys} keys cannot give {num_pairs} distinct ones "
                          f"per context; expected num_keys >= num_pairs = {num_pairs}")
    if queries > num_pairs:
        raise ConfigError(f"task.generator_options.queries: {queries} distinct queries need as many pairs; "
                          f"expected queries <= num_pairs = {num_pairs}")
    rng = random.Random(seed)
    out: list[RecallExample] = []
    while len(out) < n:
        keys = tuple(rng.sample(range(num_keys), num_pairs))
        values = tuple(rng.randrange(num_values) for _ in keys)
        for position in rng.sample(range(num_pairs), min(queries, n - len(out))):
            out.append(RecallExample(keys, values, keys[position]))
    return out


@register_generator
class RecallGenerator(ProbeGenerator):
    """``mqar:recall`` and ``mqar:control`` (see the module docstring for the task and its options)."""

    name = "mqar"
    arguments = ("recall", "control")
    option_defaults: dict[str, Any] = dict(num_train=10000, num_valid=500, num_test=500, seed=0, num_keys=MAX_KEYS,
                                           num_values=16, num_pairs=None, queries=4)

    def examples(self, task: TaskConfig, opts: dict[str, Any]) -> tuple[Callable[[int, int], list[RecallExample]],
                                                                         Callable[[RecallExample], str], list[str]]:
        spec = str(task.generator)
        num_keys = check_int(spec, "num_keys", opts["num_keys"], 1, MAX_KEYS)
        num_values = check_int(spec, "num_values", opts["num_values"], 2, MAX_VALUES)
        num_pairs = derived(spec, "num_pairs", opts["num_pairs"], task.max_len, lambda m: (m - 2) // 2)
        queries = check_int(spec, "queries", opts["queries"], 1)

        def make(n: int, seed: int) -> list[RecallExample]:
            return generate_recall(n, num_keys=num_keys, num_values=num_values, num_pairs=num_pairs,
                                   queries=queries, seed=seed)

        label = control_value if task.generator_arg == "control" else recalled_value
        return make, label, [f"v{i}" for i in range(num_values)]

    def tokenizer(self) -> FixedVocabTokenizer:
        keys = [f"k{i}" for i in range(MAX_KEYS)]
        return FixedVocabTokenizer([*keys, *(f"v{i}" for i in range(MAX_VALUES)), QUERY])
