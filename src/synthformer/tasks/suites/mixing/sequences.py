"""What every token-mixing benchmark of this suite is: seeded sequences of token ids with their *answer positions*,
and the table of registered benchmarks.

A :class:`MixingSequence` is one training or evaluation sequence in its benchmark's own vocabulary (ids
``0 .. vocab - 1``, named by :attr:`MixingBenchmark.vocabulary`). ``answers`` lists the positions whose token the
model must predict from the tokens before it: the causal language model is trained and scored on those positions
only (Zoology's and MAD's convention: the loss of the other positions is ignored, since they are random and
unpredictable by design).

A benchmark (:class:`MixingBenchmark`) registers under a name, which the config spells ``generator: mixing:<name>``.
It gives its options with their defaults, the vocabulary those options make, the seeded sequences of a split, and
the accuracy of its best context-free guess (the trivial baseline its results page prints beside every kind).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torch.utils.data import Dataset

__all__ = ["MixingBenchmark", "MixingSequence", "StackedDataset", "get_benchmark", "list_benchmarks",
           "register_benchmark", "unigram_guess_accuracy"]


@dataclass(frozen=True)
class MixingSequence:
    """One sequence: ``tokens`` (ids in the benchmark's vocabulary) and ``answers``, the sorted positions
    (each >= 1) whose token is to be predicted from ``tokens[:position]``."""

    tokens: tuple[int, ...]
    answers: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.answers:
            raise ValueError("a sequence needs at least one answer position")
        if list(self.answers) != sorted(set(self.answers)) or self.answers[0] < 1 or self.answers[-1] >= len(
                self.tokens):
            raise ValueError(f"answer positions must be sorted, distinct and in [1, {len(self.tokens) - 1}], got "
                             f"{self.answers}")

    @property
    def answer_tokens(self) -> list[int]:
        """The tokens at the answer positions, in order."""
        return [self.tokens[i] for i in self.answers]


@dataclass(frozen=True)
class MixingBenchmark:
    """A registered benchmark (see the module docstring).

    ``make(n, seed, opts)`` draws ``n`` sequences (``opts``: the checked options); ``vocabulary(opts)`` names the
    ids; ``check(opts)`` raises :class:`~synthformer.common.config.ConfigError` naming a bad option and returns the
    options completed (derived values filled in); ``context_free(train, evaluate, opts)`` is the answer accuracy on
    ``evaluate`` of the best guess that reads no context (e.g. the most frequent answer of ``train``); ``length(opts)``
    is the longest sequence ``make`` returns (the model's ``task.max_len`` must hold it minus one).
    """

    name: str
    summary: str
    option_defaults: Mapping[str, Any]
    check: Callable[[dict[str, Any]], dict[str, Any]]
    vocabulary: Callable[[dict[str, Any]], list[str]]
    make: Callable[[int, int, dict[str, Any]], list[MixingSequence]]
    length: Callable[[dict[str, Any]], int]
    context_free: Callable[[Sequence[MixingSequence], Sequence[MixingSequence], dict[str, Any]], float]


class StackedDataset(Dataset[dict[str, Tensor]]):
    """Equal-length examples held as two tensors, ``input_ids`` (N, L) and ``labels`` (N, L'), that a subclass
    sets: the suite's data sets (one length per setting, so a batch is a stack, with no padding)."""

    input_ids: Tensor
    labels: Tensor

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def __getitem__(self, index: int) -> dict[str, Tensor]:
        return {"input_ids": self.input_ids[index], "labels": self.labels[index]}

    @staticmethod
    def collate(batch: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
        """Stack the items."""
        return {key: torch.stack([item[key] for item in batch]) for key in ("input_ids", "labels")}


_BENCHMARKS: dict[str, MixingBenchmark] = {}


def register_benchmark(benchmark: MixingBenchmark) -> MixingBenchmark:
    """Add ``benchmark`` to the table (its name once)."""
    if benchmark.name in _BENCHMARKS:
        raise ValueError(f"mixing benchmark {benchmark.name!r} is already registered")
    _BENCHMARKS[benchmark.name] = benchmark
    return benchmark


def get_benchmark(name: str) -> MixingBenchmark:
    """The registered benchmark ``name`` (a ``KeyError`` lists the registered ones)."""
    if name not in _BENCHMARKS:
        raise KeyError(f"no mixing benchmark {name!r}; registered: {', '.join(_BENCHMARKS)}")
    return _BENCHMARKS[name]


def list_benchmarks() -> list[str]:
    """The registered benchmarks' names, in registration order."""
    return list(_BENCHMARKS)


def unigram_guess_accuracy(train: Sequence[MixingSequence], evaluate: Sequence[MixingSequence]) -> float:
    """Accuracy on ``evaluate``'s answers of always answering ``train``'s most frequent answer token: the best guess
    that reads nothing of the sequence."""
    counts = Counter(token for seq in train for token in seq.answer_tokens)
    best = counts.most_common(1)[0][0]
    answers = [token for seq in evaluate for token in seq.answer_tokens]
    return sum(token == best for token in answers) / len(answers)
