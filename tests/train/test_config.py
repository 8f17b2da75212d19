"""Config helpers: YAML into nested dataclasses, dotted overrides, and errors that name the problem."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pytest

from synthformer.common.config import ConfigError, apply_overrides, from_dict, load_config, to_dict
from synthformer.train import TrainConfig


@dataclass
class ModelCfg:
    n_layers: int = 6
    attention: Literal["V", "R", "D"] = "V"
    dropout: float = 0.1
    options: dict[str, int] = field(default_factory=dict)
    max_len: int | None = None


@dataclass
class Experiment:
    name: str
    model: ModelCfg = field(default_factory=ModelCfg)
    train: TrainConfig = field(default_factory=TrainConfig)


def test_overrides_are_parsed_as_yaml_scalars():
    cfg = Experiment(name="x")
    new = apply_overrides(cfg, [
        "train.lr=3e-4", "model.n_layers=2", "train.bf16=true", "train.betas=[0.9, 0.99]",
        "model.max_len=null", "model.attention=R", "name=run 1", "model.options.k=8", "model.dropout=0",
    ])
    assert new.train.lr == 3e-4 and isinstance(new.train.lr, float)  # YAML 1.1 reads "3e-4" as a string
    assert new.model.n_layers == 2 and new.train.bf16 is True and new.train.betas == (0.9, 0.99)
    assert new.model.max_len is None and new.model.attention == "R" and new.name == "run 1"
    assert new.model.options == {"k": 8} and new.model.dropout == 0.0 and isinstance(new.model.dropout, float)
    assert cfg.train.lr == 1e-3 and cfg.model.n_layers == 6  # the input is not modified


def test_unknown_key_names_it_and_lists_valid_keys():
    with pytest.raises(ConfigError) as err:
        apply_overrides(Experiment(name="x"), ["train.lrr=1"])
    msg = str(err.value)
    assert "'train.lrr'" in msg and "did you mean 'lr'" in msg
    assert "valid keys at 'train':" in msg and "warmup_steps" in msg and "batch_size" in msg
    with pytest.raises(ConfigError, match="unknown key 'modle'.*top level: model, name, train"):
        apply_overrides(Experiment(name="x"), ["modle.n_layers=1"])


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("model.n_layers=two", r"model\.n_layers: expected int, got 'two' \(str\)"),
        ("model.n_layers=2.5", r"model\.n_layers: expected int, got 2\.5 \(float\)"),
        ("train.steps=true", r"train\.steps: expected int, got True \(bool\)"),
        ("train.lr=fast", r"train\.lr: expected float, got 'fast' \(str\)"),
        ("train.bf16=2", r"train\.bf16: expected bool, got 2 \(int\)"),
        ("train.optimizer=sgd", r"train\.optimizer: expected one of \['adamw', 'adafactor'\], got 'sgd'"),
        ("train.betas=[0.9]", r"train\.betas: expected 2 values"),
        ("train.steps=0", r"train\.steps: expected an integer >= 1, got 0"),
        ("model.n_layers.x=1", r"model\.n_layers.*not a group of keys"),
        ("train.lr", r"expected the form key=value"),
        ("train..lr=1", r"empty part"),
    ],
)
def test_bad_overrides_name_key_value_and_type(override, expected):
    with pytest.raises(ConfigError, match=expected):
        apply_overrides(Experiment(name="x"), [override])


def test_load_yaml_with_overrides(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("name: lm\nmodel:\n  n_layers: 4\ntrain:\n  lr: 1.0e-3\n  schedule: cosine\n")
    cfg = load_config(path, Experiment, ["train.lr=5e-4", "train.steps=100"])
    assert (cfg.name, cfg.model.n_layers, cfg.train.lr, cfg.train.schedule, cfg.train.steps) == (
        "lm", 4, 5e-4, "cosine", 100)
    assert cfg.train.batch_size == TrainConfig().batch_size  # defaults fill the rest


def test_yaml_errors_and_required_keys(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: lm\ntrain:\n  warmup: 10\n")
    with pytest.raises(ConfigError, match="unknown key 'train.warmup'.*did you mean 'warmup_steps'"):
        load_config(bad, Experiment)
    missing = tmp_path / "missing.yaml"
    missing.write_text("model:\n  n_layers: 2\n")
    with pytest.raises(ConfigError, match="missing required key.*name"):
        load_config(missing, Experiment)
    assert load_config(missing, Experiment, ["name=given"]).name == "given"  # overrides can supply it
    listing = tmp_path / "list.yaml"
    listing.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_config(listing, Experiment)


def test_dict_roundtrip():
    cfg = apply_overrides(Experiment(name="x"), ["model.options.k=3", "train.betas=[0.8, 0.9]"])
    data = to_dict(cfg)
    assert data["train"]["betas"] == [0.8, 0.9]  # YAML-friendly
    assert from_dict(Experiment, data) == cfg
    with pytest.raises(TypeError, match="overrides must be a list"):
        apply_overrides(cfg, "train.lr=1")


def test_distributed_settings():
    cfg = apply_overrides(Experiment(name="x"), ["train.distributed=fsdp", "train.fsdp_units=[Block, Cross]"])
    assert cfg.train.distributed == "fsdp" and cfg.train.fsdp_units == ["Block", "Cross"]
    assert TrainConfig().distributed == "ddp"  # the default: a whole replica per process
    with pytest.raises(ConfigError, match=r"^train\.distributed: expected one of \['ddp', 'fsdp'\], got 'zero3'$"):
        apply_overrides(Experiment(name="x"), ["train.distributed=zero3"])
    with pytest.raises(ConfigError, match=r"^fsdp_forward_methods: expected a list of names, got \[''\]$"):
        TrainConfig(fsdp_forward_methods=[""])
    with pytest.raises(ConfigError, match=r"^train\.optimizer: distributed=fsdp .*, got 'adafactor'$"):
        apply_overrides(Experiment(name="x"), ["train.distributed=fsdp", "train.optimizer=adafactor"])
