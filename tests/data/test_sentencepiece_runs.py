"""The ``sentencepiece`` kind in runs: span corruption trains and generates with T5's sentinels, ``synthformer
prepare`` stores it (stable sha256), a ``spiece.model`` is read through ``task.tokenizer_options.model_file``, and a
tokenizer that does not match the run's model is refused in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("sentencepiece", reason="the sentencepiece kind needs the 'hf' extra")

from synthformer.common.config import ConfigError, from_dict  # noqa: E402
from synthformer.data import SentencePieceTokenizer, SentinelTokenizer, load_tokenizer  # noqa: E402
from synthformer.data.prepared import PreparedCorpus  # noqa: E402
from synthformer.tasks import RunConfig, TaskConfig, generate_texts, load_run, train_run
from synthformer.tasks.prepared import prepare_corpus  # noqa: E402
from synthformer.train import RunDir, RunError

from ..tasks.helpers import span_config  # noqa: E402

SPM = {"task.tokenizer": "sentencepiece", "task.vocab_size": 160}


@pytest.fixture(scope="module")
def spm_run(tmp_path_factory) -> Path:
    """A 2-step span-corruption run with the sentencepiece kind."""
    tmp = tmp_path_factory.mktemp("spm_run")
    cfg = span_config(tmp, **SPM, **{"train.steps": 2, "train.eval_every": 2, "train.save_every": 2})
    train_run(from_dict(RunConfig, cfg), tmp / "run")
    return tmp / "run"


def test_span_corruption_run_uses_t5s_sentinels(spm_run: Path) -> None:
    tok = load_tokenizer(spm_run)
    assert isinstance(tok, SentinelTokenizer) and isinstance(tok.base, SentencePieceTokenizer)
    # T5's sentinels, not wrapped again by the task (the small corpus gives fewer pieces than the cap)
    assert tok.num_sentinels == 100 and tok.sentinel_id(0) == tok.vocab_size - 1 and tok.vocab_size <= 160
    model = json.loads((spm_run / "model_config.json").read_text())
    assert (model["vocab_size"], model["pad_id"], model["bos_id"], model["eos_id"]) == (tok.vocab_size, 0, 0, 1)
    out = generate_texts(load_run(spm_run), ["def add(a, <extra_id_0>):"], max_new_tokens=4)
    assert len(out) == 1 and isinstance(out[0].output, str)


def test_the_run_exports_with_t5s_tokenizer(spm_run: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="export needs the 'hf' extra")
    from transformers import AutoTokenizer

    from synthformer.hf.export import export_run

    export_run(spm_run, tmp_path / "hf")
    hf = AutoTokenizer.from_pretrained(tmp_path / "hf")
    text = "def add(a, <extra_id_0>): return <extra_id_1>"
    assert hf(text).input_ids == load_tokenizer(spm_run).encode_with_sentinels(text, add_eos=True)
    generation = json.loads((tmp_path / "hf" / "generation_config.json").read_text())
    assert generation["decoder_start_token_id"] == generation["pad_token_id"] == 0  # T5 starts from <pad>


def test_too_few_own_sentinels_and_a_missing_model_file_are_named(tmp_path: Path) -> None:
    few = span_config(tmp_path, **SPM, **{"task.tokenizer_options": {"num_sentinels": 5}})
    with pytest.raises(ConfigError, match="task.options.num_sentinels: 10, but the tokenizer has 5 sentinels"):
        train_run(from_dict(RunConfig, few), tmp_path / "few")
    gone = span_config(tmp_path, **{"task.tokenizer": "sentencepiece",
                                    "task.tokenizer_options": {"model_file": str(tmp_path / "spiece.model")}})
    with pytest.raises(ConfigError, match="task.tokenizer: .*no SentencePiece model file at"):
        train_run(from_dict(RunConfig, gone), tmp_path / "gone")


def test_a_tokenizer_of_another_size_is_not_the_runs(spm_run: Path, tmp_path: Path, spm_tokenizer) -> None:
    run = shutil.copytree(spm_run, tmp_path / "run")
    spm_tokenizer.save(RunDir(run).tokenizer_path)  # 200 ids, the model fewer
    with pytest.raises(RunError, match="has 200 ids, but the model .* has a vocabulary of 1"):
        load_run(run)


def _task(tmp_path: Path, **options) -> TaskConfig:
    cfg = span_config(tmp_path, **SPM)["task"]
    cfg.pop("options")
    if "model_file" in options:
        cfg.pop("vocab_size")  # the file's
    return from_dict(TaskConfig, {**cfg, "tokenizer_options": options})


def test_prepare_stores_the_model_and_reads_a_spiece_model(tmp_path: Path) -> None:
    # the small corpus gives fewer pieces than the 160 asked: accepted, as the run above accepts them
    one = prepare_corpus(_task(tmp_path), tmp_path / "one", shard_tokens=500, accept_smaller_vocab=True)
    two = prepare_corpus(_task(tmp_path), tmp_path / "two", shard_tokens=500, accept_smaller_vocab=True)
    info = one.manifest["tokenizer"]
    assert info["kind"] == "sentinels" and info["sha256"] == two.manifest["tokenizer"]["sha256"]
    tok = PreparedCorpus.open(tmp_path / "one").tokenizer()
    assert tok.sentinel_id(0) == tok.vocab_size - 1
    # the same model read from its spiece.model: the same tokens, and the file's content is the prepare's identity
    model = tok.base.save_model(tmp_path / "spiece.model")
    three = prepare_corpus(_task(tmp_path, model_file=str(model)), tmp_path / "three", shard_tokens=500)
    assert three.manifest["tokenizer"]["sha256"] == info["sha256"]
    assert three.manifest["prepare"]["tokenizer"]["train"]["model_file_sha256"]
    first = PreparedCorpus.open(tmp_path / "one").split("train").document(0).tolist()
    assert PreparedCorpus.open(tmp_path / "three").split("train").document(0).tolist() == first


def test_the_dry_run_plan_counts_the_kinds_own_sentinels(tmp_path: Path, spm_tokenizer) -> None:
    from synthformer.bench.plan_data import plan_vocabulary

    run = from_dict(RunConfig, span_config(tmp_path, **SPM))
    assert plan_vocabulary(run).size == 160  # not 160 + the task's 10: the kind brings 100
    model = spm_tokenizer.base.save_model(tmp_path / "spiece.model")
    cfg = span_config(tmp_path, **{"task.tokenizer": "sentencepiece", "task.tokenizer_options": {
        "model_file": str(model), "num_sentinels": 0}})
    vocab = plan_vocabulary(from_dict(RunConfig, cfg))
    assert vocab.size == 100 + 10 and "100 pieces" in vocab.source  # a bare model gets the task's 10 sentinels


def test_classification_reads_mean_pooled_text_and_refuses_cls_pooling(tmp_path: Path) -> None:
    from synthformer.tasks import prepare_data

    from ..tasks.helpers import classification_config

    cfg = classification_config(tmp_path)
    cfg["task"].update(tokenizer="sentencepiece", vocab_size=160, tokenizer_options={"num_sentinels": 0}, max_len=64)
    data = prepare_data(from_dict(RunConfig, {**cfg, "model": {**cfg["model"], "pooling": "mean"}}))
    item = data.datasets["train"][0]["input_ids"].tolist()
    assert item and 0 not in item and data.model_config.pad_id == data.model_config.bos_id == 0
    with pytest.raises(ConfigError, match="model.pooling: 'cls' puts <bos> first, but this tokenizer's <bos> is"):
        prepare_data(from_dict(RunConfig, {**cfg, "model": {**cfg["model"], "pooling": "cls"}}))
