"""Training from a prepared corpus (``task.prepared``): the datasets over memory-mapped shards, the checks made when
the corpus is opened, and a run that trains and evaluates from it without reading its sources."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from synthformer.common.config import ConfigError, from_dict
from synthformer.data import LMBlockDataset, SentinelTokenizer, Seq2SeqDataset, build_tokenizer
from synthformer.data.prepared import write_prepared
from synthformer.data.span_corruption import ArrayStream
from synthformer.data.streamed import StreamBlockDataset
from synthformer.tasks import RunConfig, prepare_data, train_run

from .helpers import LM_TEXT, TINY_MODEL, TINY_TRAIN, t2t_config

DOCS = [p + "\n" for p in LM_TEXT.split("\n\n") if p]  # 120 short documents


def make_corpus(tmp: Path, task_type: str = "lm", sources: list[Path] | None = None, n_train: int = 100) -> Path:
    """A prepared corpus of the helpers' LM text: train = the first ``n_train`` documents, valid = the last 20."""
    tok = build_tokenizer("char", [LM_TEXT])
    if task_type == "span_corruption":
        tok = SentinelTokenizer(tok, 10)
    folder = tmp / f"prepared-{task_type}"
    extra: dict[str, Any] = {}
    if sources:
        extra["sources"] = {"train": [{"path": str(p), "size": p.stat().st_size, "mtime": p.stat().st_mtime}
                                      for p in sources]}
    write_prepared(folder, tok, {"train": [[d] for d in DOCS[:n_train]], "valid": [[d] for d in DOCS[100:]]},
                   task_type=task_type, shard_tokens=500, extra=extra)  # several shards per split
    return folder


def prepared_config(folder: Path, task_type: str = "lm", **train: Any) -> dict[str, Any]:
    task: dict[str, Any] = {"type": task_type, "prepared": str(folder), "max_len": 16}
    if task_type == "span_corruption":
        task.update(max_len=24, options={"num_sentinels": 10})
    return {"task": task, "model": {**TINY_MODEL, "encoder_kind": "R+V"} if task_type != "lm" else
            {**TINY_MODEL, "decoder_kind": "R+V"}, "train": {**TINY_TRAIN, **train}}


def test_stream_blocks_are_the_in_memory_blocks() -> None:
    ids = np.arange(3, 103)
    for stride in (None, 5):
        memory = LMBlockDataset(torch.tensor(ids), 16, stride=stride)
        streamed = StreamBlockDataset(ArrayStream(ids.astype(np.uint16)), 16, stride=stride)
        assert len(streamed) == len(memory) and streamed.lazy_order
        for i in range(len(memory)):
            assert all(torch.equal(streamed[i][k], memory[i][k]) for k in ("input_ids", "labels"))


