"""Task type ``classification``: an encoder classifier from text to one label.

Files, by ``task.format`` (inferred from the suffix): ``jsonl``, ``csv``, ``tsv`` (``text_field`` /
``label_field``), ``label_text`` (``label text`` lines, SST-2) or a format a suite adds with
:meth:`Classification.add_format` (the LRA suite's ``listops_tsv`` and ``cifar10``); also a Hugging Face data set
or a generator (``listops``, ``pathfinder``). The classes are the training split's labels (sorted
numerically when all are integers); a valid or test label never seen in training is an error. Metrics: loss and
accuracy. Baseline: the majority class. Generation predicts the label of each input text.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import Tensor, nn

from synthformer.common import ConfigError
from synthformer.data import (
    CLASSIFICATION_FORMATS,
    ClassificationDataset,
    DataError,
    load_hf_dataset,
    read_classification,
)

from ..contract import Generated, GenerateOptions, RawData, TaskType, random_ids
from ..metrics.likelihood import batches, device_of, to_device
from ..registry import register_task_type
from ..sources import finish_example_splits, read_file_splits

if TYPE_CHECKING:
    from synthformer.data import Tokenizer
    from synthformer.models import ModelConfig
    from synthformer.train import EvalShard

    from ..contract import LoadedRun, TaskData
    from ..run.config import RunConfig
    from ..run.task_config import TaskConfig

__all__ = ["Classification", "classification_metrics", "label_set_of", "majority_baseline", "predict_classes"]


@torch.no_grad()
def classification_metrics(model: nn.Module, dataset: Any, names: list[str], batch_size: int,
                           max_batches: int = 0, shard: EvalShard | None = None) -> dict[str, Any]:
    """Loss (nats/example) and accuracy of a classifier on ``dataset``; with a ``shard``, each process scores its
    part of the sample and the sums are gathered."""
    device = device_of(model)
    total, correct, count = 0.0, 0, 0
    for batch in batches(dataset, batch_size, max_batches, shard):
        batch = to_device(batch, device)
        logits = model(**batch)["logits"].float()  # (B, C)
        labels = batch["labels"]
        total += float(torch.nn.functional.cross_entropy(logits, labels, reduction="sum"))
        correct += int((logits.argmax(dim=-1) == labels).sum())
        count += labels.numel()
    if shard is not None and not shard.whole:
        total, summed_correct, summed_count = shard.sum(total, correct, count)
        correct, count = int(summed_correct), int(summed_count)
    out: dict[str, Any] = {}
    if "loss" in names:
        out["loss"] = total / max(count, 1)
    if "accuracy" in names:
        out["accuracy"] = correct / count if count else math.nan
    out["examples"] = count
    return out


@torch.no_grad()
def predict_classes(model: nn.Module, dataset: Any, batch_size: int) -> tuple[list[int], list[float]]:
    """Predicted class ids and their probabilities, in dataset order."""
    device = device_of(model)
    preds: list[int] = []
    probs: list[float] = []
    for batch in batches(dataset, batch_size):
        p = model(**to_device(batch, device))["logits"].float().softmax(dim=-1)  # (B, C)
        best, idx = p.max(dim=-1)
        preds += idx.tolist()
        probs += best.tolist()
    return preds, probs


def majority_baseline(train_labels: list[str], eval_labels: list[str]) -> float:
    """Accuracy of always predicting the training split's most frequent class."""
    if not eval_labels:
        return math.nan
    majority = Counter(train_labels).most_common(1)[0][0]
    return sum(label == majority for label in eval_labels) / len(eval_labels)


def label_set_of(labels: list[str]) -> list[str]:
    """Sorted distinct labels: numerically when all are integers (so "2" < "10"), else as strings."""
    distinct = set(labels)
    try:
        return sorted(distinct, key=int)
    except ValueError:
        return sorted(distinct)


def _read_examples(task: TaskConfig, path: str) -> list[Any]:
    fmt = task.file_format
    if fmt in Classification.added_formats:
        return Classification.added_formats[fmt][0](path)
    return read_classification(path, format=fmt, text_field=task.text_field, label_field=task.label_field,
                               empty_lines=task.empty_lines)


