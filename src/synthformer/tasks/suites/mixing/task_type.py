"""Task type ``token_mixing`` and the generator ``mixing:<benchmark>``: a causal language model on a benchmark's
generated sequences, trained and scored at the answer positions only.

The data are :class:`~.sequences.MixingSequence` records from the benchmark named after ``mixing:`` (the table of
:mod:`.sequences`); split k is drawn with ``generator_options.seed + k`` (train, valid, test). Every sequence of a
setting has the benchmark's length ``n``; the model reads its first ``n - 1`` tokens (``task.max_len`` must hold
them) and ``labels[t]`` is token ``t + 1`` where ``t + 1`` is an answer position, -100 elsewhere, so the loss
averages over the answers alone (Zoology's and MAD's objective; the other tokens are random by design).

Metrics: ``loss`` (nats per answer token), ``accuracy`` (answer tokens predicted right by the argmax) and
``sequence_accuracy`` (sequences whose every answer is right). Baseline (``compare``, ``study``, the results
pages): the benchmark's best context-free guess.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from synthformer.common import ConfigError
from synthformer.data import FixedVocabTokenizer
from synthformer.models import IGNORE_INDEX

from ...contract import Generated, GenerateOptions, Generator, RawData, TaskType, random_ids
from ...metrics.likelihood import batches, device_of, to_device
from ...registry import register_generator, register_task_type
from .sequences import MixingBenchmark, MixingSequence, StackedDataset, get_benchmark, list_benchmarks

if TYPE_CHECKING:
    from synthformer.data import Tokenizer
    from synthformer.models import ModelConfig
    from synthformer.train import EvalShard

    from ...contract import LoadedRun, TaskData
    from ...run.config import RunConfig
    from ...run.task_config import TaskConfig

__all__ = ["AnswerDataset", "MixingGenerator", "TokenMixing", "answer_metrics"]

#: The splits a benchmark makes, in seed order.
SPLITS: tuple[str, ...] = ("train", "valid", "test")


class AnswerDataset(StackedDataset):
    """Equal-length sequences as ``input_ids`` (N, n - 1) and ``labels`` (N, n - 1), -100 off the answers."""

    def __init__(self, sequences: Sequence[MixingSequence], offset: int) -> None:
        if not sequences:
            raise ValueError("no sequences")
        length = len(sequences[0].tokens)
        if any(len(s.tokens) != length for s in sequences):
            raise ValueError(f"the sequences of one setting must have one length; found {length} and "
                             f"{sorted({len(s.tokens) for s in sequences})}")
        tokens = torch.tensor([s.tokens for s in sequences], dtype=torch.long) + offset  # (N, n) tokenizer ids
        answer = torch.zeros(tokens.shape, dtype=torch.bool)  # (N, n) True at the answer positions
        for row, seq in enumerate(sequences):
            answer[row, list(seq.answers)] = True
        self.input_ids = tokens[:, :-1].contiguous()  # (N, n - 1)
        self.labels = tokens[:, 1:].masked_fill(~answer[:, 1:], IGNORE_INDEX)  # (N, n - 1): target of input t
        self.seq_len = length - 1


@torch.no_grad()
def answer_metrics(model: nn.Module, dataset: Any, names: list[str], batch_size: int, max_batches: int = 0,
                   shard: EvalShard | None = None, count_key: str = "answers") -> dict[str, Any]:
    """Loss (nats per counted token: labels not -100), accuracy and sequence accuracy (every counted token of a
    sequence right) of a model whose ``logits`` (B, L, V) line up with ``dataset``'s ``labels`` (B, L): an LM on an
    :class:`AnswerDataset`, a compressor on its rebuilt tokens. With a ``shard``, each process scores its part and
    the sums are gathered. The count of scored tokens is reported under ``count_key``."""
    device = device_of(model)
    total, correct, count, whole, sequences = 0.0, 0, 0, 0, 0
    for batch in batches(dataset, batch_size, max_batches, shard):
        batch = to_device(batch, device)
        logits = model(input_ids=batch["input_ids"])["logits"].float()  # (B, L, V); the loss is computed here
        labels = batch["labels"]  # (B, L)
        counted = labels != IGNORE_INDEX
        total += float(nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(),  # (B*L, V), (B*L,)
                                                   ignore_index=IGNORE_INDEX, reduction="sum"))
        right = (logits.argmax(dim=-1) == labels) & counted  # (B, L)
        correct += int(right.sum())
        count += int(counted.sum())
        whole += int((right.sum(dim=1) == counted.sum(dim=1)).sum())
        sequences += labels.shape[0]
    if shard is not None and not shard.whole:
        total, *sums = shard.sum(total, correct, count, whole, sequences)
        correct, count, whole, sequences = (int(s) for s in sums)
    values = {"loss": total / max(count, 1), "accuracy": correct / count if count else math.nan,
              "sequence_accuracy": whole / sequences if sequences else math.nan}
    return {**{n: values[n] for n in names if n in values}, count_key: count}


def _benchmark(task: TaskConfig) -> MixingBenchmark:
    return get_benchmark(str(task.generator_arg))


@register_generator
class MixingGenerator(Generator):
    """``mixing:<benchmark>``: the sequences of a registered benchmark (:mod:`.sequences`); options are the
    benchmark's own (``num_train``, ``num_valid``, ``num_test``, ``seed`` and its difficulty settings)."""

    name = "mixing"
    task_type = "token_mixing"
    fixed_vocabulary = True
    tokenizer_kind = "fixed"

    @property
    def arguments(self) -> tuple[str, ...]:  # type: ignore[override]
        # the benchmarks registered so far (a suite module may add one after this class is defined)
        return tuple(list_benchmarks())

    def options(self, task: TaskConfig) -> dict[str, Any]:
        defaults = _benchmark(task).option_defaults
        unknown = sorted(set(task.generator_options) - set(defaults))
        if unknown:
            raise ConfigError(f"task.generator_options: unknown option(s) {unknown} for generator "
                              f"{task.generator!r}; valid: {', '.join(sorted(defaults))}")
        return _benchmark(task).check({**defaults, **task.generator_options})

    def load(self, task: TaskConfig) -> RawData:
        benchmark, opts = _benchmark(task), self.options(task)
        length = benchmark.length(opts)
        if task.max_len < length - 1:
            raise ConfigError(f"task.max_len: {task.max_len} is shorter than the {task.generator} sequences, which "
                              f"the model reads as {length - 1} tokens; set task.max_len: {length - 1}")
        splits = {name: benchmark.make(int(opts[f"num_{name}"]), int(opts["seed"]) + k, opts)
                  for k, name in enumerate(SPLITS) if opts[f"num_{name}"]}
        if "train" not in splits or "valid" not in splits:
            raise ConfigError(f"task.generator_options: {task.generator} needs num_train and num_valid above 0")
        return RawData("token_mixing", splits, info={"benchmark": benchmark.name, "options": opts})

    def task_tokenizer(self, task: TaskConfig) -> FixedVocabTokenizer:
        return FixedVocabTokenizer(_benchmark(task).vocabulary(self.options(task)))


