"""Registry-wide checks: every registered task type, generator and architecture keeps the contracts the pipeline,
evaluation, ``compare`` and ``bench`` rely on (a newly registered part is covered without editing this file)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch

from synthformer.common.config import ConfigError, from_dict
from synthformer.models import build_model, config_class, get_preset, list_archs, list_presets
from synthformer.tasks import (
    RunConfig,
    TaskConfig,
    evaluate_run,
    generate_texts,
    get_generator,
    get_task_type,
    list_generators,
    list_task_types,
    load_raw_data,
    load_run,
    task_type_for_arch,
    train_run,
)

from .helpers import (
    classification_config,
    dialogue_config,
    lm_config,
    retrieval_config,
    seq2seq_config,
    span_config,
    summarization_config,
    t2t_config,
)
from .suites.mixing.test_mad_compression import tiny_config as compression_tiny_config
from .suites.mixing.test_mqar import tiny_config as mqar_tiny_config

TASK_TYPES = list_task_types()
GENERATORS = list_generators()
# generator options that keep each generated data set tiny
SMALL = {"pystdlib": {"max_train_chars": 4000, "max_eval_chars": 1000},
         "listops": {"num_train": 40, "num_valid": 8, "num_test": 8, "max_length": 30},
         "algorithmic": {"num_train": 40, "num_valid": 8, "num_test": 8, "max_len": 5},
         "pathfinder": {"num_train": 8, "num_valid": 4, "num_test": 4},
         # every token-mixing benchmark takes these (a sequence length that fits the default task.max_len)
         "mixing": {"num_train": 16, "num_valid": 4, "num_test": 4, "seq_len": 64},
         "compression": {"num_train": 16, "num_valid": 4, "num_test": 4}}


@pytest.mark.parametrize("name", TASK_TYPES)
def test_task_type_describes_itself(name: str) -> None:
    task_type = get_task_type(name)
    assert task_type.name == name
    assert task_type.arch in list_archs()  # it trains a registered architecture
    assert "loss" in task_type.metrics and task_type.formats
    for path in ("data/x.jsonl", "data/x.tsv", "data/x.csv", "data/x.txt"):
        try:
            assert task_type.infer_format(path) in task_type.formats
        except ConfigError as err:  # a type may refuse to guess, but must say what to set
            assert "task.format" in str(err)
    assert set(task_type.derived_model_fields) <= set(config_class(task_type.arch).field_names())
    # every `reads` field is a TaskConfig field
    assert task_type.reads <= {f.name for f in dataclasses.fields(TaskConfig)}


# A tiny run of every registered task type (a new type adds its entry: the first test below fails until it does).
TINY_RUNS = {"lm": lm_config, "seq2seq": lambda tmp: seq2seq_config(), "classification": classification_config,
             "span_corruption": span_config, "text_to_text": t2t_config, "summarization": summarization_config,
             "dialogue": dialogue_config, "retrieval": retrieval_config,
             "token_mixing": lambda tmp: mqar_tiny_config(), "compression": lambda tmp: compression_tiny_config()}


def test_every_task_type_has_a_tiny_run() -> None:
    assert set(TASK_TYPES) <= set(TINY_RUNS)


@pytest.mark.parametrize("name", TASK_TYPES)
def test_every_task_type_trains_evaluates_and_generates(name: str, tmp_path: Path) -> None:
    cfg = TINY_RUNS[name](tmp_path)
    cfg["train"] = {**cfg["train"], "steps": 2, "save_every": 2, "eval_every": 2}
    run = from_dict(RunConfig, cfg)
    result = train_run(run, tmp_path / "run")
    assert result.steps == 2 and math.isfinite(result.metrics["eval_loss"])
    report = evaluate_run(tmp_path / "run")
    assert math.isfinite(report.metrics["loss"]) and report.path.is_file()
    prompt = "a\tb" if name == "retrieval" else "a b"  # retrieval reads a pair: two texts and a tab
    out = generate_texts(load_run(tmp_path / "run"), [prompt], max_new_tokens=3)
    assert len(out) == 1 and isinstance(out[0].output, str)


@pytest.mark.parametrize("name", TASK_TYPES)
def test_random_batch_trains_the_task_types_architecture(name: str) -> None:
    task_type = get_task_type(name)
    presets = [p for p in list_presets() if get_preset(p).arch == task_type.arch]
    base = get_preset(presets[0]) if presets else config_class(task_type.arch)()
    config = dataclasses.replace(base, d_model=16, n_heads=2, n_layers=1, d_ff=32, vocab_size=20, max_len=8,
                                 **task_type.model_fields(3))
    torch.manual_seed(0)
    model = build_model(config)
    batch = task_type.random_batch(config, 4, 8, torch.Generator().manual_seed(0))
    # token inputs: *_ids, and the dual encoder's input_ids_1 / input_ids_2
    ids = [t for key, t in batch.items() if "_ids" in key and key != "tgt_ids"]
    assert ids and all(bool((t != config.pad_id).all()) for t in ids)  # no padding inside benchmark batches
    out = model(**batch)
    assert math.isfinite(float(out["loss"].detach()))
    out["loss"].backward()
    assert int(task_type.count_tokens(batch)) > 0
    assert task_type_for_arch(task_type.arch).arch == task_type.arch


@pytest.mark.parametrize("spec", GENERATORS)
def test_generator_makes_the_splits_of_its_task_type(spec: str) -> None:
    gen, arg = get_generator(spec)
    assert gen.task_type in TASK_TYPES
    assert (arg is None) == (not gen.arguments)
    task = TaskConfig(type=gen.task_type, generator=spec, generator_options=SMALL.get(gen.name, {}))
    raw = load_raw_data(task)
    assert raw.task_type == gen.task_type and {"train", "valid"} <= set(raw.splits)
    assert task.task_type.training_texts(raw)  # the task type can build a tokenizer from it
    assert task.has_test_split == ("test" in raw.splits)
    if gen.fixed_vocabulary:
        assert gen.task_tokenizer(task).vocab_size > 0
        with pytest.raises(ConfigError, match="own fixed vocabulary"):
            TaskConfig(type=gen.task_type, generator=spec, tokenizer="char")
    with pytest.raises(ConfigError, match=r"generator_options: unknown option"):
        load_raw_data(TaskConfig(type=gen.task_type, generator=spec, generator_options={"bogus": 1}))


def test_registering_a_name_twice_is_refused() -> None:
    from synthformer.tasks import register_task_type

    class Again(type(get_task_type("lm"))):
        pass

    with pytest.raises(ValueError, match="task type 'lm' is already registered"):
        register_task_type(Again)
