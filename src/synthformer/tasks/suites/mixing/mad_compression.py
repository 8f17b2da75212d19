"""Task type ``compression`` and its generator ``compression``: MAD's compression task (Poli et al. 2024; written
here from the paper's and MAD-Lab's descriptions, no code taken), trained on the arch ``compressor``
(:mod:`.mad_compressor`).

A sequence is ``seq_len - 1`` random tokens (uniform, with replacement) and the aggregation token ``compress``; the
model reads all ``seq_len`` and must rebuild the random tokens from its state at ``compress`` alone. With
``seq_len = 8``::

    t3 t0 t7 t3 t12 t5 t1  compress    ->  rebuilt from z at compress:  t3 t0 t7 t3 t12 t5 t1

This does not fit the causal-LM-at-answer-positions form of the other benchmarks (the targets are read through one
position, not predicted one after another), so it is a task type of its own with its own generator, not an entry of
the benchmark table. ``seq_len`` is the model's input length, ``compress`` included, as in MAD (whose targets also
hold the aggregation token's own position; here only the ``seq_len - 1`` random tokens count, since the last is a
constant). Split k is drawn with ``seed + k`` (train, valid, test).

Vocabulary (``vocab_size`` ids, MAD's default 16): ``t0 .. t<vocab_size-2>`` and ``compress``.

Metrics: ``loss`` (nats per rebuilt token) and ``accuracy`` (rebuilt tokens right by the argmax). Baseline
(``compare``, ``study``): the accuracy of always answering the most frequent training token (about ``1 / (vocab_size
- 1)``).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from synthformer.common import ConfigError
from synthformer.data import FixedVocabTokenizer

from ...contract import Generated, GenerateOptions, Generator, RawData, TaskType, random_ids
from ...metrics.likelihood import device_of
from ...registry import register_generator, register_task_type
from . import mad_compressor  # noqa: F401  (registers the arch the task type trains)
from .mad_options import MAX_VOCAB, SPLIT_DEFAULTS, check_counts, check_int
from .sequences import StackedDataset
from .task_type import answer_metrics

if TYPE_CHECKING:
    from synthformer.data import Tokenizer
    from synthformer.models import ModelConfig
    from synthformer.train import EvalShard

    from ...contract import LoadedRun, TaskData
    from ...run.config import RunConfig
    from ...run.task_config import TaskConfig

__all__ = ["Compression", "CompressionDataset", "CompressionGenerator", "compression_metrics",
           "compression_sequences", "compression_vocabulary"]

NAME = "compression"
DEFAULTS: dict[str, Any] = {"vocab_size": 16, "seq_len": 32, **SPLIT_DEFAULTS}
SPLITS: tuple[str, ...] = ("train", "valid", "test")


def check_options(opts: dict[str, Any]) -> dict[str, Any]:
    """The options checked (a :class:`~synthformer.common.config.ConfigError` names a bad one)."""
    check_int(NAME, opts, "vocab_size", 3, MAX_VOCAB)
    check_int(NAME, opts, "seq_len", 2)
    check_counts(NAME, opts)
    return dict(opts)


def compression_vocabulary(opts: dict[str, Any]) -> list[str]:
    """The data tokens ``t*`` then the aggregation token ``compress``."""
    return [*(f"t{i}" for i in range(int(opts["vocab_size"]) - 1)), "compress"]


def compression_sequences(n: int, seed: int, opts: dict[str, Any]) -> list[tuple[int, ...]]:
    """``n`` sequences of ``seq_len`` ids: ``seq_len - 1`` random data ids, then the aggregation token's."""
    data, length = int(opts["vocab_size"]) - 1, int(opts["seq_len"])
    rng = random.Random(seed)
    return [(*(rng.randrange(data) for _ in range(length - 1)), data) for _ in range(n)]


class CompressionDataset(StackedDataset):
    """Equal-length sequences as ``input_ids`` (N, L) (tokenizer ids) and ``labels`` (N, L - 1), the tokens to
    rebuild."""

    def __init__(self, sequences: Sequence[tuple[int, ...]], offset: int) -> None:
        if not sequences:
            raise ValueError("no sequences")
        self.input_ids = torch.tensor(list(sequences), dtype=torch.long) + offset  # (N, L) tokenizer ids
        self.labels = self.input_ids[:, :-1].clone()  # (N, L - 1): every token but the aggregation token


def compression_metrics(model: nn.Module, dataset: Any, names: list[str], batch_size: int, max_batches: int = 0,
                        shard: EvalShard | None = None) -> dict[str, Any]:
    """Loss (nats per rebuilt token) and accuracy of a compressor on ``dataset`` (:class:`CompressionDataset`):
    the suite's scoring of labelled positions (:func:`~.task_type.answer_metrics`), the count as ``tokens``."""
    return answer_metrics(model, dataset, names, batch_size, max_batches, shard, count_key="tokens")


