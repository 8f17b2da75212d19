"""The ``sentencepiece`` kind in runs: span corruption trains and generates with T5's sentinels, ``synthformer
prepare`` stores it (stable sha256), a ``spiece.model`` is read through ``task.tokenizer_options.model_file``, and a
tokenizer that does not match the run's model is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("sentencepiece", reason="the sentencepiece kind needs the 'hf' extra")

from synthformer.data import SentencePieceTokenizer, SentinelTokenizer, load_tokenizer  # noqa: E402
from synthformer.data.prepared import PreparedCorpus  # noqa: E402
from synthformer.tasks import RunConfig, RunError, TaskConfig, generate_texts, load_run, train_run  # noqa: E402
from synthformer.tasks.preparing import prepare_corpus  # noqa: E402
from synthformer.train import ConfigError, RunDir, from_dict  # noqa: E402

from ..tasks.helpers import span_config  # noqa: E402

SPM = {"task.tokenizer": "sentencepiece", "task.vocab_size": 160}


def test_span_corruption_run_uses_t5s_sentinels(tmp_path: Path) -> None:
    cfg = span_config(tmp_path, **SPM, **{"train.steps": 2, "train.eval_every": 2, "train.save_every": 2})
    train_run(from_dict(RunConfig, cfg), tmp_path / "run")
    tok = load_tokenizer(tmp_path / "run")
    assert isinstance(tok, SentinelTokenizer) and isinstance(tok.base, SentencePieceTokenizer)
    # T5's sentinels, not wrapped again by the task (the small corpus gives fewer pieces than the cap)
    assert tok.num_sentinels == 100 and tok.sentinel_id(0) == tok.vocab_size - 1 and tok.vocab_size <= 160
    model = json.loads((tmp_path / "run" / "model_config.json").read_text())
    assert (model["vocab_size"], model["pad_id"], model["bos_id"], model["eos_id"]) == (tok.vocab_size, 0, 0, 1)
    out = generate_texts(load_run(tmp_path / "run"), ["def add(a, <extra_id_0>):"], max_new_tokens=4)
    assert len(out) == 1 and isinstance(out[0].output, str)


def test_too_few_own_sentinels_and_a_missing_model_file_are_named(tmp_path: Path) -> None:
    few = span_config(tmp_path, **SPM, **{"task.tokenizer_options": {"num_sentinels": 5}})
    with pytest.raises(ConfigError, match="task.options.num_sentinels: 10, but the tokenizer has 5 sentinels"):
        train_run(from_dict(RunConfig, few), tmp_path / "few")
    gone = span_config(tmp_path, **{"task.tokenizer": "sentencepiece",
                                    "task.tokenizer_options": {"model_file": str(tmp_path / "spiece.model")}})
    with pytest.raises(ConfigError, match="task.tokenizer: .*no SentencePiece model file at"):
        train_run(from_dict(RunConfig, gone), tmp_path / "gone")


def test_a_tokenizer_of_another_size_is_not_the_runs(tmp_path: Path, spm_tokenizer) -> None:
    cfg = span_config(tmp_path, **SPM, **{"train.steps": 2, "train.eval_every": 2, "train.save_every": 2})
    train_run(from_dict(RunConfig, cfg), tmp_path / "run")
    spm_tokenizer.save(RunDir(tmp_path / "run").tokenizer_path)  # 200 ids, the model fewer
    with pytest.raises(RunError, match="has 200 ids, but the model .* has a vocabulary of 1"):
        load_run(tmp_path / "run")


def _task(tmp_path: Path, **options) -> TaskConfig:
    cfg = span_config(tmp_path, **SPM)["task"]
    cfg.pop("options")
    if "model_file" in options:
        cfg.pop("vocab_size")  # the file's
    return from_dict(TaskConfig, {**cfg, "tokenizer_options": options})


def test_prepare_stores_the_model_and_reads_a_spiece_model(tmp_path: Path) -> None:
    one = prepare_corpus(_task(tmp_path), tmp_path / "one", shard_tokens=500)
    two = prepare_corpus(_task(tmp_path), tmp_path / "two", shard_tokens=500)
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
    from synthformer.bench.plan_data import DataPlan, plan_vocabulary

    run = from_dict(RunConfig, span_config(tmp_path, **SPM))
    assert plan_vocabulary(run, DataPlan("files"))[0] == 160  # not 160 + the task's 10: the kind brings 100
    model = spm_tokenizer.base.save_model(tmp_path / "spiece.model")
    cfg = span_config(tmp_path, **{"task.tokenizer": "sentencepiece", "task.tokenizer_options": {
        "model_file": str(model), "num_sentinels": 0}})
    size, where, _ = plan_vocabulary(from_dict(RunConfig, cfg), DataPlan("files"))
    assert size == 100 + 10 and "100 pieces" in where  # a bare model gets the task's 10 sentinels
