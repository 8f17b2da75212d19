"""``RunConfig``: everything one experiment needs, as typed sections loaded from YAML with dotted overrides.

Sections:

* ``task``: :class:`~synthformer.tasks.TaskConfig`, what is learned and from which data: the task type (a
  registered name: ``lm``, ``seq2seq``, ``classification``, ...), the data source (files, a built-in generator,
  or a Hugging Face data set), the tokenizer and the lengths.
* ``model``: a preset name (``preset: lm-small``) and/or settings of the config class of the task type's
  architecture (:class:`~synthformer.models.LMConfig`, ...); ``RunConfig.model`` is that typed config. The
  vocabulary size, the number of classes, the special ids and the architecture come from the task and the
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
Every problem raises :class:`~synthformer.common.config.ConfigError` naming the dotted key and the bad value.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from synthformer.common import ConfigError, load_config, to_dict
from synthformer.models import ModelConfig, config_class, get_preset, list_presets
from synthformer.train import TrainConfig, metric_key

from ..registry import get_generator
from .task_config import TaskConfig

__all__ = [
    "EvalConfig",
    "RunConfig",
    "TaskConfig",
    "load_run_config",
    "resolve_model_config",
]

logger = logging.getLogger(__name__)

# ModelConfig fields every task decides; setting them in ``model`` would be silently wrong, so it is an error.
# (Each task type adds its own: ``TaskType.derived_model_fields``.)
_DERIVED_MODEL_FIELDS: dict[str, str] = {
    "arch": "it follows task.type",
    "vocab_size": "it comes from the tokenizer (set task.vocab_size to size the tokenizer)",
    "pad_id": "it comes from the tokenizer",
    "bos_id": "it comes from the tokenizer",
    "eos_id": "it comes from the tokenizer",
}
# A placeholder vocabulary for checking a model section before any tokenizer exists (byte-sized).
_CHECK_VOCAB = 260


@dataclass
class EvalConfig:
    """Evaluation and decoding settings (``synthformer eval``, and the evaluations during training)."""

    beam: int = 4
    """Beam size for seq2seq decoding in ``synthformer eval`` (the paper: 4; 1 is greedy)."""
    length_penalty: float = 0.6
    """GNMT length-penalty exponent alpha (the paper: 0.6)."""
    max_decode_len: int | None = None
    """Most generated tokens per sequence (``<eos>`` included); ``None``: the task's target length."""
    min_length: int = 0
    """Fewest generated tokens before ``<eos>`` may end an output (0: no minimum; summarization decoders often
    set one)."""
    no_repeat_ngram_size: int = 0
    """Never generate an n-gram of this size twice in one output (0: no blocking; 3 is common for
    summarization)."""
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
        for name in ("min_length", "no_repeat_ngram_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{name}: expected an integer >= 0, got {value!r}")
        if self.train_decode_examples < 0:
            raise ConfigError(f"train_decode_examples: expected a value >= 0, got {self.train_decode_examples!r}")
        if self.split not in ("valid", "test"):
            raise ConfigError(f"split: expected 'valid' or 'test', got {self.split!r}")


