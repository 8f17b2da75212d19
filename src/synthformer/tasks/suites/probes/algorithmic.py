"""Seeded algorithmic sequence-to-sequence tasks on digit strings (no download).

========  ===================  =================
task      source               target
========  ===================  =================
copy      ``"30417"``          ``"30417"``
reverse   ``"30417"``          ``"71403"``
sort      ``"30417"``          ``"01347"``
add       ``"3041+97"``        ``"3138"``
========  ===================  =================

Sources and targets are character strings; :func:`algorithmic_tokenizer` maps each character to one
id. Examples are :class:`~synthformer.data.readers.TranslationPair` records, so they feed
:class:`~synthformer.data.batching.Seq2SeqDataset` like any translation data.
"""

from __future__ import annotations

import logging
import random

from synthformer.data import CharTokenizer, TranslationPair

__all__ = ["ALGORITHMIC_TASKS", "algorithmic_tokenizer", "generate_algorithmic", "solve_algorithmic"]

logger = logging.getLogger(__name__)

#: The task names :func:`generate_algorithmic` accepts.
ALGORITHMIC_TASKS: tuple[str, ...] = ("copy", "reverse", "sort", "add")
_DIGITS = "0123456789"


def solve_algorithmic(task: str, source: str) -> str:
    """The exact target of ``source`` for ``task`` (the reference the generator uses)."""
    if task == "copy":
        return source
    if task == "reverse":
        return source[::-1]
    if task == "sort":
        return "".join(sorted(source))
    if task == "add":
        left, sep, right = source.partition("+")
        if not sep or not left.isdigit() or not right.isdigit():
            raise ValueError(f"add task source must look like '123+45', got {source!r}")
        return str(int(left) + int(right))
    raise ValueError(f"unknown algorithmic task {task!r}; valid: {', '.join(ALGORITHMIC_TASKS)}")


def _number(rng: random.Random, n_digits: int) -> str:
    if n_digits == 1:
        return rng.choice(_DIGITS)
    return rng.choice(_DIGITS[1:]) + "".join(rng.choices(_DIGITS, k=n_digits - 1))


def generate_algorithmic(task: str, num_examples: int, *, min_len: int = 1, max_len: int = 10,
                         seed: int = 0) -> list[TranslationPair]:
    """Generate ``num_examples`` (source, target) pairs of ``task``, reproducibly for ``seed``.

    Args:
        task: ``"copy"``, ``"reverse"``, ``"sort"`` or ``"add"``.
        num_examples: how many pairs.
        min_len, max_len: inclusive bounds on the number of digits of the source (``copy``,
            ``reverse``, ``sort``: uniform) or of each operand (``add``: uniform, no leading zeros).
        seed: seed of a private ``random.Random``.

    Raises:
        ValueError: unknown task or bad bounds.
    """
    if task not in ALGORITHMIC_TASKS:
        raise ValueError(f"unknown algorithmic task {task!r}; valid: {', '.join(ALGORITHMIC_TASKS)}")
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got {min_len}, {max_len}")
    rng = random.Random(seed)
    pairs = []
    for _ in range(num_examples):
        if task == "add":
            source = _number(rng, rng.randint(min_len, max_len)) + "+" + _number(
                rng, rng.randint(min_len, max_len))
        else:
            source = "".join(rng.choices(_DIGITS, k=rng.randint(min_len, max_len)))
        pairs.append(TranslationPair(source, solve_algorithmic(task, source)))
    logger.debug("generated %d %s examples (seed %d)", num_examples, task, seed)
    return pairs


def algorithmic_tokenizer() -> CharTokenizer:
    """Character tokenizer over ``0-9`` and ``+`` (vocabulary 15 with the 4 specials)."""
    return CharTokenizer(_DIGITS + "+")
