"""Reading a trained run directory back: the model (weights of the latest checkpoint), its configs and tokenizer.

``config.yaml`` is the run's configuration as it was started; ``model_config.json`` describes the trained weights
and is what the model is built from. When the two disagree about a model setting (an edit of ``config.yaml``),
``model_config.json`` wins and a warning names each difference; when ``model_config.json`` does not fit the
weights (an edit of it, or a file of another version), loading fails with one line naming the first parameter and
both shapes.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from torch import nn

from synthformer.data import Tokenizer, load_label_set, load_tokenizer
from synthformer.models import ModelConfig, build_model
from synthformer.train import RunDir, RunError, WeightsMismatchError, load_model_weights

from .config import RunConfig, load_run_config

__all__ = ["LoadedRun", "load_run", "read_model_config"]

logger = logging.getLogger(__name__)

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


def load_run(run_dir: str | Path) -> LoadedRun:
    """Read a run directory written by :func:`train_run`.

    Raises:
        RunError: the directory is missing, is not a synthformer run, or has no checkpoint yet.
    """
    rd = RunDir(run_dir)
    run_dir = rd.path
    if not run_dir.is_dir():
        raise RunError(f"run directory not found: {run_dir}")
    missing = [name for name in (rd.CONFIG, rd.TOKENIZER, rd.MODEL_CONFIG) if not (run_dir / name).is_file()]
    if missing:
        raise RunError(f"{run_dir} is not a synthformer run directory (missing {', '.join(missing)}); "
                       "create one with 'synthformer train CONFIG --run-dir DIR'")
    ckpt = rd.latest_checkpoint()
    if ckpt is None:
        raise RunError(f"{run_dir} has no checkpoint yet (nothing in {rd.checkpoints_path}); train it first "
                       "or resume it with 'synthformer train CONFIG --run-dir DIR --resume'")
    config = load_run_config(rd.config_path)
    tokenizer = load_tokenizer(rd.tokenizer_path)
    model_config = read_model_config(rd)
    _warn_config_disagreement(rd, config, model_config)
    label_set = load_label_set(rd.labels_path) if rd.labels_path.is_file() else None
    model = build_model(model_config)
    try:
        load_model_weights(ckpt, model)
    except WeightsMismatchError as err:
        raise RunError(f"{err}; the model is built from {rd.model_config_path}, which must be the one the run was "
                       "trained with (was it edited, or written by another version?)") from None
    model.eval()
    step = int(json.loads((ckpt / "trainer_state.json").read_text(encoding="utf-8")).get("step", 0))
    return LoadedRun(run_dir, config, tokenizer, model, model_config, ckpt, step, label_set)


def _warn_config_disagreement(rd: RunDir, run: RunConfig, model_config: ModelConfig) -> None:
    """Warn when a model setting of ``config.yaml`` disagrees with ``model_config.json``: the latter describes the
    trained weights and wins (the former is what the run was started with; an edit of it changes nothing)."""
    saved = model_config.to_dict()
    diffs = [f"model.{key}: config.yaml {value!r}, model_config.json {saved[key]!r}"
             for key, value in run.model.to_dict().items()
             if key in run.model_section and key in saved and value != saved[key]]
    if diffs:
        logger.warning("%s: config.yaml disagrees with model_config.json (%s); the model is built from "
                       "model_config.json, which describes the trained weights", rd.path, "; ".join(diffs))


def read_model_config(rd: RunDir) -> ModelConfig:
    """The saved model config of a run (one written by an earlier version included)."""
    path = rd.model_config_path
    try:
        return ModelConfig.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as err:
        raise RunError(f"{path}: not a valid model config ({err})") from None

