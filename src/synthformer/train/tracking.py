"""Experiment tracking through accelerate's trackers (``train.log_with``): TensorBoard, Weights & Biases, MLflow;
and the run's own TensorBoard writer (``train.tensorboard``, :func:`open_tensorboard`).

Every tracker writes under ``RUN/trackers/`` and needs no network: TensorBoard event files in
``RUN/trackers/<project>``, Weights & Biases in offline mode (unless ``WANDB_MODE`` says otherwise; ``wandb sync``
uploads later) in ``RUN/trackers/wandb``, MLflow in a local file store ``RUN/trackers/mlflow`` (``mlflow ui
--backend-store-uri RUN/trackers/mlflow``). They receive the lines ``metrics.jsonl`` receives (numbers only) and the
training settings as hyperparameters; ``metrics.jsonl`` stays the record the project reads.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from synthformer.common import ConfigError, to_dict

from .config import TRACKER_NAMES, TrainConfig
from .rundir import RunDir

__all__ = ["TRACKERS", "check_trackers", "open_tensorboard", "open_trackers"]

#: ``train.log_with`` names -> the package each needs (each is named after its package).
TRACKERS: dict[str, str] = {name: name for name in TRACKER_NAMES}


def check_trackers(names: Sequence[str]) -> None:
    """Raise :class:`ConfigError` naming a tracker that is unknown or whose package is missing (call on every
    process, so that none waits for a peer that failed)."""
    for name in names:
        if name not in TRACKERS:
            raise ConfigError(f"log_with: unknown tracker {name!r}; valid: {', '.join(TRACKERS)}")
        if importlib.util.find_spec(TRACKERS[name]) is None:
            raise ConfigError(f"log_with: {name!r} needs the {TRACKERS[name]!r} package: pip install "
                              f"{TRACKERS[name]} (or remove it from train.log_with)")


def open_tensorboard(summary_writer: Any, run_dir: Path, purge_step: int | None) -> Any:
    """``summary_writer`` (TensorBoard's ``SummaryWriter``) on the run's ``RUN/tensorboard/`` (main process only);
    ``purge_step``: hide the events a killed run logged after the checkpoint it resumes from (None: a fresh run)."""
    return summary_writer(log_dir=str(Path(run_dir) / RunDir.TENSORBOARD), purge_step=purge_step)


def open_trackers(config: TrainConfig, run_dir: Path) -> list[Any]:
    """Start the trackers of ``config.log_with`` (none: an empty list) for a run in ``run_dir`` (main process only)
    under ``config.tracker_project``, and store the training settings (the scalar ones: trackers take numbers,
    strings and booleans) as the run's hyperparameters."""
    from accelerate.tracking import MLflowTracker, TensorBoardTracker, WandBTracker

    names, project = config.log_with, config.tracker_project
    if not names:
        return []
    check_trackers(names)
    root = Path(run_dir) / RunDir.TRACKERS
    root.mkdir(parents=True, exist_ok=True)
    trackers: list[Any] = []
    for name in names:
        if name == "tensorboard":
            tracker = TensorBoardTracker(project, root)
        elif name == "wandb":
            os.environ.setdefault("WANDB_MODE", "offline")  # nothing leaves the machine unless asked
            tracker = WandBTracker(project, dir=str(root))
        else:
            import mlflow

            if "MLFLOW_TRACKING_URI" not in os.environ:  # a local file store in the run directory
                mlflow.set_tracking_uri((root / "mlflow").resolve().as_uri())
            tracker = MLflowTracker(project, logging_dir=str(root / "mlflow" / "artifacts"))
        tracker.start()
        trackers.append(tracker)
    hparams = {k: v for k, v in to_dict(config).items() if isinstance(v, (bool, int, float, str))}
    for tracker in trackers:
        tracker.store_init_configuration(hparams)
    return trackers