def most_frequent_accuracy(train: Sequence[tuple[int, ...]], evaluate: Sequence[tuple[int, ...]]) -> float:
    """Accuracy on ``evaluate``'s tokens to rebuild of always answering ``train``'s most frequent one."""
    best = Counter(t for seq in train for t in seq[:-1]).most_common(1)[0][0]
    targets = [t for seq in evaluate for t in seq[:-1]]
    return sum(t == best for t in targets) / len(targets)


@register_generator
class CompressionGenerator(Generator):
    """``generator: compression`` (the default of ``task.type: compression``); options ``vocab_size``,
    ``seq_len``, ``num_train``, ``num_valid``, ``num_test``, ``seed`` (MAD's defaults)."""

    name = NAME
    task_type = NAME
    option_defaults = DEFAULTS
    fixed_vocabulary = True
    tokenizer_kind = "fixed"

    def options(self, task: TaskConfig) -> dict[str, Any]:
        return check_options(super().options(task))

    def load(self, task: TaskConfig) -> RawData:
        opts = self.options(task)
        if task.max_len < opts["seq_len"]:
            raise ConfigError(f"task.max_len: {task.max_len} is shorter than the compression sequences, which the "
                              f"model reads as {opts['seq_len']} tokens; set task.max_len: {opts['seq_len']}")
        splits = {name: compression_sequences(int(opts[f"num_{name}"]), int(opts["seed"]) + k, opts)
                  for k, name in enumerate(SPLITS) if opts[f"num_{name}"]}
        if "train" not in splits or "valid" not in splits:
            raise ConfigError("task.generator_options: compression needs num_train and num_valid above 0")
        return RawData(NAME, splits, info={"options": opts})

    def tokenizer(self) -> FixedVocabTokenizer:
        return FixedVocabTokenizer(compression_vocabulary(DEFAULTS))

    def task_tokenizer(self, task: TaskConfig) -> FixedVocabTokenizer:
        return FixedVocabTokenizer(compression_vocabulary(self.options(task)))


@register_task_type
class Compression(TaskType):
    """``task.type: compression`` (see the module docstring)."""

    name = NAME
    arch = "compressor"
    metrics = ("loss", "accuracy")
    formats = ("generated",)
    default_tokenizer = "fixed"
    default_generator = NAME
    reads_files = False

    def check_config(self, task: TaskConfig) -> None:
        if task.generator is not None and str(task.generator) != NAME:
            raise ConfigError(f"task.generator: compression trains on generated sequences; expected {NAME!r}, got "
                              f"{task.generator!r}")

    def read(self, task: TaskConfig) -> RawData:
        raise ConfigError(f"task: compression reads no files; give task.generator: {NAME}")

    def training_texts(self, raw: RawData) -> list[str]:
        return [" ".join(compression_vocabulary(raw.info["options"]))]  # the fixed vocabulary, as a text

    def build_dataset(self, run: RunConfig, raw: RawData, split: str, tokenizer: Tokenizer,
                      model_config: ModelConfig | None) -> tuple[Any, float | None]:
        first = tokenizer.token_to_id(compression_vocabulary(raw.info["options"])[0])
        return CompressionDataset(raw.splits[split], int(first)), None

    def evaluate(self, run: RunConfig, data: TaskData, model: nn.Module, split: str, names: list[str], *,
                 batch_size: int, max_batches: int, beam: int | None,
                 max_examples: int | None, shard: EvalShard | None = None) -> tuple[dict[str, Any], list[str]]:
        return compression_metrics(model, data.datasets[split], names, batch_size, max_batches, shard), []

    def comparison_metric(self, task: TaskConfig) -> str:
        return "accuracy"

    def baseline(self, run: RunConfig, data: TaskData) -> tuple[str, float]:
        return "most frequent token", most_frequent_accuracy(data.raw.splits["train"], data.raw.splits["valid"])

    def generate(self, loaded: LoadedRun, inputs: list[str], options: GenerateOptions) -> list[Generated]:
        """The tokens rebuilt from each input's code (the aggregation token is appended when the input lacks it);
        the score is the rebuilt tokens' summed log-probability."""
        signal, device = loaded.tokenizer.token_to_id("compress"), device_of(loaded.model)
        out: list[Generated] = []
        for text in inputs:
            ids = loaded.tokenizer.encode(text)
            if not ids or ids[-1] != signal:
                ids = [*ids, signal]
            with torch.no_grad():
                logits = loaded.model(input_ids=torch.tensor([ids], device=device))["logits"]  # (1, n, V)
            logp = logits[0].float().log_softmax(dim=-1)  # (n, V)
            best = logp.argmax(dim=-1)  # (n,)
            score = float(logp.gather(-1, best[:, None]).sum())
            out.append(Generated(text, loaded.tokenizer.decode(best.tolist()), score))
        return out

    def random_batch(self, config: ModelConfig, batch_size: int, seq_len: int,
                     generator: torch.Generator) -> dict[str, Tensor]:
        ids = random_ids(generator, (batch_size, seq_len), config.vocab_size, config.pad_id)  # (B, L)
        return {"input_ids": ids, "labels": ids[:, :-1].clone()}  # (B, L - 1): the tokens to rebuild