@register_task_type
class TokenMixing(TaskType):
    """``task.type: token_mixing`` (see the module docstring)."""

    name = "token_mixing"
    arch = "lm"
    metrics = ("loss", "accuracy", "sequence_accuracy")
    formats = ("generated",)
    default_tokenizer = "fixed"
    default_generator = "mixing:mqar"
    reads_files = False

    def check_config(self, task: TaskConfig) -> None:
        if task.train is not None or task.hf_name is not None:
            raise ConfigError(f"task.{'train' if task.train is not None else 'hf_name'}: token_mixing reads no files; "
                              f"give task.generator: mixing:<{'|'.join(list_benchmarks())}>")
        if task.generator is None or not str(task.generator).startswith("mixing:"):
            raise ConfigError(f"task.generator: token_mixing trains on a generated benchmark; expected "
                              f"mixing:<{'|'.join(list_benchmarks())}>, got {task.generator!r}")

    def read(self, task: TaskConfig) -> RawData:
        raise ConfigError("task: token_mixing reads no files; give task.generator: mixing:<benchmark> "
                          f"({', '.join(list_benchmarks())})")

    def training_texts(self, raw: RawData) -> list[str]:
        # the benchmark's fixed vocabulary, as one text (no tokenizer is trained on it)
        return [" ".join(get_benchmark(raw.info["benchmark"]).vocabulary(raw.info["options"]))]

    def build_dataset(self, run: RunConfig, raw: RawData, split: str, tokenizer: Tokenizer,
                      model_config: ModelConfig | None) -> tuple[Any, float | None]:
        first = tokenizer.token_to_id(get_benchmark(raw.info["benchmark"]).vocabulary(raw.info["options"])[0])
        return AnswerDataset(raw.splits[split], int(first)), None

    def evaluate(self, run: RunConfig, data: TaskData, model: nn.Module, split: str, names: list[str], *,
                 batch_size: int, max_batches: int, beam: int | None,
                 max_examples: int | None, shard: EvalShard | None = None) -> tuple[dict[str, Any], list[str]]:
        return answer_metrics(model, data.datasets[split], names, batch_size, max_batches, shard), []

    def comparison_metric(self, task: TaskConfig) -> str:
        return "accuracy"

    def baseline(self, run: RunConfig, data: TaskData) -> tuple[str, float]:
        raw = data.raw
        benchmark = get_benchmark(raw.info["benchmark"])
        return "best context-free guess", benchmark.context_free(raw.splits["train"], raw.splits["valid"],
                                                                 raw.info["options"])

    def generate(self, loaded: LoadedRun, inputs: list[str], options: GenerateOptions) -> list[Generated]:
        """The most likely next token after each input (a benchmark's tokens, space-separated)."""
        out: list[Generated] = []
        for text in inputs:
            ids = torch.tensor([loaded.tokenizer.encode(text)], dtype=torch.long)  # (1, T)
            with torch.no_grad():
                probs = loaded.model(input_ids=ids)["logits"][0, -1].float().softmax(dim=-1)  # (V,)
            best = int(probs.argmax())
            out.append(Generated(text, loaded.tokenizer.decode([best]), float(probs[best])))
        return out

    def random_batch(self, config: ModelConfig, batch_size: int, seq_len: int,
                     generator: torch.Generator) -> dict[str, Tensor]:
        shape = (batch_size, seq_len)
        return {"input_ids": random_ids(generator, shape, config.vocab_size, config.pad_id),
                "labels": torch.randint(0, config.vocab_size, shape, generator=generator)}