@register_task_type
class Classification(TaskType):
    """``task.type: classification`` (see the module docstring)."""

    name = "classification"
    arch = "classifier"
    metrics = ("loss", "accuracy")
    formats = CLASSIFICATION_FORMATS
    suffix_formats = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "tsv"}
    default_tokenizer = "word"
    derived_model_fields = {"num_classes": "it comes from the training labels"}
    #: Where a record holds its label (``(text, label)`` here; a subclass may read other records).
    label_index: int = 1
    #: The formats suites added (:meth:`add_format`): name -> (reader, the tokenizer kind its texts need or None).
    added_formats: ClassVar[dict[str, tuple[Callable[[str], list[Any]], str | None]]] = {}

    @classmethod
    def add_format(cls, name: str, reader: Callable[[str], list[Any]], tokenizer: str | None = None) -> None:
        """Let ``task.format: <name>`` read a file with ``reader(path)`` into (text, label) records; a suite calls
        this as it is imported, so that its own files need no edit here. ``tokenizer``: the only kind that fits."""
        cls.formats = tuple(dict.fromkeys((*cls.formats, name)))  # dict: importing the suite again adds nothing
        cls.added_formats[name] = (reader, tokenizer)

    def check_config(self, task: TaskConfig) -> None:
        needed = self.added_formats.get(str(task.format), (None, None))[1]
        if needed is not None and task.tokenizer_kind != needed:
            raise ConfigError(f"tokenizer: the {task.format} format is read by the {needed} tokenizer; "
                              f"set tokenizer: {needed}, got {task.tokenizer_kind!r}")

    def infer_format(self, path: str) -> str:
        from pathlib import Path

        inferred = self.suffix_formats.get(Path(path).suffix.lower())
        if inferred is None:
            raise ConfigError(f"format: cannot infer the format of {path!r} from its suffix; set task.format to "
                              f"one of {list(self.formats)}")
        return inferred

    def model_fields(self, num_classes: int | None) -> dict[str, Any]:
        return {"num_classes": num_classes}

    # -- data -------------------------------------------------------------------------------------------
    def read(self, task: TaskConfig) -> RawData:
        if task.hf_name is not None:
            splits = {ours: load_hf_dataset(task.hf_name, theirs, str(task.text_field), str(task.label_field),
                                            config=task.hf_config, empty=task.empty_lines, **task.hf_options)
                      for ours, theirs in task.hf_splits.items()}
        else:
            splits = read_file_splits(task, _read_examples)
        return RawData(self.name, splits)

    def finish(self, task: TaskConfig, raw: RawData) -> RawData:
        splits = raw.splits
        finish_example_splits(task, splits)
        if raw.label_set is None:
            raw.label_set = label_set_of([str(ex[self.label_index]) for ex in splits["train"]])
        known = set(raw.label_set)
        for name in ("valid", "test"):
            for i, ex in enumerate(splits.get(name, [])):
                label = ex[self.label_index]
                if str(label) not in known:
                    where = getattr(ex, "line", None)
                    source = getattr(task, name, None) or f"{name} split"  # the file, when the split has one
                    raise DataError(str(source), where if where is not None else i + 1,
                                    f"label {label!r} never occurs in the training split (labels: {raw.label_set})")
        return raw

    def training_texts(self, raw: RawData) -> list[str]:
        return [ex[0] for ex in raw.splits["train"]]

    def build_dataset(self, run: RunConfig, raw: RawData, split: str, tokenizer: Tokenizer,
                      model_config: ModelConfig | None) -> tuple[Any, float | None]:
        # pooling "cls" reads position 0: put <bos> there as the summary token
        cls_token = model_config is not None and getattr(model_config, "pooling", None) == "cls"
        if cls_token and tokenizer.bos_id == tokenizer.pad_id:  # a model not given a mask derives it from pad ids
            raise ConfigError("model.pooling: 'cls' puts <bos> first, but this tokenizer's <bos> is its <pad> "
                              "(sentencepiece: T5 has no <bos>), which reads as padding; use model.pooling=mean")
        return ClassificationDataset(raw.splits[split], tokenizer, raw.label_set or [], max_len=run.task.max_len,
                                     overflow=run.task.overflow, add_bos=cls_token), None

    def count_tokens(self, batch: Mapping[str, Tensor]) -> Tensor:
        # input tokens: a classifier predicts no token
        mask = batch.get("padding_mask")
        return (~mask).sum() if mask is not None else torch.tensor(batch["input_ids"].numel())

    # -- evaluation and generation ----------------------------------------------------------------------
    def evaluate(self, run: RunConfig, data: TaskData, model: nn.Module, split: str, names: list[str], *,
                 batch_size: int, max_batches: int, beam: int | None,
                 max_examples: int | None, shard: EvalShard | None = None) -> tuple[dict[str, Any], list[str]]:
        return classification_metrics(model, data.datasets[split], names, batch_size, max_batches, shard), []

    def comparison_metric(self, task: TaskConfig) -> str:
        return "accuracy"

    def baseline(self, run: RunConfig, data: TaskData) -> tuple[str, float]:
        train = [str(ex[self.label_index]) for ex in data.raw.splits["train"]]
        valid = [str(ex[self.label_index]) for ex in data.raw.splits["valid"]]
        return "majority-class accuracy", majority_baseline(train, valid)

    def generate(self, loaded: LoadedRun, inputs: list[str], options: GenerateOptions) -> list[Generated]:
        """The predicted label of each text, with its probability as the score."""
        labels = loaded.label_set or []
        dataset = ClassificationDataset([(t, labels[0]) for t in inputs], loaded.tokenizer, labels,
                                        max_len=loaded.config.task.max_len, overflow="truncate",
                                        add_bos=getattr(loaded.model_config, "pooling", None) == "cls")
        preds, probs = predict_classes(loaded.model, dataset, options.batch_size)
        return [Generated(t, labels[p], q) for t, p, q in zip(inputs, preds, probs, strict=True)]

    def format_generated(self, output: Generated, index: int) -> str:
        return f"{output.output}\t{output.score:.4f}"

    def random_batch(self, config: ModelConfig, batch_size: int, seq_len: int,
                     generator: torch.Generator) -> dict[str, Tensor]:
        return {"input_ids": random_ids(generator, (batch_size, seq_len), config.vocab_size, config.pad_id),
                "labels": torch.randint(0, int(config.num_classes), (batch_size,), generator=generator)}
