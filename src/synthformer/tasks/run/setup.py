"""The setup of a run in the steps that the run (:mod:`.pipeline`) and its plan (``synthformer train --dry-run``,
:func:`synthformer.bench.plan.plan_run`) both take, so that a plan cannot disagree with the run it plans::

    config -> the tokenizer it keeps -> the data -> the model config -> the model (init_from, freeze) -> optimizer

* :func:`kept_tokenizer`: the tokenizer (and class names) a run keeps instead of building one: a resumed run's,
  else ``init_from``'s. A prepared corpus brings its own with its data
  (:func:`~synthformer.tasks.prepared.reading.open_prepared`, which the plan opens too, without scanning ids).
* :func:`setup_model`: the model of the resolved model config, seeded with ``train.seed`` (the run) or on the
  meta device (the plan: shapes, no storage), checked against ``init_from``'s and given its weights (a meta model
  holds none to give), ``train.freeze`` frozen, counted (:class:`ModelSetup`). The optimizer
  (:func:`~synthformer.train.optim.build_optimizer`, in the trainer) holds :func:`optimizer_parameters`.
* :func:`example_lengths`: the positions of one example the model reads (what a micro-batch is padded or cut to).

The data step itself is the one a plan cannot take (it reads and tokenizes the corpus): until a tokenizer exists
the plan sizes the vocabulary from the tokenizer settings (:mod:`synthformer.bench.plan_data`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from synthformer.models import ModelConfig, num_parameters
from synthformer.train import RunDir, freeze_parts, param_groups

from .config import RunConfig
from .data import build_checked_model, seeded_model
from .init_from import InitReport, PretrainedRun, pretrained_tokenizer, start_from_pretrained
from .resume import ResumedInputs, saved_inputs

__all__ = ["ModelSetup", "example_lengths", "kept_tokenizer", "meta_model", "optimizer_parameters", "saved_tokenizer",
           "setup_model"]


@dataclass
class ModelSetup:
    """The model step's result: the model, its config, its parameter entries (a tied matrix counted once) and, for
    a run started from ``init_from``, what was loaded."""

    model: nn.Module
    config: ModelConfig
    parameters: int
    trainable: int
    init_report: InitReport | None = None

    @property
    def frozen(self) -> int:
        """Parameter entries ``train.freeze`` (or a ``Fix`` kind) keeps fixed."""
        return self.parameters - self.trainable


def kept_tokenizer(run: RunConfig, resumed: ResumedInputs | None,
                   pretrained: PretrainedRun | None = None) -> ResumedInputs | None:
    """The tokenizer (and class names) the run keeps: ``resumed``'s (what its directory holds, or None), else the
    pretrained run's of ``init_from`` (no class names: those come from the training labels; ``pretrained``: that
    run already read, :func:`~.init_from.open_pretrained`); None: the data step builds one (or a prepared corpus
    brings its own).

    Raises:
        ConfigError: ``init_from`` missing, or ``task.tokenizer`` / ``task.vocab_size`` not its tokenizer's.
    """
    if resumed is not None:
        return resumed
    if run.init_from is not None:
        return ResumedInputs(pretrained_tokenizer(run, pretrained), None)
    return None


def saved_tokenizer(run_dir: str | Path | None) -> ResumedInputs | None:
    """What a run directory holds for a run that continues there (:func:`.resume.saved_inputs`); None without one."""
    return saved_inputs(RunDir(run_dir)) if run_dir is not None else None


def meta_model(config: ModelConfig) -> nn.Module:
    """The model of ``config`` with every tensor on the meta device (shapes, no storage: a plan's), in training mode."""
    # a plan reports its own count: the "built ... parameters" line of a model that is never built would mislead
    registry_log = logging.getLogger("synthformer.models.registry")
    level = registry_log.level
    registry_log.setLevel(logging.WARNING)
    try:
        with torch.device("meta"):
            return build_checked_model(config).train()
    finally:
        registry_log.setLevel(level)


def setup_model(run: RunConfig, model_config: ModelConfig, *, meta: bool = False, init_weights: bool = True,
                pretrained: PretrainedRun | None = None) -> ModelSetup:
    """The model step (see the module docstring).

    Args:
        run: the run configuration (``train.seed``, ``init_from``, ``train.freeze``).
        model_config: the model config resolved for the data (:func:`.config.resolve_model_config`).
        meta: build on the meta device (a plan): ``init_from``'s model is checked, no weights are loaded.
        init_weights: start from ``init_from`` (False: a resumed run continues from its own checkpoint instead).
        pretrained: ``init_from``'s run, already read (:func:`~.init_from.open_pretrained`); None: read here.

    Raises:
        ConfigError: a model the config cannot describe, or one that is not ``init_from``'s (each setting named).
        ValueError: ``train.freeze`` names a part the model lacks.
    """
    model = meta_model(model_config) if meta else seeded_model(model_config, run.train.seed)
    report = None
    if run.init_from is not None and init_weights:  # one call: checked, growth decided, loaded (not in a meta model)
        report = start_from_pretrained(run, model_config, None if meta else model, pretrained)
    freeze_parts(model, run.train.freeze)  # here, before the count (the optimizer's own call is then a no-op)
    return ModelSetup(model, model_config, num_parameters(model, trainable_only=False), num_parameters(model),
                      report)


def optimizer_parameters(model: nn.Module, run: RunConfig) -> list[nn.Parameter]:
    """The parameters the run's optimizer holds (its groups, :func:`~synthformer.train.optim.param_groups`): the
    trainable ones, each tied tensor once."""
    return [p for group in param_groups(model, run.train.weight_decay) for p in group["params"]]


def example_lengths(run: RunConfig) -> dict[str, int]:
    """Positions of one example the model reads: ``input`` (the task's ``max_len``) and, for encoder-decoders,
    ``target`` (the decoder length: the task's target length, or the one span corruption derives). A micro-batch
    is padded to at most these (an LM's packed text: exactly)."""
    out = {"input": run.task.max_len}
    if "tgt_vocab_size" in run.task.task_type.derived_model_fields:  # an encoder-decoder
        extras = run.task.task_type.report_extras(run, 1)
        out["target"] = int(extras.get("targets_length", run.task.target_len))
    return out
