"""The ``span_corruption`` task type end to end, and ``init_from`` (weights and tokenizer of a pretrained run)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from synthformer.common.config import ConfigError, from_dict
from synthformer.data import SentinelTokenizer, load_tokenizer
from synthformer.tasks import RunConfig, evaluate_run, generate_texts, load_run, prepare_data, train_run
from synthformer.tasks.run.init_from import load_pretrained_weights

from .helpers import TINY_MODEL, TINY_TRAIN, lm_config, span_config

#: one pytest-xdist worker runs the module: the pretrained run of the init_from tests (a module fixture) is trained
#: once instead of once in each worker
pytestmark = pytest.mark.xdist_group("span-corruption-pretrained")


def test_span_corruption_run_end_to_end(tmp_path: Path) -> None:
    result = train_run(from_dict(RunConfig, span_config(tmp_path, **{"train.eval_steps": 0})), tmp_path / "pre")
    m = result.metrics
    assert m["eval_log_perplexity"] == m["eval_loss"] and m["eval_perplexity"] > 1
    assert 0.1 < m["eval_noise_density"] < 0.2 and 2.0 < m["eval_mean_span_length"] < 4.5
    tok = load_tokenizer(tmp_path / "pre")
    assert isinstance(tok, SentinelTokenizer) and tok.num_sentinels == 10
    saved = json.loads((tmp_path / "pre" / "model_config.json").read_text())
    assert saved["vocab_size"] == tok.vocab_size and saved["arch"] == "seq2seq"
    assert saved["max_len"] == 24  # the encoder length; the decoder needs fewer (targets: t5_lengths(24)[1] + 1)

    report = evaluate_run(tmp_path / "pre")
    assert report.metrics["loss"] == pytest.approx(m["eval_loss"], rel=1e-5)
    extras = json.loads(report.path.read_text())
    # t5_lengths(24) = (26, 6), + the closing sentinel
    assert extras["nominal_noise_density"] == 0.15 and extras["targets_length"] == 7

    out = generate_texts(load_run(tmp_path / "pre"), ["def add(a, <extra_id_0>):"], max_new_tokens=6)
    assert len(out) == 1 and isinstance(out[0].output, str)


@pytest.mark.parametrize(("change", "message"), [
    ({"task.max_target_len": 10}, "derives the target length"),
    ({"task.options": {"num_sentinels": 1}}, "needs 2 sentinels"),
    ({"task.options": {"noise_density": 1.5}}, "noise_density"),
    ({"task.options": {"mean_noise_span_length": 0.5}}, "mean_noise_span_length"),
    ({"task.options": {"span": 3}}, "unknown"),
    ({"task.max_len": 2}, "at least 3 tokens"),
])
def test_span_corruption_config_errors(tmp_path: Path, change: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_dict(RunConfig, span_config(tmp_path, **change))


def test_short_inputs_fit_their_length(tmp_path: Path) -> None:
    # below about 10 tokens T5's rounding would give 0 spans; the clamped counts keep inputs within max_len
    result = train_run(from_dict(RunConfig, span_config(tmp_path, **{"task.max_len": 8})), tmp_path / "run")
    assert result.steps == 6
    data = prepare_data(from_dict(RunConfig, span_config(tmp_path, **{"task.max_len": 8})))
    assert max(len(data.datasets["train"][i]["src_ids"]) for i in range(len(data.datasets["train"]))) <= 8


def test_the_builtin_corpus_is_the_default_source(tmp_path: Path) -> None:
    cfg = {"task": {"type": "span_corruption", "max_len": 24, "options": {"num_sentinels": 10},
                    "generator_options": {"max_train_chars": 3000, "max_eval_chars": 600}, "tokenizer": "char"},
           "model": dict(TINY_MODEL), "train": {**TINY_TRAIN, "steps": 2, "eval_every": 2, "save_every": 2}}
    run = from_dict(RunConfig, cfg)
    assert run.task.generator == "pystdlib"
    result = train_run(run, tmp_path / "run")
    assert result.steps == 2 and result.metrics["eval_noise_density"] > 0
    with pytest.raises(ConfigError, match="exactly one data source"):
        from_dict(RunConfig, {**cfg, "task": {**cfg["task"], "type": "lm"}})


# ---------------------------------------------------------------------------------------------------------------
# init_from


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("pretrained")
    train_run(from_dict(RunConfig, span_config(tmp)), tmp / "pre")
    return tmp / "pre"


def _finetune(tmp: Path, pretrained: Path, **changes) -> dict:
    cfg = span_config(tmp, **changes)
    cfg["init_from"] = str(pretrained)
    cfg["task"].pop("tokenizer")  # the pretrained run's tokenizer is used
    cfg["model"]["dropout"] = 0.1  # a free field: finetuning may change it
    return cfg


def test_init_from_starts_from_the_pretrained_weights(tmp_path: Path, pretrained: Path) -> None:
    seen = {}

    def capture(trainer) -> None:
        seen.update({k: v.detach().clone() for k, v in trainer.model.state_dict().items()})

    run = from_dict(RunConfig, _finetune(tmp_path, pretrained))
    train_run(run, tmp_path / "ft", on_trainer=capture)
    ckpt = load_run(pretrained).checkpoint
    weights = load_file(str(ckpt / "model.safetensors"))
    assert weights and all(torch.equal(seen[name], tensor) for name, tensor in weights.items())
    assert load_tokenizer(tmp_path / "ft") == load_tokenizer(pretrained)
    record = json.loads((tmp_path / "ft" / "init_from.json").read_text())
    assert record["newly_initialised"] == [] and record["init_from"] == str(pretrained.resolve())
    assert record["step"] == 6 and record["loaded_tensors"] == len(weights)


@pytest.mark.parametrize(("changes", "message"), [
    ({"model.d_model": 32}, r"model.d_model: pretrained 16, this run 32"),
    ({"model.encoder_kind": "V"}, r"model.encoder_kind: pretrained 'R\+V', this run 'V'"),
    ({"task.max_len": 32}, r"model.max_len: pretrained 24, this run 32"),
    ({"task.vocab_size": 99}, r"task.vocab_size: 99, but init_from .* has a vocabulary of"),
])
def test_init_from_mismatches_are_named(tmp_path: Path, pretrained: Path, changes: dict, message: str) -> None:
    run = from_dict(RunConfig, _finetune(tmp_path, pretrained, **changes))
    with pytest.raises(ConfigError, match=message):
        train_run(run, tmp_path / "ft")
    assert not (tmp_path / "ft" / "checkpoints").exists()


def test_init_from_other_arch_tokenizer_and_missing_dir(tmp_path: Path, pretrained: Path) -> None:
    lm = lm_config(tmp_path)
    lm["init_from"] = str(pretrained)
    lm["task"].pop("tokenizer")
    with pytest.raises(ConfigError, match=r"arch='seq2seq' model, but task.type 'lm' trains arch='lm'"):
        train_run(from_dict(RunConfig, lm), tmp_path / "lm")
    cfg = _finetune(tmp_path, pretrained)
    cfg["task"]["tokenizer"] = "bpe"
    with pytest.raises(ConfigError, match="has a 'char' tokenizer"):
        train_run(from_dict(RunConfig, cfg), tmp_path / "ft")
    cfg = _finetune(tmp_path, tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="run directory not found"):
        train_run(from_dict(RunConfig, cfg), tmp_path / "ft")
    with pytest.raises(ConfigError, match="init_from: expected the path"):
        from_dict(RunConfig, {**_finetune(tmp_path, pretrained), "init_from": ""})


def test_init_from_resume_before_the_first_checkpoint_loads_the_pretrained_weights(tmp_path: Path,
                                                                                  pretrained: Path) -> None:
    def stop(trainer) -> None:
        raise KeyboardInterrupt

    run = from_dict(RunConfig, _finetune(tmp_path, pretrained))
    with pytest.raises(KeyboardInterrupt):
        train_run(run, tmp_path / "ft", on_trainer=stop)
    seen = {}
    train_run(run, tmp_path / "ft", resume=True,
              on_trainer=lambda t: seen.update({k: v.detach().clone() for k, v in t.model.state_dict().items()}))
    weights = load_file(str(load_run(pretrained).checkpoint / "model.safetensors"))
    assert all(torch.equal(seen[name], tensor) for name, tensor in weights.items())
    assert json.loads((tmp_path / "ft" / "init_from.json").read_text())["newly_initialised"] == []


def test_init_from_its_own_run_dir_is_refused_and_nothing_is_deleted(tmp_path: Path, pretrained: Path) -> None:
    import shutil

    own = tmp_path / "own"
    shutil.copytree(pretrained, own)
    run = from_dict(RunConfig, _finetune(tmp_path, own))
    with pytest.raises(ConfigError, match="this run's own directory"):
        train_run(run, own, overwrite=True)
    assert load_run(own).step == 6


def _edited_copy(pretrained: Path, tmp: Path, edit) -> Path:
    """A copy of the pretrained run whose latest checkpoint's weights went through ``edit``."""
    import shutil

    copy_dir = tmp / "edited"
    shutil.copytree(pretrained, copy_dir)
    file = load_run(copy_dir).checkpoint / "model.safetensors"
    weights = load_file(str(file))
    save_file(edit(dict(weights)), str(file))
    return copy_dir


def test_init_from_lists_newly_initialised_and_names_shape_mismatches(tmp_path: Path, pretrained: Path) -> None:
    loaded = load_run(pretrained)
    name = next(n for n in load_file(str(loaded.checkpoint / "model.safetensors")) if n.endswith("alpha_logits"))
    without = _edited_copy(pretrained, tmp_path / "a", lambda w: {k: v for k, v in w.items() if k != name})
    run = from_dict(RunConfig, _finetune(tmp_path, without))
    model = copy.deepcopy(loaded.model)
    report = load_pretrained_weights(run, model)
    assert report.newly_initialised == [name]

    def widen(w):
        w[name] = torch.zeros(*w[name].shape[:-1], w[name].shape[-1] + 1)
        return w

    wider = _edited_copy(pretrained, tmp_path / "b", widen)
    run = from_dict(RunConfig, _finetune(tmp_path, wider))
    shape = list(loaded.model.state_dict()[name].shape)
    with pytest.raises(ConfigError, match=rf"{name}: checkpoint \[.*\], model \[{', '.join(map(str, shape))}\]"):
        load_pretrained_weights(run, copy.deepcopy(loaded.model))
