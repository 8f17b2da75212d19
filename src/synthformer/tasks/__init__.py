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

# isort: off
# The registry first, then the built-in task types and generators (importing them registers them).
from .registry import (
    GenerateOptions,
    Generated,
    Generator,
    TaskType,
    get_generator,
    get_task_type,
    list_generators,
    list_task_types,
    register_generator,
    register_task_type,
    task_type_for_arch,
    unregister_generator,
    unregister_task_type,
)
from . import types, generators  # noqa: F401

# isort: on
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
from .config import EvalConfig, RunConfig, TaskConfig, load_run_config, resolve_model_config
from .evaluation import evaluate_split, make_eval_fn
from .generation import generate_texts
from .generators.pystdlib import load_pystdlib, stdlib_source_files
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
from .sources import RawData, load_raw_data
from .types.classification import majority_baseline
from .types.lm import unigram_bits_per_token

__all__ = [
    "COMPARE_TASKS",
    "DEFAULT_KINDS",
    "ComparisonResult",
    "ComparisonRow",
    "EvalConfig",
    "EvalReport",
    "GenerateOptions",
    "Generated",
    "Generator",
    "LoadedRun",
    "RawData",
    "RunConfig",
    "RunError",
    "TaskConfig",
    "TaskData",
    "TaskType",
    "TrainResult",
    "build_task_model",
    "check_run_dir",
    "compare_config",
    "default_eval_split",
    "evaluate_run",
    "evaluate_split",
    "format_table",
    "generate_texts",
    "get_generator",
    "get_task_type",
    "list_generators",
    "list_task_types",
    "load_pystdlib",
    "load_raw_data",
    "load_run",
    "load_run_config",
    "majority_baseline",
    "make_eval_fn",
    "prepare_data",
    "register_generator",
    "register_task_type",
    "resolve_model_config",
    "run_comparison",
    "stdlib_source_files",
    "task_type_for_arch",
    "train_run",
    "unigram_bits_per_token",
    "unregister_generator",
    "unregister_task_type",
    "with_kind",
]
