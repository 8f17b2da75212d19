"""RunConfig: every shipped config loads and resolves; overrides reach the model; errors name the bad key."""

from __future__ import annotations

from pathlib import Path

import pytest

from synthformer.attention import parse_kind
from synthformer.common.config import ConfigError, from_dict, to_dict
from synthformer.models import config_class, list_presets
from synthformer.tasks import (
    COMPARE_TASKS,
    RunConfig,
    compare_config,
    load_run_config,
    resolve_model_config,
)

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"
CONFIGS = sorted(CONFIG_DIR.glob("*.yaml"))
BASE = {"task": {"generator": "pystdlib"}}


def test_configs_folder_has_the_documented_files() -> None:
    names = {p.name for p in CONFIGS}
    expected = {"lm_tiny_shakespeare.yaml", "lm_enwik8.yaml", "mt_multi30k_de_en.yaml", "cls_imdb.yaml",
                "cls_sst2.yaml", "listops.yaml", "algorithmic_reverse.yaml", "compare_pystdlib.yaml"}
    assert expected <= names
    readme = (CONFIG_DIR / "README.md").read_text(encoding="utf-8")
    for name in names:  # every config is listed in the folder's README
        assert f"`{name}`" in readme


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_config_loads_and_resolves(path: Path) -> None:
    run = load_run_config(path)
    preset = run.model_section.get("preset")
    assert preset is None or preset in list_presets()
    # RunConfig.model is typed: the config class of the task type's architecture
    arch = run.task.task_type.arch
    assert isinstance(run.model, config_class(arch)) and run.model.arch == arch
    model = resolve_model_config(run, vocab_size=300, num_classes=3)
    archs = {"lm": "lm", "seq2seq": "seq2seq", "classification": "classifier", "span_corruption": "seq2seq",
             "text_to_text": "seq2seq", "summarization": "seq2seq", "dialogue": "seq2seq", "retrieval": "dual_encoder",
             "token_mixing": "lm", "compression": "compressor"}
    assert model.arch == archs[run.task.type]
    assert model.vocab_size == 300
    for stack in model.stacks:
        for kind in model.layer_kinds(stack):
            parse_kind(kind)  # raises for an unknown kind
    # the model is long enough for the task's sequences
    assert model.max_len >= run.task.max_len
    # what the config file says reaches the resolved model
    for key, value in run.model_section.items():
        if key != "preset":
            assert getattr(model, key) == value, key
    # the saved form round-trips (the trainer writes it to RUN/config.yaml)
    assert from_dict(RunConfig, to_dict(run)) == run
    assert to_dict(run)["model"] == run.model_section


def test_compare_config_file_matches_the_builtin_default() -> None:
    assert load_run_config(CONFIG_DIR / "compare_pystdlib.yaml") == compare_config("pystdlib")
    assert set(COMPARE_TASKS) == {"pystdlib", "listops"}


def test_overrides_reach_the_model_and_the_task(tmp_path: Path) -> None:
    run = load_run_config(CONFIG_DIR / "lm_tiny_shakespeare.yaml",
                          ["model.decoder_kind=D", "model.n_layers=3", "task.max_len=64", "train.lr=3e-4"])
    model = resolve_model_config(run, vocab_size=70)
    assert (model.decoder_kind, model.n_layers, model.max_len) == ("D", 3, 64)
    assert run.train.lr == pytest.approx(3e-4)
    # the preset fills what the file leaves out
    assert model.ffn == "conv_relu"


