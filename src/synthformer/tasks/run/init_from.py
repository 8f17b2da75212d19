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

A fresh run is initialised this way, and so is a ``--resume`` of one that stopped before its first checkpoint;
otherwise ``--resume`` continues from the run's own checkpoint. ``init_from`` may not be the run's own directory.

``init_from: RUN@best`` takes the checkpoint ``train.keep_best`` kept instead of the latest (``RUN@latest`` and
``RUN@STEP`` work too: :func:`~synthformer.train.select_checkpoint`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
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

from .grow import GROWABLE_FIELDS, grown_layers, growth_record, rename_grown_keys, start_grown_mixtures_
from .loading import read_model_config

if TYPE_CHECKING:
    from .config import RunConfig

__all__ = ["FREE_FIELDS", "InitReport", "check_pretrained_model", "init_from_missing", "load_pretrained_weights",
           "pretrained_tokenizer", "split_init_from"]

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


def split_init_from(spec: str) -> tuple[str, str | None]:
    """``"runs/pre@best"`` -> ``("runs/pre", "best")``; a spec without a checkpoint -> ``(spec, None)``. Only
    ``@latest``, ``@best`` and ``@STEP`` are split off, so a directory whose name holds another ``@`` stays whole."""
    path, sep, which = spec.rpartition("@")
    if sep and path and (which in ("latest", "best") or which.isdigit()):
        return path, which
    return spec, None


def init_from_missing(spec: str) -> str | None:
    """What of the pretrained run ``spec`` is not there yet (its directory, its tokenizer and model config, the
    checkpoint it names), in the words of the run's refusal; None when a run can start from it. Looked up, not
    loaded: a run stops on it (:func:`pretrained_tokenizer`), a dry run reports it and plans on."""
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
        select_checkpoint(rd.path, which)  # RUN@best of a run without train.keep_best, RUN@STEP of no such step
    except RunError as err:
        return f"init_from: {err}"
    return None


def _run_dir(spec: str) -> RunDir:
    missing = init_from_missing(spec)
    if missing is not None:
        raise ConfigError(missing)
    return RunDir(split_init_from(spec)[0])


def pretrained_tokenizer(run: RunConfig) -> Tokenizer:
    """The tokenizer of ``run.init_from``; ``task.tokenizer`` / ``task.vocab_size``, when set, must agree."""
    assert run.init_from is not None
    rd = _run_dir(run.init_from)
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


def check_pretrained_model(run: RunConfig, model_config: ModelConfig) -> None:
    """Raise :class:`ConfigError` unless ``model_config`` is the pretrained run's model (up to
    :data:`FREE_FIELDS`), naming every differing setting."""
    assert run.init_from is not None
    rd = _run_dir(run.init_from)
    try:
        saved = read_model_config(rd)
    except RunError as err:
        raise ConfigError(f"init_from: {err}") from None
    if saved.arch != model_config.arch:
        raise ConfigError(f"init_from: {rd.path} holds an arch={saved.arch!r} model, but task.type "
                          f"{run.task.type!r} trains arch={model_config.arch!r}")
    try:
        grows = bool(grown_layers(saved, model_config))
    except ConfigError:  # a kind changed in a way growing does not cover: named below with the other differences
        grows = False
    free = FREE_FIELDS | (GROWABLE_FIELDS if grows else frozenset())
    theirs, ours = saved.to_dict(), model_config.to_dict()
    diffs = [f"model.{key}: pretrained {theirs.get(key)!r}, this run {ours.get(key)!r}"
             for key in sorted(set(theirs) | set(ours)) if key not in free and theirs.get(key) != ours.get(key)]
    if diffs:
        raise ConfigError(f"init_from: the model differs from the pretrained one in {rd.path} "
                          f"({'; '.join(diffs)}); set these model settings as the pretrained run had them")


def load_pretrained_weights(run: RunConfig, model: nn.Module) -> InitReport:
    """Copy the pretrained weights into ``model``; return what was loaded and what was newly initialised.

    Raises:
        ConfigError: a parameter with another shape, or checkpoint tensors the model has no place for.
    """
    assert run.init_from is not None
    rd = _run_dir(run.init_from)
    try:
        ckpt = select_checkpoint(rd.path, split_init_from(run.init_from)[1])
    except RunError as err:
        raise ConfigError(f"init_from: {err}") from None
    file = ckpt / MODEL_FILE
    grown = grown_layers(read_model_config(rd), model.config) if isinstance(
        getattr(model, "config", None), ModelConfig) else {}
    if grown:
        missing, unexpected = _load_grown(model, file, grown)
    else:
        wrong = shape_mismatches(file, model)
        if wrong:
            raise ConfigError(f"init_from: parameter shapes differ from {file} ({'; '.join(wrong)})")
        missing, unexpected = load_model(model, str(file), strict=False)
    if unexpected:
        raise ConfigError(f"init_from: {file} holds tensors this model has no place for: {', '.join(unexpected)}")
    step = read_trainer_state(ckpt / STATE_FILE)["step"]
    with safe_open(str(file), framework="pt") as f:
        loaded = len(list(f.keys()))
    report = InitReport(str(rd.path), str(ckpt), step, loaded, sorted(missing), growth_record(model, grown))
    if missing:
        logger.warning("init_from: %d parameter(s) newly initialised (not in the checkpoint): %s", len(missing),
                       ", ".join(sorted(missing)))
    logger.info("init_from: %d tensors from %s (step %d); newly initialised: %s", loaded, ckpt, step,
                ", ".join(sorted(missing)) or "none")
    return report


def _load_grown(model: nn.Module, file, grown: dict[str, int]) -> tuple[list[str], list[str]]:
    """Load a checkpoint into a model whose kinds grew (the pretrained parts' tensors renamed into the mixtures),
    then start the mixtures at the pretrained function; return (newly initialised, unexpected) names."""
    state = rename_grown_keys(load_file(str(file)), grown)
    ours = model.state_dict()
    wrong = [f"{k}: checkpoint {list(t.shape)}, model {list(ours[k].shape)}" for k, t in state.items()
             if k in ours and t.shape != ours[k].shape]
    if wrong:
        raise ConfigError(f"init_from: parameter shapes differ from {file} ({'; '.join(wrong)})")
    unexpected = sorted(set(state) - set(ours))
    loaded_storage = {ours[k].data_ptr() for k in state if k in ours}
    # a tied tensor is stored once: its other names (tgt_embed, lm_head) share the loaded storage
    missing = [k for k, t in ours.items() if k not in state and t.data_ptr() not in loaded_storage]
    model.load_state_dict({**ours, **{k: t for k, t in state.items() if k in ours}}, strict=True)
    start_grown_mixtures_(model, grown)
    return missing, unexpected
