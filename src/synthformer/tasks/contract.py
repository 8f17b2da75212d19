"""The task-type contract: what a task type and a data generator are, and what they hand each other.

A **task type** (``task.type`` in a run config: ``lm``, ``seq2seq``, ``classification``, ...) owns everything
that is specific to it: the model architecture it trains, its file formats, default and allowed metrics, reading
raw data, the texts a tokenizer is built from, building datasets, evaluation, generation, a baseline, and a
random batch for ``synthformer bench``. The pipeline, evaluation, ``compare``, ``bench`` and the CLI ask the
registry (:mod:`synthformer.tasks.registry`) and never branch on a type's name, so adding a task type is one new
module and a ``@register_task_type`` (``docs/extending.md`` walks through one).

A **generator** (``task.generator``: ``pystdlib``, ``listops``, ``algorithmic:<name>``) makes the raw splits of
one task type without files or network; it registers the same way with ``@register_generator``.

The base classes below give every hook a default where one makes sense; a subclass overrides what differs. The
data the hooks receive and return are here too: :class:`RawData` (splits before tokenization), :class:`TaskData`
(tokenizer, datasets and the model config sized for them), :class:`LoadedRun` (a trained run read back),
:class:`Generated` and :class:`GenerateOptions`. This module imports nothing of the pipeline: only the run
configuration's types and :class:`~synthformer.tasks.prepared.Preparation`, for the hooks' signatures.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import Tensor

from synthformer.common import ConfigError

if TYPE_CHECKING:
    from torch import nn

    from synthformer.data import Tokenizer
    from synthformer.models import ModelConfig
    from synthformer.train import EvalShard

    from .prepared.preparation import Preparation
    from .run.config import RunConfig
    from .run.task_config import TaskConfig

__all__ = [
    "GenerateOptions",
    "Generated",
    "Generator",
    "LoadedRun",
    "RawData",
    "TaskData",
    "TaskType",
    "random_ids",
]


@dataclass
class Generated:
    """One output of :meth:`TaskType.generate`: the input text, the generated text and a score (an LM: the
    continuation's log-probability; a classifier: the predicted class's probability; None when there is none)."""

    input: str
    output: str
    score: float | None


@dataclass
class GenerateOptions:
    """Settings of ``synthformer generate``; each task type reads the ones that apply to it."""

    max_new_tokens: int | None = None
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    beam: int | None = None
    seed: int = 0
    batch_size: int = 32
    length_penalty: float | None = None
    """Encoder-decoders: the GNMT length penalty (None: the run's ``eval.length_penalty``)."""
    min_length: int | None = None
    """Encoder-decoders: fewest tokens before ``<eos>`` (None: the run's ``eval.min_length``)."""
    no_repeat_ngram_size: int | None = None
    """Encoder-decoders: never repeat an n-gram of this size (None: the run's ``eval.no_repeat_ngram_size``)."""


@dataclass
class RawData:
    """The splits of a task before tokenization.

    ``splits[name]`` holds what the task type reads (a ``str`` or ``bytes`` for a language model, a list of
    :class:`~synthformer.data.TranslationPair` for seq2seq, a list of ``(text, label)`` records for
    classification, ...); a split that the task does not have is absent. ``label_set`` lists the classes of a
    classification task (from the training labels, or the generator's fixed set), else None.
    """

    task_type: str
    splits: dict[str, Any]
    label_set: list[str] | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def split(self, name: str) -> Any:
        """One split; a missing one raises ``KeyError`` with the splits that exist."""
        if name not in self.splits:
            raise KeyError(f"this task has no {name!r} split; available: {', '.join(self.splits)}")
        return self.splits[name]


@dataclass
class TaskData:
    """Everything a run reads: raw splits, tokenizer, label set, the tokenized datasets (by split) and the model
    config sized for them (vocabulary and special ids from the tokenizer, classes from the labels): built once,
    by :func:`~synthformer.tasks.run.data.prepare_data`, and read by whatever builds or checks the model."""

    raw: RawData
    tokenizer: Tokenizer
    datasets: dict[str, Any]
    model_config: ModelConfig
    label_set: list[str] | None = None
    chars_per_token: dict[str, float] = field(default_factory=dict)
    """LM: characters (or bytes) per token of each split, for bits per character of subword models."""


@dataclass
class LoadedRun:
    """A trained run read back from its directory (model in eval mode, weights of the latest checkpoint)."""

    run_dir: Path
    config: RunConfig
    tokenizer: Tokenizer
    model: nn.Module
    model_config: ModelConfig
    checkpoint: Path
    step: int
    label_set: list[str] | None = None


class TaskType:
    """Base class of a task type. Class attributes describe it; methods do its work.

    Subclasses must set ``name``, ``arch``, ``metrics`` and ``formats`` and implement :meth:`read`,
    :meth:`training_texts`, :meth:`build_dataset`, :meth:`evaluate`, :meth:`generate` and :meth:`random_batch`.
    """

    #: The ``task.type`` value.
    name: ClassVar[str] = ""
    #: The model architecture trained (a name registered in :mod:`synthformer.models.registry`).
    arch: ClassVar[str] = ""
    #: Metrics the type can report (``eval.metrics`` must be a subset).
    metrics: ClassVar[tuple[str, ...]] = ("loss",)
    #: The keys an evaluation reports for a name of :attr:`metrics` where they are not the name itself; None: keys
    #: named from the data (text-to-text's ``glue``: one per dev set, and the benchmark averages). Shared by every
    #: type that reports these names; a type whose names report other keys extends it (dialogue's ``bleu``).
    metric_keys: ClassVar[Mapping[str, tuple[str, ...] | None]] = {
        "rouge": ("rouge1", "rouge2", "rougeL", "rougeLsum"), "glue": None}
    #: File formats of ``task.format``; the first is the default when the suffix says nothing.
    formats: ClassVar[tuple[str, ...]] = ()
    #: File suffix -> format, for inferring ``task.format``.
    suffix_formats: ClassVar[Mapping[str, str]] = {}
    #: The tokenizer when ``task.tokenizer`` is unset (and the generator has none of its own).
    default_tokenizer: ClassVar[str] = "char"
    #: ``TaskConfig`` fields only some types read that this one reads; setting one that the task type (or its
    #: generator) does not read is an error, since it would never reach anything.
    reads: ClassVar[frozenset[str]] = frozenset()
    #: ``model`` keys the task decides (key -> why), besides the vocabulary size and the special ids.
    derived_model_fields: ClassVar[Mapping[str, str]] = {}
    #: ``task.options`` the type takes, with their defaults (``TaskConfig.task_options`` merges them).
    option_defaults: ClassVar[Mapping[str, Any]] = {}
    #: The task type whose raw data this one reads (its generators serve this type too); empty: this type's own.
    #: Span corruption reads what a language model reads.
    raw_type: ClassVar[str] = ""
    #: The generator used when the config names no data source (None: a source is required).
    default_generator: ClassVar[str | None] = None
    #: False for a type that trains only on generated data (its ``read`` refuses every file; the token-mixing
    #: benchmarks): registry-wide checks that feed every type a file skip it.
    reads_files: ClassVar[bool] = True

    # -- configuration ----------------------------------------------------------------------------------
    def check_config(self, task: TaskConfig) -> None:
        """Type-specific checks of a task section (raise :class:`ConfigError` naming the key)."""

    def infer_format(self, path: str) -> str:
        """The file format of ``path`` when ``task.format`` is unset: by suffix, else the first of ``formats``."""
        return self.suffix_formats.get(Path(path).suffix.lower(), self.formats[0])

    def default_metrics(self, task: TaskConfig) -> list[str]:
        """The metrics reported when ``eval.metrics`` is unset."""
        return list(self.metrics)

    def max_positions(self, task: TaskConfig) -> int:
        """The longest sequence the model must hold (the model's ``max_len`` unless the config sets one)."""
        return task.max_len

    def model_fields(self, num_classes: int | None) -> dict[str, Any]:
        """Values of :attr:`derived_model_fields` for the data (``num_classes``: the training label count)."""
        return {}

    def has_test_split(self, task: TaskConfig) -> bool:
        """Whether the data source gives a test split (files and HF sets; generators answer for themselves)."""
        return task.test is not None or (task.hf_name is not None and "test" in task.hf_splits)

    # -- data -------------------------------------------------------------------------------------------
    def read(self, task: TaskConfig) -> RawData:
        """The raw splits from files or a Hugging Face data set (generators make their own)."""
        raise NotImplementedError

    def finish(self, task: TaskConfig, raw: RawData) -> RawData:
        """Checks and bookkeeping after any source (files, HF, generator) produced ``raw``."""
        return raw

    def training_texts(self, raw: RawData) -> list[str]:
        """The texts a tokenizer is trained on (from the training split)."""
        raise NotImplementedError

    def spelled_strings(self, task: TaskConfig, raw: RawData | None) -> dict[str, list[str]]:
        """Strings the tokenizer must round-trip exactly for the task to be scored right, by what they are
        (``{"rte target": ["entailment", "not_entailment"]}``): a text-to-text task's target strings and its
        prefix. ``raw`` is None for a prepared corpus (the declared strings only). The run refuses to start when the
        tokenizer cannot spell one (:mod:`synthformer.data.spelling`). Default: nothing to check."""
        return {}

    def finish_tokenizer(self, task: TaskConfig, tokenizer: Tokenizer) -> Tokenizer:
        """The tokenizer the run uses, from the one built on the training texts (span corruption adds its
        sentinels here). Not called for a tokenizer taken from a pretrained run (``init_from``) or a generator's
        fixed vocabulary."""
        return tokenizer

    def build_dataset(self, run: RunConfig, raw: RawData, split: str, tokenizer: Tokenizer,
                      model_config: ModelConfig | None) -> tuple[Any, float | None]:
        """The tokenized dataset of ``split`` (with a ``collate`` method) and, when it means something, the
        split's characters per token (for bits per character of subword models), else None."""
        raise NotImplementedError

    def preparation(self) -> Preparation | None:
        """How ``synthformer prepare`` stores this type's examples and a run on ``task.prepared`` reads them back
        (:class:`~synthformer.tasks.prepared.Preparation`: layout, record fields, sources, examples, the ids stored,
        the dataset of a split); None (the default): the type cannot be prepared."""
        return None

    def count_tokens(self, batch: Mapping[str, Tensor]) -> Tensor:
        """Tokens of a batch, for the trainer's tokens/s: the predicted targets by default."""
        from synthformer.models import IGNORE_INDEX

        return (batch["labels"] != IGNORE_INDEX).sum()

    # -- evaluation and generation ----------------------------------------------------------------------
    def evaluate(self, run: RunConfig, data: TaskData, model: nn.Module, split: str, names: list[str], *,
                 batch_size: int, max_batches: int, beam: int | None,
                 max_examples: int | None, shard: EvalShard | None = None) -> tuple[dict[str, Any], list[str]]:
        """Metrics ``names`` of ``model`` (already in eval mode) on ``split``, and any decoded outputs.

        ``shard`` (:class:`~synthformer.train.sharding.EvalShard`; None: one process): under N processes every
        process calls this with its own shard; each evaluates its part of the sample (the sample itself, from
        ``batch_size``, ``max_batches`` and ``max_examples``, is the one-process sample) and gathers the sums and
        decoded outputs, so that every process returns the metrics of the whole sample. A type without this
        parameter is called without it and evaluates the whole sample on every process."""
        raise NotImplementedError

    def training_evaluation(self, run: RunConfig) -> tuple[list[str], int | None, int | None]:
        """What the evaluation during training computes, kept cheap: (metric names, beam, max examples)."""
        return run.metrics, None, run.eval.max_examples

    def training_metric_keys(self, run: RunConfig) -> list[str] | None:
        """The keys (without ``eval_``) the evaluation during training reports, for checking ``train.keep_best``
        when the config is read; None when some are named from the data (see :attr:`metric_keys`)."""
        keys: list[str] = []
        for name in self.training_evaluation(run)[0]:
            found = self.metric_keys.get(name, (name,))
            if found is None:
                return None
            keys.extend(found)
        return keys

    def report_extras(self, run: RunConfig, beam: int) -> dict[str, Any]:
        """Settings written into ``eval_<split>.json`` besides the metrics."""
        return {}

    def generate(self, loaded: LoadedRun, inputs: list[str], options: GenerateOptions) -> list[Generated]:
        """One output per input text, with a loaded run."""
        raise NotImplementedError

    def format_generated(self, output: Generated, index: int) -> str:
        """How ``synthformer generate`` prints one output."""
        return output.output

    def comparison_metric(self, task: TaskConfig) -> str:
        """The metric the comparison table shows (``synthformer compare``)."""
        return "loss"

    def baseline(self, run: RunConfig, data: TaskData) -> tuple[str, float]:
        """A model-free reference for the comparison table: (description, value of ``comparison_metric``)."""
        return "none", float("nan")

    # -- benchmarking -----------------------------------------------------------------------------------
    def random_batch(self, config: ModelConfig, batch_size: int, seq_len: int,
                     generator: torch.Generator) -> dict[str, Tensor]:
        """A batch of random tokens with the keys the model of :attr:`arch` takes, no padding."""
        raise NotImplementedError


class Generator:
    """Base class of a built-in data generator (``task.generator``).

    ``name`` is the part before ``:``; ``arguments`` lists the accepted ``:<argument>`` values (empty: none).
    """

    name: ClassVar[str] = ""
    #: The task type whose raw splits :meth:`load` makes.
    task_type: ClassVar[str] = ""
    #: Accepted ``name:<argument>`` values; empty when the generator takes none.
    arguments: ClassVar[tuple[str, ...]] = ()
    #: ``generator_options`` and their defaults.
    option_defaults: ClassVar[Mapping[str, Any]] = {}
    #: True when the generator has a vocabulary of its own (:meth:`tokenizer`); ``task.tokenizer`` must then stay
    #: unset.
    fixed_vocabulary: ClassVar[bool] = False
    #: ``TaskConfig.tokenizer_kind`` when ``task.tokenizer`` is unset (None: the task type's default).
    tokenizer_kind: ClassVar[str | None] = None
    #: ``TaskConfig`` fields this generator reads (see :attr:`TaskType.reads`).
    reads: ClassVar[frozenset[str]] = frozenset()

    def options(self, task: TaskConfig) -> dict[str, Any]:
        """``generator_options`` over the defaults; unknown keys name the valid ones."""
        unknown = sorted(set(task.generator_options) - set(self.option_defaults))
        if unknown:
            raise ConfigError(f"task.generator_options: unknown option(s) {unknown} for generator "
                              f"{task.generator!r}; valid: {', '.join(sorted(self.option_defaults))}")
        return {**self.option_defaults, **task.generator_options}

    def load(self, task: TaskConfig) -> RawData:
        """Make the raw splits."""
        raise NotImplementedError

    def tokenizer(self) -> Tokenizer:
        """The generator's own vocabulary (only when :attr:`fixed_vocabulary` is True)."""
        raise NotImplementedError(f"generator {self.name!r} has no vocabulary of its own")

    def task_tokenizer(self, task: TaskConfig) -> Tokenizer:
        """The vocabulary of ``task`` (only when :attr:`fixed_vocabulary` is True): :meth:`tokenizer` unless the
        generator's options size it (the token-mixing benchmarks' ``vocab_size``)."""
        return self.tokenizer()

    def has_test_split(self, task: TaskConfig) -> bool:
        """Whether :meth:`load` makes a test split with these options."""
        return int(self.options(task).get("num_test", 0)) > 0

    def default_metrics(self, task: TaskConfig) -> list[str] | None:
        """Metrics that suit the generated data better than the task type's defaults, or None."""
        return None


def random_ids(generator: torch.Generator, shape: tuple[int, ...], vocab_size: int, pad_id: int) -> Tensor:
    """Random token ids of ``shape`` that are never ``pad_id`` (for :meth:`TaskType.random_batch`).

    A random pad would switch classifiers and encoders onto their masked (slower) paths, and a benchmark batch of
    real text has no padding inside full-length sequences.
    """
    if vocab_size < 2:
        raise ValueError(f"vocab_size must be at least 2 to draw non-padding tokens, got {vocab_size}")
    ids = torch.randint(0, vocab_size - 1, shape, generator=generator)
    return ids + (ids >= pad_id).long()