def test_seq2seq_model_length_covers_source_and_target() -> None:
    run = from_dict(RunConfig, {"task": {"type": "seq2seq", "generator": "algorithmic:copy", "max_len": 10,
                                         "max_target_len": 30}})
    assert resolve_model_config(run, 15).max_len == 30
    with pytest.raises(ConfigError, match=r"model\.max_len.*>= 30"):
        from_dict(RunConfig, {**to_dict(run), "model": {"max_len": 20}})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"task": {"generator": "pystdlib", "tokenzier": "char"}},
         r"unknown key 'task\.tokenzier'.*did you mean 'tokenizer'"),
        ({**BASE, "modle": {}}, r"unknown key 'modle'"),
        ({**BASE, "model": {"d_modle": 64}}, r"unknown key 'model\.d_modle'.*did you mean 'd_model'"),
        ({**BASE, "model": {"decoder_kind": "Q"}}, r"model: decoder_kind='Q' is not a known token mixer"),
        ({**BASE, "model": {"vocab_size": 100}}, r"model\.vocab_size: do not set it here.*tokenizer"),
        ({**BASE, "model": {"preset": "mt-small"}}, r"model\.preset.*arch='seq2seq'.*needs arch='lm'"),
        ({**BASE, "model": {"preset": "huge"}}, r"model\.preset: unknown preset 'huge'"),
        ({**BASE, "model": {"d_model": 100, "n_heads": 3}}, r"d_model \(100\) must be divisible by n_heads \(3\)"),
        ({**BASE, "train": {"steps": "many"}}, r"train\.steps: expected int, got 'many'"),
        ({**BASE, "train": {"lr": -1}}, r"train\.lr"),
        ({**BASE, "eval": {"metrics": ["bleu"]}}, r"eval\.metrics: 'bleu' is not a metric of type 'lm'"),
        ({**BASE, "eval": {"beam": 0}}, r"eval\.beam"),
        ({"task": {}}, r"task\.train: give exactly one data source"),
        ({"task": {"generator": "pystdlib", "train": "x.txt"}}, r"given: train, generator"),
        ({"task": {"generator": "listops"}}, r"task\.generator: 'listops' makes a 'classification' task"),
        ({"task": {"type": "seq2seq", "generator": "algorithmic:flip"}}, r"task\.generator: 'algorithmic:flip'"),
        ({"task": {"type": "seq2seq", "train": "data/train"}}, r"source_lang"),
        ({"task": {"type": "classification", "generator": "listops", "tokenizer": "bpe"}},
         r"task\.tokenizer: the generator 'listops' has its own"),
        ({"task": {"generator": "pystdlib", "tokenizer": "wordpiece"}}, r"task\.tokenizer: expected one of"),
        ({"task": {"generator": "pystdlib", "overflow": "wrap"}}, r"task\.overflow"),
        ({"task": {"generator": "pystdlib", "valid_fraction": 1.5}}, r"task\.valid_fraction"),
    ],
)
def test_bad_configs_name_the_key(data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_dict(RunConfig, data)


def test_bad_overrides_and_files(tmp_path: Path) -> None:
    path = CONFIG_DIR / "listops.yaml"
    with pytest.raises(ConfigError, match=r"expected the form key=value"):
        load_run_config(path, ["model.n_layers"])
    with pytest.raises(ConfigError, match=r"unknown key 'train\.stpes'.*did you mean 'steps'"):
        load_run_config(path, ["train.stpes=3"])
    with pytest.raises(FileNotFoundError, match="config file not found"):
        load_run_config(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("task: [unclosed\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_run_config(broken)
    listing = tmp_path / "list.yaml"
    listing.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_run_config(listing)


def test_default_metrics_follow_the_task() -> None:
    lm = from_dict(RunConfig, {"task": {"generator": "pystdlib"}})
    assert lm.metrics == ["loss", "perplexity", "bits_per_character"]
    byte = from_dict(RunConfig, {"task": {"train": "x.bin", "valid_fraction": 0.1, "tokenizer": "byte"}})
    assert byte.metrics[-1] == "bits_per_byte"
    algo = from_dict(RunConfig, {"task": {"type": "seq2seq", "generator": "algorithmic:sort"}})
    assert algo.metrics == ["loss", "exact_match", "chrf"]
    mt = from_dict(RunConfig, {"task": {"type": "seq2seq", "train": "t", "source_lang": "de", "target_lang": "en"}})
    assert mt.metrics == ["loss", "bleu", "chrf"] and mt.task.tokenizer_kind == "bpe"
    assert (mt.eval.beam, mt.eval.length_penalty) == (4, 0.6)  # the paper's decoding
