"""``init_from: RUN_DIR``: start a run from a pretrained run's weights and tokenizer (pretrain -> finetune).

The new run takes the pretrained run's tokenizer file (so the vocabulary, sentinels included, is the same) and
the weights of its latest checkpoint (safetensors). The model the new config describes must be the pretrained
one: the same architecture and every model setting equal except the regularisation ones that finetuning may
change (:data:`FREE_FIELDS`: dropout, attention dropout, label smoothing). A mismatch is a
:class:`~synthformer.common.config.ConfigError` naming each differing setting with both values. Parameters the
checkpoint does not hold are newly initialised and listed (in the log and in ``RUN/init_from.json``); for the paper's
setup (the same encoder-decoder, text-to-text) the list is empty. A parameter with another shape, or one in the
checkpoint that the model lacks, is an error naming the parameter and both shapes.

One change of the model is allowed besides: a self-attention kind may grow into a mixture that contains it (a T5
run's ``V`` into ``R+V``); see :mod:`.grow` for how the mixture starts so that the output at step 0 is the
pretrained model's.

The pretrained run is read once (:func:`open_pretrained`: located, its checkpoint chosen, its model config
read) and handed down; :func:`start_from_pretrained` is the model step's one call: it checks the model against the
pretrained one, decides once which layers grow, and loads the checkpoint once (:mod:`.grow` does the growing, as a
leaf: it is given the loaded tensors and calls nothing back).

A fresh run is initialised this way, and so is a ``--resume`` of one that stopped before its first checkpoint;
otherwise ``--resume`` continues from the run's own checkpoint. ``init_from`` may not be the run's own directory.

``init_from: RUN@best`` takes the checkpoint ``train.keep_best`` kept instead of the latest (``RUN@latest`` and
``RUN@STEP`` work too: :func:`~synthformer.train.select_checkpoint`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from safetensors import safe_open
from safetensors.torch import load_file, load_model
from torch import nn

from synthformer.common import ConfigError
from synthformer.data import Tokenizer, load_tokenizer
from synthformer.models import ModelConfig
from synthformer.train import (
    MODEL_FILE,
    STATE_FILE,
    RunDir,
    RunError,
    read_trainer_state,
    select_checkpoint,
    shape_mismatches,
)

from .grow import GROWABLE_FIELDS, grown_layers, load_grown_
from .loading import read_model_config

if TYPE_CHECKING:
    from .config import RunConfig

__all__ = ["FREE_FIELDS", "InitReport", "PretrainedRun", "check_pretrained_model", "init_from_missing",
           "load_pretrained_weights", "open_pretrained", "pretrained_tokenizer", "split_init_from",
           "start_from_pretrained"]

logger = logging.getLogger(__name__)

#: Model settings a finetuning run may change from its pretrained run (they hold no parameters).
FREE_FIELDS: frozenset[str] = frozenset({"dropout", "attention_dropout", "label_smoothing"})


@dataclass
class InitReport:
    """Where the weights came from and which parameters were newly initialised."""

    source: str
    checkpoint: str
    step: int
    loaded: int
    newly_initialised: list[str] = field(default_factory=list)
    #: self-attention layers grown into mixtures: name -> {"kind": the mixture, "pretrained_part": its old kind}
    grown: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {"init_from": self.source, "checkpoint": self.checkpoint, "step": self.step,
               "loaded_tensors": self.loaded, "newly_initialised": self.newly_initialised}
        return {**out, "grown": self.grown} if self.grown else out


@dataclass(frozen=True)
class PretrainedRun:
    """The run ``init_from`` names, read once (:func:`open_pretrained`): its directory, the checkpoint the spec
    selects and the model config its weights were trained with."""

    rundir: RunDir
    checkpoint: Path
    model_config: ModelConfig


def split_init_from(spec: str) -> tuple[str, str | None]:
    """``"runs/pre@best"`` -> ``("runs/pre", "best")``; a spec without a checkpoint -> ``(spec, None)``. Only
    ``@latest``, ``@best`` and ``@STEP`` are split off, so a directory whose name holds another ``@`` stays whole."""
    path, sep, which = spec.rpartition("@")
    if sep and path and (which in ("latest", "best") or which.isdigit()):
        return path, which
    return spec, None


def _locate(spec: str) -> tuple[RunDir, Path] | str:
    """The run directory and the checkpoint ``spec`` names; or, where a part is not there, the refusal's words."""
    path, which = split_init_from(spec)
    rd = RunDir(path)
    if not rd.path.is_dir():
        return f"init_from: run directory not found: {rd.path}"
    missing = [name for name in (rd.TOKENIZER, rd.MODEL_CONFIG) if not (rd.path / name).is_file()]
    if missing:
        return f"init_from: {rd.path} is not a synthformer run directory (missing {', '.join(missing)})"
    if rd.latest_checkpoint() is None:
        return f"init_from: {rd.path} has no checkpoint yet (nothing in {rd.checkpoints_path})"
    try:
        return rd, select_checkpoint(rd.path, which)  # RUN@best without train.keep_best, RUN@STEP of no such step
    except RunError as err:
        return f"init_from: {err}"


