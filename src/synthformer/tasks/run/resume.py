"""What a resumed task run reads back from its directory, in the task's terms; the rules themselves are
:mod:`synthformer.train.resume`'s, applied by the :class:`~synthformer.train.Run` (configs are handed to it as
dicts, read here with today's defaults, so that a config written by an earlier version compares in today's terms).
"""

from __future__ import annotations

from dataclasses import dataclass

from synthformer.common import to_dict
from synthformer.data import Tokenizer, load_label_set, load_tokenizer
from synthformer.models import ModelConfig
from synthformer.train import Run, RunDir
from synthformer.train import check_resumed_model as _check_model

from .config import RunConfig
from .loading import read_model_config, read_run_config

__all__ = ["ResumedInputs", "check_resumed_model", "resumed_inputs", "saved_inputs"]


@dataclass
class ResumedInputs:
    """What a resumed run reuses from its directory: the tokenizer and the class names it was trained with."""

    tokenizer: Tokenizer
    label_set: list[str] | None


def resumed_inputs(owner: Run, run: RunConfig) -> ResumedInputs | None:
    """Check that the run ``owner`` holds may be resumed with ``run`` (:meth:`Run.check_resume`) and return what it
    reuses; None when there is nothing to resume (no tokenizer yet: the run starts fresh).

    Raises:
        RunError: a checkpoint without its tokenizer or model config, another task type, or a config change
            that would make another run of the saved one.
    """
    rd = owner.rundir
    if not owner.check_resume(lambda: to_dict(read_run_config(rd)), to_dict(run)):
        return None
    return saved_inputs(rd)


def saved_inputs(rd: RunDir) -> ResumedInputs | None:
    """The tokenizer and class names saved in ``rd`` (None without a tokenizer: a run there starts fresh). A
    resumed run reads them after its checks (:func:`resumed_inputs`); a dry run reads them to plan the run that
    would continue there."""
    if not rd.tokenizer_path.is_file():
        return None
    labels = load_label_set(rd.labels_path) if rd.labels_path.is_file() else None
    return ResumedInputs(load_tokenizer(rd.tokenizer_path), labels)


def check_resumed_model(owner: Run, model_config: ModelConfig) -> None:
    """Refuse to resume when the model sized for the data differs from the saved ``model_config.json`` (a config
    written by an earlier version is compared in today's terms)."""
    if owner.rundir.model_config_path.is_file():
        _check_model(owner.rundir, read_model_config(owner.rundir).to_dict(), model_config.to_dict())
