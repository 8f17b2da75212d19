"""Datasets and collates: exactly the CONTRACTS.md batch keys, shapes, shifts and padding conventions."""

from __future__ import annotations

import logging

import pytest
import torch
import torch.nn.functional as F

from synthformer.data import (
    IGNORE_INDEX,
    BucketBatchSampler,
    ClassificationDataset,
    ClassificationExample,
    LMBlockDataset,
    Seq2SeqDataset,
    build_dataloader,
    build_tokenizer,
    collate_lm,
    encode_corpus,
    pad_sequences,
)
from synthformer.tasks.suites.lra import generate_listops, listops_tokenizer
from synthformer.tasks.suites.probes import algorithmic_tokenizer, generate_algorithmic

LM_KEYS = {"input_ids", "labels"}
SEQ2SEQ_KEYS = {"src_ids", "src_padding_mask", "tgt_ids", "labels"}
CLS_KEYS = {"input_ids", "padding_mask", "labels"}


# -- language model ----------------------------------------------------------------------------
def test_lm_blocks_are_contiguous_and_shifted() -> None:
    tokens = torch.arange(103)
    ds = LMBlockDataset(tokens, block_size=10)
    assert len(ds) == 10  # (103 - 1) // 10
    for i in range(len(ds)):
        item = ds[i]
        assert item["input_ids"].shape == item["labels"].shape == (10,)
        assert torch.equal(item["input_ids"], torch.arange(i * 10, i * 10 + 10))
        assert torch.equal(item["labels"], item["input_ids"] + 1)  # next token
    # every token but the first is a label exactly once
    labels = torch.cat([ds[i]["labels"] for i in range(len(ds))])
    assert torch.equal(labels, torch.arange(1, 101))
    with pytest.raises(IndexError):
        ds[len(ds)]
    overlapping = LMBlockDataset(tokens, block_size=10, stride=5)
    assert len(overlapping) == 19 and torch.equal(overlapping[1]["input_ids"], torch.arange(5, 15))
    with pytest.raises(ValueError, match="fewer than block_size"):
        LMBlockDataset(torch.arange(5), block_size=5)


def test_lm_batch_contract(sample_text: str) -> None:
    tok = build_tokenizer("char", [sample_text])
    ds = LMBlockDataset(encode_corpus(tok, sample_text), block_size=16)
    batch = next(iter(build_dataloader(ds, batch_size=4, shuffle=True, seed=0)))
    assert set(batch) == LM_KEYS
    assert batch["input_ids"].shape == batch["labels"].shape == (4, 16)
    assert batch["input_ids"].dtype == batch["labels"].dtype == torch.long
    # ragged items: ids padded with pad, labels with -100
    ragged = collate_lm([{"input_ids": torch.tensor([5, 6, 7]), "labels": torch.tensor([6, 7, 8])},
                         {"input_ids": torch.tensor([9]), "labels": torch.tensor([10])}], pad_id=0)
    assert ragged["input_ids"].tolist() == [[5, 6, 7], [9, 0, 0]]
    assert ragged["labels"].tolist() == [[6, 7, 8], [10, IGNORE_INDEX, IGNORE_INDEX]]


def test_pad_sequences() -> None:
    out = pad_sequences([[1, 2], torch.tensor([3])], pad_value=-1)
    assert out.tolist() == [[1, 2], [3, -1]] and out.dtype == torch.long
    with pytest.raises(ValueError):
        pad_sequences([], 0)


# -- sequence to sequence ----------------------------------------------------------------------
def test_seq2seq_batch_contract() -> None:
    tok = algorithmic_tokenizer()
    pairs = [("123", "321"), ("45", "54"), ("6789", "9876")]
    ds = Seq2SeqDataset(pairs, tok)
    batch = ds.collate([ds[i] for i in range(3)])
    assert set(batch) == SEQ2SEQ_KEYS
    b, s = batch["src_ids"].shape
    t = batch["tgt_ids"].shape[1]
    assert (b, s, t) == (3, 5, 5)  # longest source 4 + eos; longest target 4 + bos
    assert batch["src_padding_mask"].dtype == torch.bool
    assert batch["labels"].shape == batch["tgt_ids"].shape
    for i, (src, tgt) in enumerate(pairs):
        n_src, n_tgt = len(src) + 1, len(tgt) + 1
        row_src = batch["src_ids"][i]
        assert row_src[:n_src].tolist() == tok.encode(src) + [tok.eos_id]
        assert (row_src[n_src:] == tok.pad_id).all()
        assert batch["src_padding_mask"][i].tolist() == [j >= n_src for j in range(s)]
        assert batch["tgt_ids"][i, :n_tgt].tolist() == [tok.bos_id] + tok.encode(tgt)
        assert (batch["tgt_ids"][i, n_tgt:] == tok.pad_id).all()
        assert batch["labels"][i, :n_tgt].tolist() == tok.encode(tgt) + [tok.eos_id]
        assert (batch["labels"][i, n_tgt:] == IGNORE_INDEX).all()
        # teacher forcing: the decoder input is the labels shifted right by one
        assert torch.equal(batch["tgt_ids"][i, 1:n_tgt], batch["labels"][i, : n_tgt - 1])
    # labels work with the loss as they are
    loss = F.cross_entropy(torch.randn(b, t, tok.vocab_size).transpose(1, 2), batch["labels"])
    assert torch.isfinite(loss)


