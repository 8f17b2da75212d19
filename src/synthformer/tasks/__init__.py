"""The glue from a run configuration to data, tokenizer, model, trainer and metrics.

Layout: :mod:`.contract` (what a task type, a generator and the data they exchange are), :mod:`.registry` (the
tables of registered ones), ``types/`` and ``generators/`` (the generic task types and generators: ``lm``,
``seq2seq``, ``classification``, ``span_corruption``, ``pystdlib``), ``suites/`` (one package per benchmark with
its readers, generators, task types and metrics: ``glue``, ``summarization``, ``dialogue``, ``lra``, ``probes``),
:mod:`.sources` (raw splits), ``run/`` (configuration, data preparation, training into a run directory, resume,
loading, evaluation, generation), ``prepared/`` (prepared corpora: what a type's ``preparation()`` declares,
``synthformer prepare``, and a run on ``task.prepared``), ``metrics/`` (likelihood and the trivial baselines) and
:mod:`.compare`.

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
# The contract and the tables first, then the task types and generators: the generic ones, then the suites', which
# build on them (importing them registers them).
from .contract import GenerateOptions, Generated, Generator, LoadedRun, RawData, TaskData, TaskType
from .registry import (
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
from . import types, generators, suites  # noqa: F401

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
from .generators.pystdlib import load_pystdlib, stdlib_source_files
from .metrics.likelihood import batches
from .prepared import check_prepared, prepare_corpus
from .prepared.reading import open_prepared, prepared_dataset
from .run.config import EvalConfig, RunConfig, load_run_config, resolve_model_config
from .run.data import build_checked_model, build_task_model, prepare_data, seeded_model
from .run.evaluation import EvalReport, default_eval_split, evaluate_run, evaluate_split, make_eval_fn
from .run.generation import generate_texts
from .run.init_from import init_from_missing, load_pretrained_weights, split_init_from
from .run.loading import load_run, read_model_config, read_run_config
from .run.pipeline import TrainResult, absolute_paths, check_run_dir, train_run
from .run.resume import ResumedInputs
from .run.setup import example_lengths, kept_tokenizer, optimizer_parameters, saved_tokenizer, setup_model
from .run.task_config import TaskConfig
from .sources import load_raw_data, read_input_lines
from .types.classification import majority_baseline
from .types.lm import unigram_bits_per_token

__all__ = [
    "COMPARE_TASKS", "DEFAULT_KINDS", "ComparisonResult", "ComparisonRow", "EvalConfig", "EvalReport",
    "GenerateOptions", "Generated", "Generator", "LoadedRun", "RawData", "RunConfig", "TaskConfig", "TaskData",
    "TaskType", "TrainResult", "build_task_model", "check_run_dir", "compare_config", "default_eval_split",
    "evaluate_run", "evaluate_split", "format_table", "generate_texts", "get_generator", "get_task_type",
    "list_generators", "list_task_types", "load_pystdlib", "load_raw_data", "load_run", "load_run_config",
    "majority_baseline", "make_eval_fn", "prepare_data", "register_generator", "register_task_type",
    "resolve_model_config", "run_comparison", "stdlib_source_files", "task_type_for_arch", "train_run",
    "unigram_bits_per_token", "unregister_generator", "unregister_task_type", "with_kind", "absolute_paths",
    "batches", "build_checked_model", "check_prepared", "load_pretrained_weights", "prepare_corpus",
    "read_input_lines", "read_run_config", "seeded_model", "split_init_from", "ResumedInputs", "example_lengths",
    "init_from_missing", "kept_tokenizer", "open_prepared", "optimizer_parameters", "prepared_dataset",
    "read_model_config", "saved_tokenizer", "setup_model",
]