def init_from_missing(spec: str) -> str | None:
    """What of the pretrained run ``spec`` is not there yet (its directory, its tokenizer and model config, the
    checkpoint it names), in the words of the run's refusal; None when a run can start from it. Looked up, not
    loaded: a run stops on it (:func:`open_pretrained`), a dry run reports it and plans on."""
    found = _locate(spec)
    return found if isinstance(found, str) else None


def _located(spec: str) -> tuple[RunDir, Path]:
    """:func:`_locate`, a missing part refused."""
    found = _locate(spec)
    if isinstance(found, str):
        raise ConfigError(found)
    return found


def open_pretrained(spec: str) -> PretrainedRun:
    """Read the pretrained run ``spec`` (``RUN``, ``RUN@best``, ...) once: located, its checkpoint selected, its
    model config read; the tokenizer and the weights are read by the steps that need them.

    Raises:
        ConfigError: a part of the run missing (:func:`init_from_missing`'s words), or its model config unreadable.
    """
    rd, ckpt = _located(spec)
    try:
        saved = read_model_config(rd)
    except RunError as err:
        raise ConfigError(f"init_from: {err}") from None
    return PretrainedRun(rd, ckpt, saved)


def pretrained_tokenizer(run: RunConfig, pretrained: PretrainedRun | None = None) -> Tokenizer:
    """The tokenizer of ``run.init_from`` (``pretrained``: that run, already read); ``task.tokenizer`` /
    ``task.vocab_size``, when set, must agree."""
    assert run.init_from is not None
    rd = pretrained.rundir if pretrained is not None else _located(run.init_from)[0]
    tok = load_tokenizer(rd.tokenizer_path)
    base = getattr(tok, "base", tok)  # a SentinelTokenizer's own kind and size are its base's
    task = run.task
    if task.tokenizer is not None and task.tokenizer != base.kind:
        raise ConfigError(f"task.tokenizer: {task.tokenizer!r}, but init_from {rd.path} has a {base.kind!r} tokenizer "
                          "(a finetuning run uses the pretrained run's tokenizer: leave task.tokenizer unset)")
    if task.vocab_size is not None and task.vocab_size not in (base.vocab_size, tok.vocab_size):
        raise ConfigError(f"task.vocab_size: {task.vocab_size}, but init_from {rd.path} has a vocabulary of "
                          f"{tok.vocab_size} ids (leave task.vocab_size unset)")
    return tok


def start_from_pretrained(run: RunConfig, model_config: ModelConfig, model: nn.Module | None,
                          pretrained: PretrainedRun | None = None) -> InitReport | None:
    """The model step's start from ``run.init_from``: check ``model_config`` against the pretrained model, decide
    which layers grow, and load the pretrained weights into ``model`` (None: a plan's meta model, checked only).

    Args:
        run: the run configuration (``init_from``, ``task.type`` for the messages).
        model_config: the model config the run trains (``model``'s).
        model: the built model, changed in place; None to check only.
        pretrained: the pretrained run, already read (:func:`open_pretrained`); None: read here.

    Returns:
        what was loaded (None when only checked).

    Raises:
        ConfigError: another model (each setting named), a parameter of another shape, or checkpoint tensors the
            model has no place for.
    """
    assert run.init_from is not None
    pretrained = pretrained or open_pretrained(run.init_from)
    grown = check_pretrained_model(run, model_config, pretrained)
    return None if model is None else _load(pretrained.rundir, pretrained.checkpoint, model, grown)