@dataclass
class RunConfig:
    """One experiment: ``task``, ``model``, ``train`` and ``eval`` sections (see the module docstring).

    ``model`` is given as a mapping (an optional ``preset``, see :func:`synthformer.models.list_presets`, and
    settings of the task type's architecture) and becomes, on creation, the typed config of that architecture
    (:class:`~synthformer.models.LMConfig`, :class:`~synthformer.models.Seq2SeqConfig`,
    :class:`~synthformer.models.ClassifierConfig`, ...), checked with a placeholder vocabulary; the fields the
    task decides (vocabulary, classes, special ids, ``max_len`` unless set) are filled in by
    :func:`resolve_model_config` once the tokenizer exists. :attr:`model_section` keeps the mapping as given, which
    is what the saved ``config.yaml`` holds.
    """

    task: TaskConfig
    model: Any = field(default_factory=dict)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    init_from: str | None = None
    """A pretrained run directory: its tokenizer and the weights of its latest checkpoint start this run (the
    model settings must be the pretrained ones; see :mod:`synthformer.tasks.init_from`)."""

    def __post_init__(self) -> None:
        if self.init_from is not None and (not isinstance(self.init_from, str) or not self.init_from.strip()):
            raise ConfigError(f"init_from: expected the path of a pretrained run directory, got {self.init_from!r}")
        if isinstance(self.model, ModelConfig):
            # dataclasses.replace(run, ...) hands the typed config back: it remembers the section it came from
            section = getattr(self.model, "_run_section", None)
            if section is None:  # a typed config given directly: its settings, less what the task decides
                derived = {**_DERIVED_MODEL_FIELDS, **self.task.task_type.derived_model_fields}
                section = {k: v for k, v in self.model.to_dict().items() if k not in derived}
            self.model = section
        if not isinstance(self.model, Mapping):
            raise ConfigError(f"model: expected a mapping of model settings, got {self.model!r}")
        self.model_section: dict[str, Any] = dict(self.model)
        self._check_model_keys()
        # Building the typed config now catches bad model values and unknown attention kinds at load time.
        self.model = _model_config(self, self.model_section, vocab_size=_CHECK_VOCAB,
                                   num_classes=2, special_ids=(0, 2, 3))
        self.model._run_section = self.model_section
        self._check_metrics()
        self._check_keep_best()
        if self.train.eval_every and self.eval.split == "test":
            logger.warning("eval.split=test: the test split is evaluated during training")

    def _check_model_keys(self) -> None:
        task_type = self.task.task_type
        cls = config_class(task_type.arch)
        derived = {**_DERIVED_MODEL_FIELDS, **task_type.derived_model_fields}
        fields = cls.field_names()
        for key, value in self.model_section.items():
            if key == "preset":
                if value is not None and value not in list_presets():
                    raise ConfigError(f"model.preset: unknown preset {value!r}; available: {', '.join(list_presets())}")
                continue
            if key in derived:
                raise ConfigError(f"model.{key}: do not set it here: {derived[key]}")
            if key not in fields:
                valid = sorted(["preset", *(f for f in fields if f not in derived)])
                close = difflib.get_close_matches(str(key), valid, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise ConfigError(f"unknown key 'model.{key}'{hint}; valid keys at 'model' for type "
                                  f"{self.task.type!r} (arch {cls.arch!r}): {', '.join(valid)}")

    def _check_metrics(self) -> None:
        if self.eval.metrics is None:
            return
        valid = self.task.task_type.metrics
        for name in self.eval.metrics:
            if name not in valid:
                raise ConfigError(f"eval.metrics: {name!r} is not a metric of type {self.task.type!r}; valid: "
                                  f"{', '.join(valid)}")

    def _check_keep_best(self) -> None:
        """``train.keep_best`` must name a metric the evaluation during training reports: found here, when the
        config is read, rather than at the first evaluation, after a checkpoint is written."""
        if self.train.keep_best is None:
            return
        reported = self.task.task_type.training_metric_keys(self)
        wanted = metric_key(self.train.keep_best)[len("eval_"):]
        if reported is None or wanted in reported:
            return
        raise ConfigError(f"train.keep_best: the evaluation during training of task.type {self.task.type!r} reports "
                          f"no {wanted!r} (it reports: {', '.join(reported) or 'nothing'}; eval.metrics and "
                          "eval.train_decode_examples decide which)")

    @property
    def metrics(self) -> list[str]:
        """The metrics to report (``eval.metrics``, else the generator's or the task type's defaults)."""
        if self.eval.metrics is not None:
            return list(self.eval.metrics)
        if self.task.generator is not None:
            own = get_generator(self.task.generator)[0].default_metrics(self.task)
            if own is not None:
                return own
        return self.task.task_type.default_metrics(self.task)

    def with_model(self, **changes: Any) -> RunConfig:
        """A copy with ``model`` settings changed (checked like a loaded config)."""
        return dataclasses.replace(self, model={**self.model_section, **changes})

    def to_dict(self) -> dict[str, Any]:
        """The config as plain data, the model section as given (what ``config.yaml`` holds)."""
        out = {"task": to_dict(self.task), "model": dict(self.model_section), "train": to_dict(self.train),
               "eval": to_dict(self.eval)}
        if self.init_from is not None:
            out["init_from"] = self.init_from
        return out


def _model_config(run: RunConfig, section: Mapping[str, Any], vocab_size: int, num_classes: int | None,
                  special_ids: tuple[int, int, int]) -> ModelConfig:
    fields = dict(section)
    preset = fields.pop("preset", None)
    task_type = run.task.task_type
    cls = config_class(task_type.arch)
    if preset is not None:
        base = get_preset(preset)
        if not isinstance(base, cls):
            raise ConfigError(f"model.preset: preset {preset!r} is an arch={base.arch!r} model, but task.type "
                              f"{run.task.type!r} needs arch={cls.arch!r}")
        data = base.to_dict()
    else:
        data = {"arch": cls.arch}
    need = task_type.max_positions(run.task)
    if "max_len" in fields:
        if not isinstance(fields["max_len"], int) or fields["max_len"] < need:
            raise ConfigError(f"model.max_len: must be an integer >= {need} (the task's longest sequence, from "
                              f"task.max_len / task.max_target_len), got {fields['max_len']!r}")
    else:
        fields["max_len"] = need
    pad_id, bos_id, eos_id = special_ids
    data.update(fields)
    data.update(vocab_size=vocab_size, pad_id=pad_id, bos_id=bos_id, eos_id=eos_id)
    data.update(task_type.model_fields(num_classes))
    try:
        return cls.from_dict(data)
    except (ValueError, TypeError) as err:
        raise ConfigError(f"model: {err}") from None


def resolve_model_config(run: RunConfig, vocab_size: int, num_classes: int | None = None,
                         special_ids: tuple[int, int, int] = (0, 2, 3)) -> ModelConfig:
    """The typed model config of ``run`` for the data: the preset (or the architecture's defaults), the ``model``
    settings, then what the task decides: ``vocab_size``, the special ids ``(pad, bos, eos)``, the task type's own
    fields (the number of classes, ...) and ``max_len`` (the task's longest sequence unless ``model.max_len`` is
    set, which must then be long enough).

    Raises:
        ConfigError: naming the ``model`` key at fault.
    """
    return _model_config(run, run.model_section, vocab_size, num_classes, special_ids)


def load_run_config(path: str | Path | None, overrides: list[str] | tuple[str, ...] = ()) -> RunConfig:
    """Load a YAML run config and apply dotted ``key=value`` overrides (``path=None``: from overrides alone).

    Raises:
        ConfigError: a bad key or value (named), or a file that is a folder, not UTF-8, not YAML or not a mapping.
        FileNotFoundError: ``path`` does not exist.
    """
    if path is not None:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"config file not found: {path}")
    # a folder, a file that is not UTF-8 or not YAML: load_config names the file in one line
    return load_config(path, RunConfig, list(overrides))
