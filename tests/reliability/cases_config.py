"""Bad run configs: every section (top level and ``init_from``, ``task``, ``model``, ``train``, ``eval``), as a
YAML file and as a ``key=value`` override: wrong types, out-of-range values, unknown keys at every level, broken
override syntax, and config files that are missing, unreadable, truncated, empty, binary or wrongly encoded.

Every case runs ``synthformer train`` into a run directory that does not exist, which must still not exist after
the error (a failed start leaves no trace)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from typing import Any

from .harness import BINARY, DELETE, UTF16, Case, Env, case

Argv = Callable[[Env], Sequence[Any]]


def yaml_change(kind: str, changes: dict[str, Any]) -> Argv:
    """``train`` a config file holding ``changes`` to the trained ``kind`` config."""
    return lambda env: ["train", env.config(kind, changes), "--run-dir", env.fresh_run()]


def override(kind: str, *overrides: str) -> Argv:
    """``train`` the trained ``kind`` config with command-line ``overrides``."""
    return lambda env: ["train", env.config(kind), *overrides, "--run-dir", env.fresh_run()]


def config_text(text: str | bytes, name: str = "bad.yaml") -> Argv:
    """``train`` a config file with exactly this content."""
    return lambda env: ["train", env.write(name, text), "--run-dir", env.fresh_run()]


# -- top level and init_from ----------------------------------------------------------------------------------


def _init_from(source: Callable[[Env], Any], kind: str = "lm", changes: dict[str, Any] | None = None) -> Argv:
    return lambda env: ["train", env.config(kind, changes), f"init_from={source(env)}", "--run-dir", env.fresh_run()]


def _run_without_checkpoints(env: Env) -> Any:
    run = env.run("lm", "pretrained")
    shutil.rmtree(run / "checkpoints")
    return run


def _own_run_dir(env: Env) -> list[Any]:
    run = env.run("lm")
    return ["train", env.config("lm"), f"init_from={run}", "--run-dir", run, "--overwrite"]


TOP = "config: top level and init_from"
TOP_CASES: list[Case] = [
    case(TOP, "top-unknown-key-yaml", yaml_change("lm", {"modle": {"d_model": 16}}),
         "unknown key 'modle'", "did you mean 'model'"),
    case(TOP, "top-unknown-key-override", override("lm", "trian.steps=5"), "unknown key 'trian'", "'train'"),
    case(TOP, "top-missing-task", yaml_change("lm", {"task": DELETE}), "missing required key(s): task"),
    case(TOP, "top-task-not-mapping", yaml_change("lm", {"task": "lm"}), "task: expected", "'lm'"),
    case(TOP, "top-model-not-mapping", yaml_change("lm", {"model": [16, 2]}), "model: expected a mapping", "[16, 2]"),
    case(TOP, "top-train-not-mapping", yaml_change("lm", {"train": 5}), "train: expected", "5 (int)"),
    case(TOP, "top-eval-null", yaml_change("lm", {"eval": None}), "eval: expected", "None"),
    case(TOP, "init-from-wrong-type", yaml_change("lm", {"init_from": 5}), "init_from: expected", "5 (int)"),
    case(TOP, "init-from-empty", yaml_change("lm", {"init_from": " "}), "init_from: expected the path", "' '"),
    case(TOP, "init-from-missing-dir", _init_from(lambda env: env.tmp / "no-such-run"),
         "init_from: run directory not found", "no-such-run"),
    case(TOP, "init-from-not-a-run", _init_from(lambda env: env.write("notes/readme.txt", "hi").parent),
         "init_from:", "notes", "is not a synthformer run directory"),
    case(TOP, "init-from-no-checkpoint", _init_from(_run_without_checkpoints),
         "init_from:", "pretrained", "has no checkpoint yet"),
    case(TOP, "init-from-other-task-type", _init_from(lambda env: env.run("lm", "pretrained"), kind="cls",
                                                   changes={"task.tokenizer": DELETE, "task.overflow": "truncate",
                                                            "task.tokenizer_options": DELETE}),
         "init_from:", "arch='lm'", "'classification'"),
    case(TOP, "init-from-own-run-dir", _own_run_dir, "init_from:", "this run's own directory"),
]

# -- task -----------------------------------------------------------------------------------------------------
TASK = "config: task"
TASK_CASES: list[Case] = [
    case(TASK, "task-type-unknown", yaml_change("lm", {"task.type": "lmm"}), "task.type", "'lmm'", "did you mean 'lm'"),
    case(TASK, "task-type-wrong-type", yaml_change("lm", {"task.type": 5}), "task.type: expected str", "5 (int)"),
    case(TASK, "task-unknown-key", yaml_change("lm", {"task.trian": "x.txt"}), "unknown key 'task.trian'",
         "did you mean 'train'"),
    case(TASK, "task-unknown-key-override", override("lm", "task.max_lenght=32"), "unknown key 'task.max_lenght'"),
    case(TASK, "task-max-len-negative", override("lm", "task.max_len=-1"), "task.max_len", "got -1"),
    case(TASK, "task-max-len-string", override("lm", "task.max_len=long"), "task.max_len: expected int", "'long'"),
    case(TASK, "task-max-len-float", yaml_change("lm", {"task.max_len": 1.5}), "task.max_len: expected int", "1.5"),
    case(TASK, "task-max-len-bool", yaml_change("lm", {"task.max_len": True}), "task.max_len: expected int", "True"),
    case(TASK, "task-valid-fraction-range", override("lm", "task.valid_fraction=1.5"), "task.valid_fraction",
         "[0, 1)", "1.5"),
    case(TASK, "task-valid-fraction-string", override("lm", "task.valid_fraction=half"), "task.valid_fraction",
         "'half'"),
    case(TASK, "task-fractions-sum", override("lm", "task.test_fraction=0.95"), "valid_fraction + test_fraction",
         "0.95"),
    case(TASK, "task-overflow-unknown", override("lm", "task.overflow=wrap"), "task.overflow", "'wrap'"),
    case(TASK, "task-tokenizer-unknown", override("lm", "task.tokenizer=wordpiece"), "task.tokenizer",
         "'wordpiece'"),
    case(TASK, "task-vocab-size-zero", override("lm", "task.vocab_size=0"), "task.vocab_size", "got 0"),
    case(TASK, "task-byte-vocab-size", override("lm", "task.tokenizer=byte", "task.vocab_size=100"),
         "vocab_size", "260", "100"),
    case(TASK, "task-stride-zero", override("lm", "task.stride=0"), "task.stride", "got 0"),
    case(TASK, "task-empty-lines-unknown", override("cls", "task.empty_lines=ignore"), "task.empty_lines",
         "'ignore'"),
    case(TASK, "task-format-unknown", override("cls", "task.format=parquet"), "task.format", "'parquet'"),
    case(TASK, "task-format-other-type", override("lm", "task.format=csv"), "task.format", "'csv'", "'lm'"),
    case(TASK, "task-two-sources", override("lm", "task.generator=pystdlib"), "exactly one data source",
         "train, generator"),
    case(TASK, "task-generator-unknown", yaml_change("seq2seq", {"task.generator": "algorithmic:rot13"}),
         "task.generator", "'algorithmic:rot13'"),
    case(TASK, "task-generator-option-unknown", override("seq2seq", "task.generator_options.num_trian=5"),
         "task.generator_options", "num_trian"),
    case(TASK, "task-options-unknown", override("lm", "task.options.noise=0.5"), "task.options", "'noise'"),
    case(TASK, "task-tokenizer-option-unknown", override("lm", "task.tokenizer_options.lowercase=true"),
         "task.tokenizer", "lowercase"),
    case(TASK, "task-train-wrong-type", yaml_change("lm", {"task.train": 5}), "task.train: expected", "5 (int)"),
    case(TASK, "task-field-of-other-type", override("lm", "task.max_target_len=8"), "max_target_len",
         "only used by type"),
    case(TASK, "task-text-field-list", yaml_change("cls", {"task.text_field": ["text"]}), "task.text_field",
         "['text']"),
    case(TASK, "task-hf-splits-keys", yaml_change("cls", {"task.train": DELETE, "task.valid": DELETE,
                                                          "task.test": DELETE, "task.format": DELETE,
                                                          "task.hf_name": "imdb",
                                                          "task.hf_splits": {"dev": "validation"}}),
         "hf_splits", "'dev'"),
    case(TASK, "task-eval-limit-zero", override("cls", "task.eval_limit=0"), "task.eval_limit", "got 0"),
]

# -- model ----------------------------------------------------------------------------------------------------
MODEL = "config: model"
MODEL_CASES: list[Case] = [
    case(MODEL, "model-unknown-key", override("lm", "model.d_modle=32"), "unknown key 'model.d_modle'",
         "did you mean 'd_model'"),
    case(MODEL, "model-unknown-key-yaml", yaml_change("cls", {"model.decoder_kind": "R"}),
         "unknown key 'model.decoder_kind'", "'classification'"),
    case(MODEL, "model-d-model-string", override("lm", "model.d_model=big"), "d_model", "'big'"),
    case(MODEL, "model-d-model-zero", override("lm", "model.d_model=0"), "d_model", "got 0"),
    case(MODEL, "model-heads-do-not-divide", override("lm", "model.n_heads=3"), "n_heads", "3"),
    case(MODEL, "model-layers-float", yaml_change("lm", {"model.n_layers": 2.5}), "n_layers", "2.5"),
    case(MODEL, "model-dropout-range", override("lm", "model.dropout=1.5"), "dropout", "1.5"),
    case(MODEL, "model-kind-unknown", override("lm", "model.decoder_kind=XYZ"), "decoder_kind", "'XYZ'"),
    case(MODEL, "model-kind-wrong-type", yaml_change("lm", {"model.decoder_kind": 5}), "decoder_kind", "5"),
    case(MODEL, "model-encoder-kind-unknown", override("seq2seq", "model.encoder_kind=Q+K"), "encoder_kind",
         "'Q+K'"),
    case(MODEL, "model-preset-unknown", override("lm", "model.preset=huge"), "model.preset", "'huge'"),
    case(MODEL, "model-preset-other-arch", override("lm", "model.preset=cls-small"), "model.preset",
         "'cls-small'", "'lm'"),
    case(MODEL, "model-derived-field", override("lm", "model.vocab_size=100"), "model.vocab_size",
         "do not set it here"),
    case(MODEL, "model-max-len-too-short", override("lm", "model.max_len=4"), "model.max_len", "got 4"),
    case(MODEL, "model-tie-embeddings-string", yaml_change("lm", {"model.tie_embeddings": "yes"}),
         "tie_embeddings", "'yes'"),
    case(MODEL, "model-kind-options-not-dict", yaml_change("lm", {"model.kind_options": 5}), "kind_options", "5"),
    case(MODEL, "model-kind-option-unknown", override("lm", "model.kind_options.bogus_option=1"), "model",
         "bogus_option"),
]

# -- train ----------------------------------------------------------------------------------------------------
TRAIN = "config: train"
TRAIN_CASES: list[Case] = [
    case(TRAIN, "train-steps-zero", override("lm", "train.steps=0"), "train.steps", "got 0"),
    case(TRAIN, "train-steps-string", override("lm", "train.steps=ten"), "train.steps: expected int", "'ten'"),
    case(TRAIN, "train-steps-float", override("lm", "train.steps=1.5"), "train.steps: expected int", "1.5"),
    case(TRAIN, "train-batch-size-bool", override("lm", "train.batch_size=true"), "train.batch_size: expected int",
         "True"),
    case(TRAIN, "train-lr-negative", override("lm", "train.lr=-1"), "train.lr", "-1"),
    case(TRAIN, "train-lr-string", override("lm", "train.lr=fast"), "train.lr: expected float", "'fast'"),
    case(TRAIN, "train-lr-infinite", override("lm", "train.lr=.inf"), "train.lr", "inf"),
    case(TRAIN, "train-optimizer-unknown", override("lm", "train.optimizer=sgd"), "train.optimizer", "'sgd'"),
    case(TRAIN, "train-schedule-unknown", yaml_change("lm", {"train.schedule": "linear"}), "train.schedule",
         "'linear'"),
    case(TRAIN, "train-betas-one-value", override("lm", "train.betas=[0.9]"), "train.betas", "[0.9]"),
    case(TRAIN, "train-betas-range", override("lm", "train.betas=[0.9,1.5]"), "train.betas", "1.5"),
    case(TRAIN, "train-min-lr-above-lr", override("lm", "train.min_lr=1"), "train.min_lr", "1.0"),
    case(TRAIN, "train-grad-accum-zero", override("lm", "train.grad_accum=0"), "train.grad_accum", "got 0"),
    case(TRAIN, "train-warmup-negative", override("lm", "train.warmup_steps=-5"), "train.warmup_steps", "-5"),
    case(TRAIN, "train-save-every-negative", yaml_change("lm", {"train.save_every": -1}), "train.save_every", "-1"),
    case(TRAIN, "train-bf16-string", override("lm", "train.bf16=maybe"), "train.bf16: expected bool", "'maybe'"),
    case(TRAIN, "train-unknown-key", override("lm", "train.setps=5"), "unknown key 'train.setps'",
         "did you mean 'steps'"),
    case(TRAIN, "train-unknown-key-yaml", yaml_change("cls", {"train.learning_rate": 0.1}),
         "unknown key 'train.learning_rate'"),
    # refused when the config is read, not at the first evaluation (after a checkpoint was written)
    case(TRAIN, "train-keep-best-not-reported", override("lm", "train.keep_best=accuracy"), "train.keep_best",
         "'accuracy'", "it reports: loss"),
    case(TRAIN, "train-spike-factor-one", override("lm", "train.spike_factor=1"), "train.spike_factor",
         "got 1", "or 0 (no spike check)"),
]

# -- eval -----------------------------------------------------------------------------------------------------
EVAL = "config: eval"
EVAL_CASES: list[Case] = [
    case(EVAL, "eval-section-beam-zero", override("seq2seq", "eval.beam=0"), "eval.beam", "got 0"),
    case(EVAL, "eval-section-beam-string", override("seq2seq", "eval.beam=wide"), "eval.beam: expected int", "'wide'"),
    case(EVAL, "eval-section-split-unknown", override("lm", "eval.split=dev"), "eval.split", "'dev'"),
    case(EVAL, "eval-section-split-missing", override("lm", "eval.split=test"), "eval.split", "'test'", "valid"),
    case(EVAL, "eval-section-metric-of-other-type", override("lm", "eval.metrics=[bleu]"), "eval.metrics", "'bleu'",
         "'lm'"),
    case(EVAL, "eval-section-metrics-not-list", override("lm", "eval.metrics=loss"), "eval.metrics: expected",
         "'loss'"),
    case(EVAL, "eval-section-length-penalty-negative", override("seq2seq", "eval.length_penalty=-1"),
         "eval.length_penalty", "-1"),
    case(EVAL, "eval-section-batch-size-zero", yaml_change("cls", {"eval.batch_size": 0}), "eval.batch_size", "got 0"),
    case(EVAL, "eval-section-unknown-key", override("seq2seq", "eval.beems=4"), "unknown key 'eval.beems'",
         "did you mean 'beam'"),
]

# -- override syntax ------------------------------------------------------------------------------------------
SYNTAX = "config: override syntax"
SYNTAX_CASES: list[Case] = [
    case(SYNTAX, "override-without-equals", override("lm", "train.lr"), "'train.lr'", "key=value"),
    case(SYNTAX, "override-empty-key", override("lm", "=5"), "'=5'", "empty key"),
    case(SYNTAX, "override-empty-part", override("lm", "train..lr=1"), "'train..lr=1'", "empty part"),
    case(SYNTAX, "override-bad-yaml", override("lm", "train.betas=[0.9,"), "train.betas", "not valid YAML"),
    case(SYNTAX, "override-into-scalar", override("lm", "train.steps.max=5"), "train.steps.max", "not a group"),
    case(SYNTAX, "override-into-model-scalar", override("lm", "model.d_model.x=1"), "model.d_model.x", "16"),
]

# -- config files ---------------------------------------------------------------------------------------------
FILES = "config: files"
TRUNCATED_YAML = "task:\n  type: lm\n  train: \"corpus.txt\n  max_len: [16,\n"


def _truncated_trained_config(env: Env) -> list[Any]:
    text = env.config("lm").read_text(encoding="utf-8")
    return ["train", env.write("cut.yaml", text[: len(text) // 2] + "\n  - ["), "--run-dir", env.fresh_run()]


FILE_CASES: list[Case] = [
    case(FILES, "config-missing", lambda env: ["train", env.tmp / "nope.yaml", "--run-dir", env.fresh_run()],
         "config file not found", "nope.yaml"),
    case(FILES, "config-is-directory", lambda env: ["train", env.tmp, "--run-dir", env.fresh_run()],
         "is a directory"),
    case(FILES, "config-unreadable", lambda env: ["train", env.deny(env.config("lm")), "--run-dir", env.fresh_run()],
         "config.yaml", "cannot read the file (Permission denied)"),
    case(FILES, "config-truncated", config_text(TRUNCATED_YAML), "bad.yaml", "not valid YAML"),
    case(FILES, "config-truncated-trained", _truncated_trained_config, "cut.yaml", "not valid YAML"),
    case(FILES, "config-tab-indented", config_text("task:\n\ttype: lm\n"), "bad.yaml", "not valid YAML"),
    case(FILES, "config-empty", config_text("# nothing yet\n"), "bad.yaml", "the file is empty",
         "missing required key(s): task"),
    case(FILES, "config-list", config_text("- task\n- model\n"), "bad.yaml", "must be a mapping", "list"),
    case(FILES, "config-scalar", config_text("just some text\n"), "bad.yaml", "must be a mapping", "str"),
    case(FILES, "config-binary", config_text(BINARY), "bad.yaml", "UTF-8", "0x89"),
    case(FILES, "config-latin1", config_text(b"task:\n  type: lm\n  train: caf\xe9.txt\n"), "bad.yaml", "UTF-8",
         "0xe9"),
    case(FILES, "config-utf16", config_text(UTF16), "bad.yaml", "UTF-8", "0xff"),
]

CONFIG_CASES: list[Case] = [*TOP_CASES, *TASK_CASES, *MODEL_CASES, *TRAIN_CASES, *EVAL_CASES, *SYNTAX_CASES,
                            *FILE_CASES]
