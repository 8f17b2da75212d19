"""``RunConfig``: everything one experiment needs, as typed sections loaded from YAML with dotted overrides.

Sections:

* ``task``: what is learned and from which data: the task type (``lm``, ``seq2seq``, ``classification``),
  the data source (files, a built-in generator, or a Hugging Face data set), the tokenizer and the lengths.
* ``model``: a preset name (``preset: lm-small``) and/or any :class:`~synthformer.models.ModelConfig` field.
  The vocabulary size, the number of classes, the special ids and the architecture come from the task and the
  tokenizer, never from this section, so they cannot disagree with the data.
* ``train``: :class:`~synthformer.train.TrainConfig` (steps, batch size, learning rate, checkpoints, ...).
* ``eval``: decoding and metric settings (beam 4 and length penalty 0.6 by default, as in the paper).

Example (``configs/lm_tiny_shakespeare.yaml``)::

    task:
      type: lm
      train: ../shared/data/tiny_shakespeare/input.txt
      valid_fraction: 0.1
      tokenizer: char
      max_len: 128
    model:
      preset: lm-small
      decoder_kind: R+V
    train:
      steps: 2000
      lr: 1.0e-3

loaded with ``load_run_config("configs/lm_tiny_shakespeare.yaml", ["train.lr=3e-4", "model.n_layers=4"])``.
Every problem raises :class:`~synthformer.train.ConfigError` naming the dotted key and the bad value.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from synthformer.data import ALGORITHMIC_TASKS, CLASSIFICATION_FORMATS, OVERFLOW_POLICIES, TOKENIZER_KINDS
from synthformer.models import ModelConfig, get_preset, list_presets
from synthformer.train import ConfigError, TrainConfig, load_config

__all__ = [
    "ARCH_OF_TASK",
    "EVAL_METRICS",
    "GENERATORS",
    "TASK_TYPES",
    "EvalConfig",
    "RunConfig",
    "TaskConfig",
    "default_metrics",
    "load_run_config",
    "resolve_model_config",
]

logger = logging.getLogger(__name__)

TASK_TYPES: tuple[str, ...] = ("lm", "seq2seq", "classification")
#: task type -> ``ModelConfig.arch``.
ARCH_OF_TASK: dict[str, str] = {"lm": "lm", "seq2seq": "seq2seq", "classification": "classifier"}
#: Built-in data generators (no download) and the task type each one feeds. ``algorithmic:<name>`` takes one of
#: :data:`synthformer.data.ALGORITHMIC_TASKS` as its name.
GENERATORS: dict[str, str] = {"pystdlib": "lm", "listops": "classification", "algorithmic": "seq2seq"}
#: Metrics each task type can report.
EVAL_METRICS: dict[str, tuple[str, ...]] = {
    "lm": ("loss", "perplexity", "bits_per_character", "bits_per_byte"),
    "seq2seq": ("loss", "perplexity", "bleu", "chrf", "rouge", "exact_match"),
    "classification": ("loss", "accuracy"),
}
#: File formats per task type (``None`` in ``task.format`` infers it, see :class:`TaskConfig`).
FILE_FORMATS: dict[str, tuple[str, ...]] = {
    "lm": ("text",),
    "seq2seq": ("parallel", "tsv", "jsonl", "csv"),
    "classification": (*CLASSIFICATION_FORMATS, "listops_tsv"),
}
# ModelConfig fields the task decides; setting them in ``model`` would be silently wrong, so it is an error.
_DERIVED_MODEL_FIELDS: dict[str, str] = {
    "arch": "it follows task.type",
    "vocab_size": "it comes from the tokenizer (set task.vocab_size to size the tokenizer)",
    "tgt_vocab_size": "source and target share one tokenizer",
    "num_classes": "it comes from the training labels",
    "pad_id": "it comes from the tokenizer",
    "bos_id": "it comes from the tokenizer",
    "eos_id": "it comes from the tokenizer",
}
_MODEL_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(ModelConfig))
# A placeholder vocabulary for checking a model section before any tokenizer exists (byte-sized).
_CHECK_VOCAB = 260


@dataclass
class TaskConfig:
    """What is learned and from which data.

    Data source: exactly one of ``train`` (files), ``generator`` (built-in, no download) or ``hf_name``
    (Hugging Face ``datasets``; needs the optional package and, for remote sets, the network).

    File paths are relative to the working directory (the shipped configs assume the repository root); the run
    directory's saved ``config.yaml`` holds them made absolute, so ``eval`` and ``generate`` work from anywhere.

    Files, by task type and ``format`` (``None`` infers it):

    * ``lm``: ``text``: one UTF-8 file per split (read as raw bytes for ``tokenizer: byte``). Without a
      ``valid`` file the training file is cut contiguously: the last ``valid_fraction`` (+ ``test_fraction``)
      of it become the valid (and test) split (tiny_shakespeare: 0.1; enwik8: 0.05 + 0.05).
    * ``seq2seq``: ``parallel``: ``train`` etc. are path prefixes read as ``PREFIX.source_lang`` and
      ``PREFIX.target_lang`` (line-aligned, e.g. Multi30k's ``train.de`` / ``train.en``); ``tsv``: two tab-separated
      columns (source, target); ``jsonl`` / ``csv``: ``source_field`` and ``target_field`` of each record (e.g.
      CNN/DailyMail's ``article`` / ``highlights``). Inferred from the suffix, else ``parallel``.
    * ``classification``: ``jsonl``, ``csv``, ``tsv`` (``text_field`` / ``label_field``), ``label_text``
      (``label text`` lines, SST-2) or ``listops_tsv`` (the LRA ListOps files). Inferred from the suffix.

    Without a ``valid`` file (seq2seq, classification) a seeded random ``valid_fraction`` of the training
    examples is held out.

    Generators (``generator_options`` in brackets, all optional):

    * ``pystdlib``: character LM over the ``.py`` files of the running Python's standard library, a file-level
      deterministic split (``valid_fraction`` / ``test_fraction`` of the files, valid 0.05 when left at 0;
      ``max_train_chars``, ``max_eval_chars``).
    * ``listops``: Long Range Arena ListOps, 10 classes (``num_train``, ``num_valid``, ``num_test``, ``seed``,
      and :func:`~synthformer.data.generate_listops`'s ``min_length``, ``max_length``, ``max_depth``,
      ``max_args``, ...).
    * ``algorithmic:<copy|reverse|sort|add>``: digit-string seq2seq (``num_train``, ``num_valid``, ``num_test``,
      ``min_len``, ``max_len``, ``seed``).
    """

    type: Literal["lm", "seq2seq", "classification"] = "lm"
    # -- data: files
    train: str | None = None
    """Training file (or path prefix for ``parallel`` seq2seq data)."""
    valid: str | None = None
    test: str | None = None
    format: str | None = None
    source_lang: str | None = None
    """``parallel`` seq2seq files: the source suffix (``de`` for ``train.de``)."""
    target_lang: str | None = None
    text_field: str | int = "text"
    label_field: str | int = "label"
    source_field: str = "source"
    target_field: str = "target"
    valid_fraction: float = 0.0
    """Hold this fraction of the training data out as the valid split when no ``valid`` file is given."""
    test_fraction: float = 0.0
    """LM and pystdlib only: hold this fraction out as the test split when no ``test`` file is given."""
    empty_lines: Literal["error", "skip"] = "error"
    train_limit: int | None = None
    """Use at most this many training examples (seq2seq, classification: a seeded random subset) or
    characters (LM: the beginning)."""
    eval_limit: int | None = None
    """The same for the valid and test splits."""
    # -- data: built-in generators
    generator: str | None = None
    generator_options: dict[str, Any] = field(default_factory=dict)
    # -- data: Hugging Face datasets
    hf_name: str | None = None
    hf_config: str | None = None
    hf_splits: dict[str, str] = field(default_factory=lambda: {"train": "train", "valid": "validation"})
    """Our split name (train, valid, test) -> the data set's split expression."""
    hf_options: dict[str, Any] = field(default_factory=dict)
    """Passed to ``datasets.load_dataset`` (``data_files``, ``cache_dir``, ...)."""
    # -- tokenizer
    tokenizer: str | None = None
    """``char``, ``byte``, ``word`` or ``bpe``, trained on the training split and saved in the run directory.
    ``None``: the generator's own vocabulary, else ``char`` (lm), ``bpe`` (seq2seq), ``word`` (classification)."""
    vocab_size: int | None = None
    """Tokenizer size cap (specials included); ``None``: the kind's default."""
    tokenizer_options: dict[str, Any] = field(default_factory=dict)
    """Passed to the tokenizer's training (``split``, ``lowercase``, ``min_frequency``)."""
    # -- lengths
    max_len: int = 128
    """LM: the context (block) length; seq2seq: the longest source; classification: the longest input."""
    max_target_len: int | None = None
    """seq2seq: the longest decoder sequence (target tokens + 1); ``None``: ``max_len``."""
    overflow: str = "truncate"
    """What to do with longer examples: ``truncate``, ``skip`` or ``error``."""
    stride: int | None = None
    """LM: step between training blocks (``None``: ``max_len``, no overlap)."""

    def __post_init__(self) -> None:
        if self.type not in TASK_TYPES:
            raise ConfigError(f"type: expected one of {list(TASK_TYPES)}, got {self.type!r}")
        sources = [name for name, value in (("train", self.train), ("generator", self.generator),
                                            ("hf_name", self.hf_name)) if value is not None]
        if len(sources) != 1:
            given = ", ".join(sources) if sources else "none"
            raise ConfigError(
                f"train: give exactly one data source: 'train' (files), 'generator' ({', '.join(GENERATORS)}) "
                f"or 'hf_name' (a Hugging Face data set); given: {given}"
            )
        for name in ("valid_fraction", "test_fraction"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ConfigError(f"{name}: expected a value in [0, 1), got {value!r}")
        if self.valid_fraction + self.test_fraction >= 1.0:
            raise ConfigError(f"valid_fraction: valid_fraction + test_fraction must be < 1, got "
                              f"{self.valid_fraction} + {self.test_fraction}")
        if self.overflow not in OVERFLOW_POLICIES:
            raise ConfigError(f"overflow: expected one of {list(OVERFLOW_POLICIES)}, got {self.overflow!r}")
        for name in ("max_len", "max_target_len", "stride", "vocab_size", "train_limit", "eval_limit"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name}: expected an integer >= 1, got {value!r}")
        if self.max_target_len is not None and self.type != "seq2seq":
            raise ConfigError(f"max_target_len: only used by type 'seq2seq', got type {self.type!r}")
        if self.stride is not None and self.type != "lm":
            raise ConfigError(f"stride: only used by type 'lm', got type {self.type!r}")
        self._check_generator()
        self._check_files()
        self._check_tokenizer()

    # -- checks ---------------------------------------------------------------------------------------------
    @property
    def generator_name(self) -> str | None:
        """The generator without its argument (``algorithmic:reverse`` -> ``algorithmic``)."""
        return None if self.generator is None else self.generator.split(":", 1)[0]

    @property
    def generator_arg(self) -> str | None:
        """The generator's argument (``algorithmic:reverse`` -> ``reverse``), if any."""
        if self.generator is None or ":" not in self.generator:
            return None
        return self.generator.split(":", 1)[1]

    def _check_generator(self) -> None:
        if self.generator is None:
            if self.generator_options:
                raise ConfigError("generator_options: set only together with 'generator'")
            return
        name, arg = self.generator_name, self.generator_arg
        if name not in GENERATORS:
            close = difflib.get_close_matches(name or "", list(GENERATORS), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(f"generator: unknown generator {self.generator!r}{hint}; valid: pystdlib, listops, "
                              f"{', '.join('algorithmic:' + t for t in ALGORITHMIC_TASKS)}")
        if name == "algorithmic":
            if arg not in ALGORITHMIC_TASKS:
                raise ConfigError(f"generator: {self.generator!r} needs one of "
                                  f"{', '.join('algorithmic:' + t for t in ALGORITHMIC_TASKS)}")
        elif arg is not None:
            raise ConfigError(f"generator: {name!r} takes no ':' argument, got {self.generator!r}")
        if GENERATORS[name] != self.type:
            raise ConfigError(f"generator: {self.generator!r} makes a {GENERATORS[name]!r} task, but type is "
                              f"{self.type!r}")

    def _check_files(self) -> None:
        if self.format is not None:
            valid = FILE_FORMATS[self.type]
            if self.format not in valid:
                raise ConfigError(f"format: expected one of {list(valid)} for type {self.type!r}, got {self.format!r}")
            if self.train is None:
                raise ConfigError("format: only used with files ('train'); generators and HF sets have no format")
        if self.train is None and (self.valid is not None or self.test is not None):
            key = "valid" if self.valid is not None else "test"
            raise ConfigError(f"{key}: split files need a 'train' file too (the data source is "
                              f"{'generator' if self.generator else 'hf_name'})")
        if self.type == "seq2seq" and self.train is not None and self.file_format == "parallel":
            if not self.source_lang or not self.target_lang:
                raise ConfigError("source_lang: 'parallel' seq2seq files need source_lang and target_lang "
                                  f"(files {self.train}.SOURCE_LANG and {self.train}.TARGET_LANG)")
        if self.test_fraction and self.type != "lm" and self.generator is None:
            raise ConfigError("test_fraction: only used by LM text (seq2seq and classification take a 'test' file)")
        if self.hf_name is not None:
            unknown = sorted(set(self.hf_splits) - {"train", "valid", "test"})
            if unknown or "train" not in self.hf_splits:
                raise ConfigError(f"hf_splits: keys must be train (required), valid, test; got "
                                  f"{sorted(self.hf_splits)}")

    def _check_tokenizer(self) -> None:
        if self.tokenizer is None:
            return
        if self.generator_name in ("listops", "algorithmic"):
            raise ConfigError(f"tokenizer: the generator {self.generator!r} has its own fixed vocabulary; "
                              f"leave tokenizer unset (null), got {self.tokenizer!r}")
        if self.tokenizer not in TOKENIZER_KINDS:
            raise ConfigError(f"tokenizer: expected one of {list(TOKENIZER_KINDS)}, got {self.tokenizer!r}")
        if self.tokenizer == "byte" and self.vocab_size not in (None, 260):
            raise ConfigError(f"vocab_size: the byte tokenizer has exactly 260 ids, got {self.vocab_size!r}")

    # -- derived --------------------------------------------------------------------------------------------
    @property
    def file_format(self) -> str | None:
        """``format``, or the one inferred from the training file's name (``None`` without files)."""
        if self.train is None:
            return None
        if self.format is not None:
            return self.format
        suffix = Path(self.train).suffix.lower()
        if self.type == "lm":
            return "text"
        if self.type == "seq2seq":
            return {".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv"}.get(suffix, "parallel")
        inferred = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "tsv"}.get(suffix)
        if inferred is None:
            raise ConfigError(f"format: cannot infer the format of {self.train!r} from its suffix; set task.format to "
                              f"one of {list(FILE_FORMATS['classification'])}")
        return inferred

    @property
    def tokenizer_kind(self) -> str:
        """The tokenizer actually used: ``tokenizer``, or the default for the task and data source."""
        if self.tokenizer is not None:
            return self.tokenizer
        if self.generator_name == "listops":
            return "fixed"
        if self.generator_name == "algorithmic":
            return "char"
        return {"lm": "char", "seq2seq": "bpe", "classification": "word"}[self.type]

    @property
    def target_len(self) -> int:
        """seq2seq: the longest decoder sequence (``max_target_len`` or ``max_len``)."""
        return self.max_target_len if self.max_target_len is not None else self.max_len


@dataclass
class EvalConfig:
    """Evaluation and decoding settings (``synthformer eval``, and the evaluations during training)."""

    beam: int = 4
    """Beam size for seq2seq decoding in ``synthformer eval`` (the paper: 4; 1 is greedy)."""
    length_penalty: float = 0.6
    """GNMT length-penalty exponent alpha (the paper: 0.6)."""
    max_decode_len: int | None = None
    """Most generated tokens per sequence (``<eos>`` included); ``None``: the task's target length."""
    metrics: list[str] | None = None
    """Metrics to report; ``None``: the task's defaults (lm: loss, perplexity, bits per character or byte;
    seq2seq: loss, BLEU, chrF (algorithmic tasks: exact match, chrF); classification: loss, accuracy). Add ``rouge``
    for summarization."""
    batch_size: int | None = None
    """Evaluation batch size; ``None``: ``train.batch_size``."""
    max_examples: int | None = None
    """``synthformer eval`` on seq2seq: decode at most this many examples (``None``: the whole split)."""
    train_decode_examples: int = 100
    """During training, greedy-decode this many valid examples for BLEU/chrF (0: only the loss)."""
    split: Literal["valid", "test"] = "valid"
    """The split evaluated during training."""

    def __post_init__(self) -> None:
        if self.beam < 1:
            raise ConfigError(f"beam: expected an integer >= 1, got {self.beam!r}")
        if self.length_penalty < 0:
            raise ConfigError(f"length_penalty: expected a value >= 0, got {self.length_penalty!r}")
        for name in ("max_decode_len", "batch_size", "max_examples"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name}: expected an integer >= 1 or null, got {value!r}")
        if self.train_decode_examples < 0:
            raise ConfigError(f"train_decode_examples: expected a value >= 0, got {self.train_decode_examples!r}")
        if self.split not in ("valid", "test"):
            raise ConfigError(f"split: expected 'valid' or 'test', got {self.split!r}")


@dataclass
class RunConfig:
    """One experiment: ``task``, ``model``, ``train`` and ``eval`` sections (see the module docstring).

    ``model`` is a mapping: an optional ``preset`` (see :func:`synthformer.models.list_presets`) and any
    :class:`~synthformer.models.ModelConfig` field, checked here (unknown keys, bad values, unknown attention
    kinds) with a placeholder vocabulary; :func:`resolve_model_config` builds the real one once the tokenizer
    exists.
    """

    task: TaskConfig
    model: dict[str, Any] = field(default_factory=dict)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def __post_init__(self) -> None:
        self._check_model_keys()
        # Resolving now catches bad model values and unknown attention kinds at load time, with the key named.
        resolve_model_config(self, vocab_size=_CHECK_VOCAB, num_classes=2 if self.task.type == "classification"
                             else None)
        self._check_metrics()
        if self.train.eval_every and self.eval.split == "test":
            logger.warning("eval.split=test: the test split is evaluated during training")

    def _check_model_keys(self) -> None:
        for key, value in self.model.items():
            if key == "preset":
                if value is not None and value not in list_presets():
                    raise ConfigError(f"model.preset: unknown preset {value!r}; available: {', '.join(list_presets())}")
                continue
            if key in _DERIVED_MODEL_FIELDS:
                raise ConfigError(f"model.{key}: do not set it here: {_DERIVED_MODEL_FIELDS[key]}")
            if key not in _MODEL_FIELDS:
                valid = sorted(["preset", *(f for f in _MODEL_FIELDS if f not in _DERIVED_MODEL_FIELDS)])
                close = difflib.get_close_matches(str(key), valid, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise ConfigError(f"unknown key 'model.{key}'{hint}; valid keys at 'model': {', '.join(valid)}")

    def _check_metrics(self) -> None:
        if self.eval.metrics is None:
            return
        valid = EVAL_METRICS[self.task.type]
        for name in self.eval.metrics:
            if name not in valid:
                raise ConfigError(f"eval.metrics: {name!r} is not a metric of type {self.task.type!r}; valid: "
                                  f"{', '.join(valid)}")

    @property
    def metrics(self) -> list[str]:
        """The metrics to report (``eval.metrics`` or the task's defaults)."""
        if self.eval.metrics is not None:
            return list(self.eval.metrics)
        return default_metrics(self.task.type, self.task.tokenizer_kind, self.task.generator_name)


def default_metrics(task_type: str, tokenizer_kind: str, generator: str | None = None) -> list[str]:
    """The metrics a task reports when ``eval.metrics`` is not set.

    Algorithmic tasks have one right answer of a single "word" (a digit string), where BLEU is all or nothing:
    they report exact match and chrF instead.
    """
    if task_type == "lm":
        return ["loss", "perplexity", "bits_per_byte" if tokenizer_kind == "byte" else "bits_per_character"]
    if task_type == "seq2seq":
        return ["loss", "exact_match", "chrf"] if generator == "algorithmic" else ["loss", "bleu", "chrf"]
    return ["loss", "accuracy"]


def resolve_model_config(run: RunConfig, vocab_size: int, num_classes: int | None = None,
                         special_ids: tuple[int, int, int] = (0, 2, 3)) -> ModelConfig:
    """The :class:`ModelConfig` of ``run``: the preset (or the defaults), the ``model`` fields, then what the task
    decides: ``arch``, ``vocab_size``, ``num_classes``, the special ids ``(pad, bos, eos)`` and ``max_len``
    (the task's longest sequence unless ``model.max_len`` is set, which must then be long enough).

    Raises:
        ConfigError: naming the ``model`` key at fault.
    """
    fields = dict(run.model)
    preset = fields.pop("preset", None)
    arch = ARCH_OF_TASK[run.task.type]
    if preset is not None:
        base = get_preset(preset)
        if base.arch != arch:
            raise ConfigError(f"model.preset: preset {preset!r} is an arch={base.arch!r} model, but task.type "
                              f"{run.task.type!r} needs arch={arch!r}")
        data = base.to_dict()
    else:
        data = {f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
                for f in dataclasses.fields(ModelConfig)}
    need = run.task.max_len if run.task.type != "seq2seq" else max(run.task.max_len, run.task.target_len)
    if "max_len" in fields:
        if not isinstance(fields["max_len"], int) or fields["max_len"] < need:
            raise ConfigError(f"model.max_len: must be an integer >= {need} (the task's longest sequence, from "
                              f"task.max_len / task.max_target_len), got {fields['max_len']!r}")
    else:
        fields["max_len"] = need
    pad_id, bos_id, eos_id = special_ids
    data.update(fields)
    data.update(arch=arch, vocab_size=vocab_size, tgt_vocab_size=None, pad_id=pad_id, bos_id=bos_id, eos_id=eos_id,
                num_classes=num_classes if arch == "classifier" else None)
    try:
        return ModelConfig.from_dict(data)
    except (ValueError, TypeError) as err:
        raise ConfigError(f"model: {err}") from None


def load_run_config(path: str | Path | None, overrides: list[str] | tuple[str, ...] = ()) -> RunConfig:
    """Load a YAML run config and apply dotted ``key=value`` overrides (``path=None``: from overrides alone).

    Raises:
        ConfigError: a bad key or value (named), or a file that is not a YAML mapping.
        FileNotFoundError: ``path`` does not exist.
    """
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"config file not found: {path}")
    try:
        return load_config(path, RunConfig, list(overrides))
    except ConfigError:
        raise
    except Exception as err:  # a YAML syntax error: name the file
        import yaml

        if isinstance(err, yaml.YAMLError):
            raise ConfigError(f"{path}: not valid YAML ({err})") from None
        raise