@pytest.mark.parametrize("task_type", ["lm", "span_corruption"])
def test_prepared_data_reads_the_shards_with_the_corpus_tokenizer(tmp_path: Path, task_type: str) -> None:
    folder = make_corpus(tmp_path, task_type)
    data = prepare_data(from_dict(RunConfig, prepared_config(folder, task_type)))
    train = data.datasets["train"]
    assert train.lazy_order and set(data.datasets) == {"train", "valid"}
    assert data.model_config.vocab_size == data.tokenizer.vocab_size
    ids = [t for d in DOCS[:100] for t in data.tokenizer.encode(d, add_eos=True)]  # documents end with <eos>
    if task_type == "lm":
        assert train[3]["input_ids"].tolist() == ids[48:64] and train[3]["labels"].tolist() == ids[49:65]
    else:
        assert len(train) == -(-len(ids) // train.tokens_length)
        item = train[0]
        assert item["src_ids"][-1] == data.tokenizer.eos_id and len(item["src_ids"]) == 24


def test_a_prepared_run_trains_and_saves_the_corpus_tokenizer(tmp_path: Path) -> None:
    folder = make_corpus(tmp_path)
    result = train_run(from_dict(RunConfig, prepared_config(folder)), tmp_path / "run")
    assert np.isfinite(result.metrics["eval_loss"]) and result.steps == 6
    saved = (tmp_path / "run" / "synthformer_tokenizer.json").read_bytes()
    assert saved == (folder / "tokenizer.json").read_bytes()


@pytest.mark.parametrize(("change", "message"), [
    ({"train": "x.txt"}, "a prepared corpus is the run's whole data source .* add task.train=null"),
    ({"train": "x.txt", "valid": "y.txt"}, "train and valid must be unset: add task.train=null task.valid=null"),
    ({"valid": "x.txt"}, "a prepared corpus holds its own splits"),
    ({"type": "span_corruption", "options": {"num_sentinels": 10}}, "prepared for task.type 'lm'"),
    ({"tokenizer": "bpe"}, "tokenized with a 'char' tokenizer"),
    ({"vocab_size": 7}, "task.vocab_size: 7, but the prepared corpus .* has a vocabulary of"),
])
def test_bad_prepared_configs_fail_in_one_line(tmp_path: Path, change: dict, message: str) -> None:
    cfg = prepared_config(make_corpus(tmp_path))
    cfg["task"].update(change)
    with pytest.raises(ConfigError, match=message):
        prepare_data(from_dict(RunConfig, cfg))


def test_a_tokenizer_the_run_must_keep_has_to_be_the_corpus_s(tmp_path: Path) -> None:
    run = from_dict(RunConfig, prepared_config(make_corpus(tmp_path)))
    other = build_tokenizer("char", [LM_TEXT + "xyz"])  # a resumed or pretrained run's, not the corpus's
    with pytest.raises(ConfigError, match="tokenized with another tokenizer"):
        prepare_data(run, other)


def test_a_source_changed_or_gone_since_prepare_is_a_note_and_the_shards_are_read(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    source = tmp_path / "source.txt"
    source.write_text(LM_TEXT, encoding="utf-8")
    folder = make_corpus(tmp_path, sources=[source])
    run = from_dict(RunConfig, prepared_config(folder))
    want = prepare_data(run).datasets["train"]
    for change, found in ((lambda: os.utime(source, (1, 1)), "source.txt: modified since prepare"),  # copied
                          (source.unlink, "source.txt: gone since prepare")):  # deleted to free the disk
        change()
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="synthformer.tasks.prepared.reading"):
            got = prepare_data(run).datasets["train"]
        notes = [r.getMessage() for r in caplog.records if r.getMessage().startswith("note: ")]
        assert len(notes) == 1 and found in notes[0] and "does not need its sources" in notes[0]
        assert all(r.levelno < logging.WARNING for r in caplog.records if r.getMessage() in notes)
        assert len(got) == len(want) and all(torch.equal(got[i]["input_ids"], want[i]["input_ids"]) for i in (0, -1))


def make_t2t_corpus(tmp: Path, **options: Any) -> tuple[Path, dict[str, Any]]:
    """The helpers' RTE + SST-2 files prepared as ``synthformer prepare`` stores text-to-text data (a split per task
    and dev set, the pairs layout, the in-memory path's texts and tokenizer); and the config of a run on it."""
    cfg = t2t_config(tmp, options={"tasks": ["rte", "sst2"], **options})
    memory = prepare_data(from_dict(RunConfig, cfg))
    train, sizes, valid = memory.raw.splits["train"], memory.raw.info["train_sizes"], memory.raw.splits["valid"]
    splits, start = {}, 0
    for name, size in sizes.items():
        splits[f"train.{name}"] = [(e.source, e.target) for e in train[start:start + size]]
        splits[f"valid.{name}"] = [(e.source, e.target) for e in valid if e.task == name]
        start += size
    folder = tmp / "prepared-t2t"
    write_prepared(folder, memory.tokenizer, splits, layout="pairs", task_type="text_to_text")
    cfg["task"]["prepared"] = str(folder)
    del cfg["task"]["train"]
    return folder, cfg


def test_prepared_text_to_text_gives_the_in_memory_examples_and_labels(tmp_path: Path) -> None:
    _, cfg = make_t2t_corpus(tmp_path, mixing_cap=64)  # no task capped: both paths fill the slots alike
    prepared = prepare_data(from_dict(RunConfig, cfg))
    memory = prepare_data(from_dict(RunConfig, t2t_config(tmp_path, options={"tasks": ["rte", "sst2"],
                                                                             "mixing_cap": 64})))
    for split in ("train", "valid"):
        a, b = prepared.datasets[split], memory.datasets[split]
        assert len(a) == len(b) and a.length_report == b.length_report
        for i in range(len(b)):
            assert all(torch.equal(a[i][k], b[i][k]) for k in ("src_ids", "tgt_ids", "labels")), (split, i)
    assert prepared.datasets["train"].lazy_order
    valid = prepared.datasets["valid"]
    assert [(e.task, e.label) for e in valid.raw_examples] == [(e.task, e.label) for e in memory.raw.splits["valid"]]
    assert valid.groups == memory.raw.info["valid_groups"]


def test_a_prepared_seq2seq_run_frames_pairs_as_in_memory_and_scores_decoded_references(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    pairs = [(s, s[::-1]) for s in ("".join(map(str, rng.integers(0, 10, rng.integers(2, 9)))) for _ in range(80))]
    tok = build_tokenizer("char", [s for p in pairs for s in p])
    folder = tmp_path / "prepared-s2s"
    write_prepared(folder, tok, {"train": pairs[:64], "valid": pairs[64:]}, layout="pairs", task_type="seq2seq",
                   shard_tokens=200)
    cfg = {"task": {"type": "seq2seq", "prepared": str(folder), "max_len": 6, "overflow": "truncate"},
           "model": {**TINY_MODEL, "encoder_kind": "R+V"}, "train": {**TINY_TRAIN, "eval_every": 6},
           "eval": {"train_decode_examples": 4, "beam": 1}}
    data = prepare_data(from_dict(RunConfig, cfg))
    memory = Seq2SeqDataset(pairs[:64], tok, max_src_len=6, max_tgt_len=6, overflow="truncate")
    train = data.datasets["train"]
    assert len(train) == len(memory) == 64 and train.length_report == memory.length_report
    for i in range(64):
        assert all(torch.equal(train[i][k], memory[i][k]) for k in ("src_ids", "tgt_ids", "labels"))
    assert list(data.raw.splits["valid"]) == pairs[64:]  # the references, decoded from the shards
    result = train_run(from_dict(RunConfig, cfg), tmp_path / "run")
    assert "eval_bleu" in result.metrics and result.metrics["eval_decoded"] == 4
