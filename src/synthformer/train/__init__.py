"""Model-agnostic training engine: config, optimizers and schedules, checkpoints, run directories, the loop (the
task metrics, text ones included, are the task types': :mod:`synthformer.tasks.metrics`).

Any module whose ``forward(**batch)`` returns ``{"loss": scalar, "logits": ...}`` can be trained::

    from synthformer.train import Run, Trainer, TrainConfig
    with Run.open("runs/lm") as run:  # the run directory's owner: locked until the block ends
        Trainer(model, dataset, TrainConfig(steps=1000, lr=3e-4), run, collate_fn=collate).train()

Modules: ``trainer`` (the loop), ``callbacks`` (hooks into it), ``run`` (the run directory's one owner, from its lock
to its last save, and the only writer under it: the run's files and others' extra files), ``resume`` (every rule of
resuming a run), ``recording`` (the Recorder the trainer holds: metrics lines, heartbeats, evaluation lines),
``evaluation`` (forward pass, periodic evaluation), ``tracking`` (``log_with``), ``rundir`` / ``runlock`` /
``run_errors`` (the run directory read-only, its lock, its errors),
``checkpoint``, ``config`` (``TrainConfig``; the generic loader and ``ConfigError`` are in
:mod:`synthformer.common.config`), ``loader``, ``optim``, ``distributed``, ``hooks``, ``rng``; for
long runs ``longrun`` (its decisions), ``faults`` (their errors), ``signals`` (SIGINT, SIGTERM, SIGUSR1), ``best``
(``keep_best``) and ``saving`` (the trainer's checkpoints).
"""

from .best import metric_direction, metric_key
from .callbacks import TrainerCallback
from .checkpoint import (
    MODEL_FILE,
    STATE_FILE,
    Checkpoint,
    CheckpointError,
    WeightsMismatchError,
    capture_rng_state,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    load_model_weights,
    read_trainer_state,
    restore_rng_state,
    save_checkpoint,
    shape_mismatches,
)
from .config import TrainConfig
from .faults import TrainingFailed
from .hooks import preserved_rng
from .loader import BatchStream, eval_batches
from .optim import adamw, build_optimizer, build_scheduler, freeze_parts, lr_multiplier, param_groups
from .recording import trainer_state
from .resume import EXECUTION_SETTINGS, check_earlier_run, check_resumed_model, config_differences
from .run import ExtraFiles, Run, append_metrics, open_extras, write_evaluation
from .rundir import RunDir, RunError, RunExistsError, RunLock, is_main_process, select_checkpoint
from .runlock import LOCK_FILE, lock_directory
from .sharding import EvalShard, accepts_shard
from .signals import EXIT_PREEMPTED, Preempted
from .trainer import Trainer, count_tokens, seed_everything

__all__ = [
    "EXIT_PREEMPTED", "BatchStream", "Checkpoint", "CheckpointError", "ExtraFiles", "Run", "RunDir", "RunError",
    "RunExistsError", "RunLock", "Preempted", "TrainingFailed", "TrainConfig", "Trainer", "TrainerCallback",
    "build_optimizer", "build_scheduler", "capture_rng_state", "count_tokens", "eval_batches", "is_main_process",
    "latest_checkpoint", "list_checkpoints", "load_checkpoint", "load_model_weights", "lr_multiplier",
    "open_extras", "param_groups", "read_trainer_state", "restore_rng_state", "save_checkpoint",
    "select_checkpoint", "WeightsMismatchError", "seed_everything", "check_earlier_run", "check_resumed_model",
    "freeze_parts", "preserved_rng", "EXECUTION_SETTINGS", "EvalShard", "LOCK_FILE", "MODEL_FILE", "STATE_FILE",
    "accepts_shard", "adamw", "append_metrics", "config_differences", "lock_directory", "metric_direction",
    "metric_key", "shape_mismatches", "trainer_state", "write_evaluation",
]
