"""The glue from a run configuration to data, tokenizer, model, trainer and metrics.

Flow (one direction): :class:`RunConfig` (YAML + dotted overrides) -> raw splits (:func:`load_raw_data`: files,
built-in generators, Hugging Face data sets) -> a tokenizer trained on the training split -> datasets -> the model
(vocabulary from the tokenizer) -> :class:`~synthformer.train.Trainer` with the task's ``eval_fn`` -> a run
directory -> :func:`load_run` for evaluation (:func:`evaluate_split`) and generation (:func:`generate_texts`).

Example::

    from synthformer.tasks import load_run_config, train_run, load_run, evaluate_split

    run = load_run_config("configs/lm_tiny_shakespeare.yaml", ["train.steps=200"])
    result = train_run(run, "runs/shakespeare")
    print(result.metrics["eval_bits_per_character"])
"""

from .compare import (
    COMPARE_TASKS,
    DEFAULT_KINDS,
    ComparisonResult,
    ComparisonRow,
    compare_config,
    format_table,
    run_comparison,
    with_kind,
)
from .config import (
    ARCH_OF_TASK,
    EVAL_METRICS,
    GENERATORS,
    TASK_TYPES,
    EvalConfig,
    RunConfig,
    TaskConfig,
    default_metrics,
    load_run_config,
    resolve_model_config,
)
from .evaluation import evaluate_split, majority_baseline, make_eval_fn, unigram_bits_per_token
from .generation import Generated, generate_texts
from .pipeline import (
    EvalReport,
    LoadedRun,
    RunError,
    TaskData,
    TrainResult,
    build_task_model,
    check_run_dir,
    default_eval_split,
    evaluate_run,
    load_run,
    prepare_data,
    train_run,
)
from .pystdlib import load_pystdlib, stdlib_source_files
from .sources import RawData, load_raw_data

__all__ = [
    "ARCH_OF_TASK",
    "COMPARE_TASKS",
    "DEFAULT_KINDS",
    "EVAL_METRICS",
    "GENERATORS",
    "TASK_TYPES",
    "ComparisonResult",
    "ComparisonRow",
    "EvalConfig",
    "EvalReport",
    "Generated",
    "LoadedRun",
    "RawData",
    "RunConfig",
    "RunError",
    "TaskConfig",
    "TaskData",
    "TrainResult",
    "build_task_model",
    "check_run_dir",
    "compare_config",
    "default_eval_split",
    "default_metrics",
    "evaluate_run",
    "evaluate_split",
    "format_table",
    "generate_texts",
    "load_pystdlib",
    "load_raw_data",
    "load_run",
    "load_run_config",
    "majority_baseline",
    "make_eval_fn",
    "prepare_data",
    "resolve_model_config",
    "run_comparison",
    "stdlib_source_files",
    "train_run",
    "unigram_bits_per_token",
    "with_kind",
]