def check_pretrained_model(run: RunConfig, model_config: ModelConfig,
                           pretrained: PretrainedRun | None = None) -> dict[str, int]:
    """Raise :class:`ConfigError` unless ``model_config`` is the pretrained run's model (up to
    :data:`FREE_FIELDS`, and :data:`~.grow.GROWABLE_FIELDS` where kinds grow), naming every differing setting;
    return the layers that grow (:func:`~.grow.grown_layers`; empty when none does)."""
    assert run.init_from is not None
    pretrained = pretrained or open_pretrained(run.init_from)
    rd, saved = pretrained.rundir, pretrained.model_config
    if saved.arch != model_config.arch:
        raise ConfigError(f"init_from: {rd.path} holds an arch={saved.arch!r} model, but task.type "
                          f"{run.task.type!r} trains arch={model_config.arch!r}")
    refusal: ConfigError | None = None
    try:
        grown = grown_layers(saved, model_config)
    except ConfigError as err:  # a kind changed in a way growing does not cover: named below with the others
        grown, refusal = {}, err
    free = FREE_FIELDS | (GROWABLE_FIELDS if grown else frozenset())
    theirs, ours = saved.to_dict(), model_config.to_dict()
    diffs = [f"model.{key}: pretrained {theirs.get(key)!r}, this run {ours.get(key)!r}"
             for key in sorted(set(theirs) | set(ours)) if key not in free and theirs.get(key) != ours.get(key)]
    if diffs:
        raise ConfigError(f"init_from: the model differs from the pretrained one in {rd.path} "
                          f"({'; '.join(diffs)}); set these model settings as the pretrained run had them")
    if refusal is not None:  # not reached: a kind that cannot grow is a differing setting, named above
        raise refusal
    return grown


def load_pretrained_weights(run: RunConfig, model: nn.Module) -> InitReport:
    """Copy the pretrained weights into ``model`` (its kinds may have grown: :mod:`.grow`); return what was
    loaded and what was newly initialised. The model is not checked against the pretrained one's settings
    (:func:`start_from_pretrained` does both).

    Raises:
        ConfigError: the run missing, a kind changed other than by growing, a parameter with another shape, or
            checkpoint tensors the model has no place for.
        RunError: the run's model config unreadable.
    """
    assert run.init_from is not None
    rd, ckpt = _located(run.init_from)
    config = getattr(model, "config", None)  # a synthformer model's: what decides the growth
    grown = grown_layers(read_model_config(rd), config) if isinstance(config, ModelConfig) else {}
    return _load(rd, ckpt, model, grown)


def _load(rd: RunDir, ckpt: Path, model: nn.Module, grown: dict[str, int]) -> InitReport:
    """Load the checkpoint ``ckpt`` of the run ``rd`` into ``model`` once (the layers in ``grown`` grown from it),
    log and report it."""
    file = ckpt / MODEL_FILE
    if grown:
        state = load_file(str(file))
        loaded = len(state)  # the file's own count, as below
        missing, unexpected, record = load_grown_(model, state, grown, file)
    else:
        wrong = shape_mismatches(file, model)
        if wrong:
            raise ConfigError(f"init_from: parameter shapes differ from {file} ({'; '.join(wrong)})")
        missing, unexpected = load_model(model, str(file), strict=False)
        record = {}
        with safe_open(str(file), framework="pt") as f:  # the file's own count (tied tensors are stored once)
            loaded = len(list(f.keys()))
    if unexpected:
        raise ConfigError(f"init_from: {file} holds tensors this model has no place for: {', '.join(unexpected)}")
    step = read_trainer_state(ckpt / STATE_FILE)["step"]
    report = InitReport(str(rd.path), str(ckpt), step, loaded, sorted(missing), record)
    if missing:
        logger.warning("init_from: %d parameter(s) newly initialised (not in the checkpoint): %s", len(missing),
                       ", ".join(sorted(missing)))
    logger.info("init_from: %d tensors from %s (step %d); newly initialised: %s", loaded, ckpt, step,
                ", ".join(sorted(missing)) or "none")
    return report