def test_seq2seq_separate_tokenizers_and_bos() -> None:
    src_tok = build_tokenizer("byte", [])
    tgt_tok = build_tokenizer("char", ["abc"])
    ds = Seq2SeqDataset([("xy", "cab")], src_tok, tgt_tok, src_add_bos=True)
    item = ds[0]
    assert item["src_ids"].tolist() == [2, ord("x") + 4, ord("y") + 4, 3]
    assert tgt_tok.decode(item["tgt_ids"]) == "cab" == tgt_tok.decode(item["labels"])


def test_seq2seq_overflow_policies(caplog: pytest.LogCaptureFixture) -> None:
    tok = algorithmic_tokenizer()
    pairs = [("12", "21"), ("123456", "654321"), ("1", "1234567")]
    with caplog.at_level(logging.WARNING):
        trunc = Seq2SeqDataset(pairs, tok, max_src_len=4, max_tgt_len=4, overflow="truncate")
    assert len(trunc) == 3
    assert (trunc.length_report.truncated, trunc.length_report.skipped) == (2, 0)
    assert "2 truncated, 0 skipped" in caplog.text
    for item in trunc:
        assert item["src_ids"].numel() <= 4 and item["tgt_ids"].numel() <= 4
        assert item["src_ids"][-1] == tok.eos_id and item["labels"][-1] == tok.eos_id
        assert item["tgt_ids"][0] == tok.bos_id
    assert trunc[1]["src_ids"].tolist() == tok.encode("123") + [tok.eos_id]
    skip = Seq2SeqDataset(pairs, tok, max_src_len=4, max_tgt_len=4, overflow="skip")
    assert len(skip) == 1 and skip.indices == [0] and skip.length_report.skipped == 2
    with pytest.raises(ValueError, match="pair 1 source"):
        Seq2SeqDataset(pairs, tok, max_src_len=4, overflow="error")
    with pytest.raises(ValueError, match="overflow"):
        Seq2SeqDataset(pairs, tok, overflow="drop")


def test_bucketing_groups_similar_lengths() -> None:
    pairs = generate_algorithmic("reverse", 400, min_len=1, max_len=40, seed=0)
    ds = Seq2SeqDataset(pairs, algorithmic_tokenizer())
    sampler = BucketBatchSampler(ds.lengths, batch_size=16, shuffle=True, seed=0)
    batches = list(sampler)
    assert len(batches) == len(sampler) == 25
    assert sorted(i for b in batches for i in b) == list(range(400))  # each item once
    spread = sum(max(ds.lengths[i] for i in b) - min(ds.lengths[i] for i in b) for b in batches) / 25
    assert spread <= 2  # random batches of lengths 2..41 would spread ~35
    assert list(BucketBatchSampler(ds.lengths, 16, seed=0)) == batches  # reproducible
    sampler.set_epoch(1)
    assert list(sampler) != batches
    dropped = BucketBatchSampler(ds.lengths, 16, shuffle=True, bucket_size=40, drop_last=True)
    assert len(dropped) == len(list(dropped)) == 20  # 10 buckets of 40: 2 full batches each
    assert all(len(b) == 16 for b in dropped)
    loader = build_dataloader(ds, 16, shuffle=True, bucketing=True)
    batch = next(iter(loader))
    assert set(batch) == SEQ2SEQ_KEYS and batch["src_ids"].shape[0] == 16


# -- classification ----------------------------------------------------------------------------
def test_classification_batch_contract() -> None:
    examples = [ClassificationExample("good film", "pos"), ClassificationExample("bad", "neg"),
                ClassificationExample("a good good film", "pos")]
    tok = build_tokenizer("word", [e.text for e in examples])
    ds = ClassificationDataset(examples, tok, label_set=["neg", "pos"])
    assert ds.num_classes == 2
    batch = ds.collate([ds[i] for i in range(3)])
    assert set(batch) == CLS_KEYS
    assert batch["input_ids"].shape == batch["padding_mask"].shape == (3, 4)
    assert batch["labels"].shape == (3,) and batch["labels"].tolist() == [1, 0, 1]
    assert batch["padding_mask"].tolist() == [[False, False, True, True], [False, True, True, True],
                                              [False] * 4]
    assert (batch["input_ids"][batch["padding_mask"]] == tok.pad_id).all()
    assert (batch["input_ids"][~batch["padding_mask"]] != tok.pad_id).all()
    with pytest.raises(ValueError, match="example 1: label 'neg'"):
        ClassificationDataset(examples, tok, label_set=["pos"])


def test_listops_classification_pipeline() -> None:
    examples = generate_listops(40, seed=0, min_length=10, max_length=60, max_depth=4, max_args=5)
    tok = listops_tokenizer()
    ds = ClassificationDataset(examples, tok, label_set=[str(d) for d in range(10)], max_len=32)
    assert ds.length_report.truncated == sum(len(tok.encode(e.source)) > 32 for e in examples)
    loader = build_dataloader(ds, batch_size=8)
    batch = next(iter(loader))
    assert set(batch) == CLS_KEYS and batch["input_ids"].shape[1] <= 32
    assert batch["labels"].tolist() == [e.target for e in examples[:8]]
    first = batch["input_ids"][0][~batch["padding_mask"][0]]
    assert tok.decode(first).split() == [t for t in examples[0].source.split() if t not in "()"][:32]


def test_classification_skip_counts_and_framing() -> None:
    tok = build_tokenizer("byte", [])
    examples = [("abc", "1"), ("abcdefgh", "0")]
    ds = ClassificationDataset(examples, tok, ["0", "1"], max_len=5, overflow="skip", add_bos=True,
                               add_eos=True)
    assert len(ds) == 1 and ds.length_report.skipped == 1 and ds.indices == [0]
    assert ds[0]["input_ids"].tolist() == [tok.bos_id] + tok.encode("abc") + [tok.eos_id]
