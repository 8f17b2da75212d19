"""The prepared-corpus reader (``synthformer.data.prepared``) on corpora written by ``write_prepared``."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from synthformer.common.config import ConfigError
from synthformer.data import ByteTokenizer, CharTokenizer, DataError
from synthformer.data.prepared import PreparedCorpus, write_prepared

DOCS = ["hello world", "a", "the quick brown fox", "jumps over", "the lazy dog", "zz"]


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "prep"
    # shards of at least 12 tokens: several shards, documents never split across two
    write_prepared(folder, ByteTokenizer(), {"train": [(d,) for d in DOCS], "valid": [("valid text",)]},
                   shard_tokens=12)
    return folder


def test_documents_round_trip_with_eos_and_the_narrowest_dtype(corpus: Path) -> None:
    prepared = PreparedCorpus.open(corpus)
    tok = prepared.tokenizer()
    train = prepared.split("train")
    assert prepared.manifest["dtype"] == "uint16" and prepared.splits == ["train", "valid"]
    assert len(train) == len(DOCS) and len(train.shards) > 1
    for i, text in enumerate(DOCS):
        ids = train.document(i)
        assert ids.dtype == np.uint16 and isinstance(ids, np.memmap)  # a view of the map, not a copy
        assert ids.tolist() == tok.encode(text, add_eos=True)
    assert train.num_tokens() == sum(len(d.encode()) + 1 for d in DOCS)


def test_token_stream_slices_across_shard_boundaries(corpus: Path) -> None:
    prepared = PreparedCorpus.open(corpus)
    tok = prepared.tokenizer()
    stream = prepared.split("train").stream()
    whole = [i for d in DOCS for i in tok.encode(d, add_eos=True)]
    assert len(stream) == len(whole)
    for start, stop in [(0, len(whole)), (3, 17), (11, 13), (5, 5), (len(whole) - 2, len(whole) + 10)]:
        assert stream.slice(start, stop).tolist() == whole[start:stop]
    with pytest.raises(IndexError):
        stream.slice(-1, 3)


def test_pairs_layout_and_pickling_copies_no_tokens(tmp_path: Path) -> None:
    tok = CharTokenizer.train(["ein haus a house zwei katzen two cats"])
    pairs = [("ein haus", "a house"), ("zwei katzen", "two cats")]
    write_prepared(tmp_path / "p", tok, {"train": pairs}, layout="pairs", task_type="seq2seq")
    split = PreparedCorpus.open(tmp_path / "p").split("train")
    assert split.fields == ["source", "target"]
    assert [tok.decode(split.document(i, "target")) for i in range(2)] == ["a house", "two cats"]
    assert split.document(1, "source").tolist() == tok.encode("zwei katzen")  # no <eos> in pairs
    split.document(0, "source")  # maps a shard
    clone = pickle.loads(pickle.dumps(split))
    assert len(pickle.dumps(split)) < 2000 and clone.document(0, "source").tolist() == tok.encode("ein haus")


def test_truncated_shard_fails_at_open_naming_it(corpus: Path) -> None:
    victim = corpus / "train-00001.text.bin"
    victim.write_bytes(victim.read_bytes()[:-3])
    with pytest.raises(DataError, match=r"train-00001\.text\.bin: .*truncated"):
        PreparedCorpus.open(corpus)


def test_corrupt_shard_passes_open_and_fails_verify(corpus: Path) -> None:
    victim = corpus / "train-00000.text.idx.npy"
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF
    victim.write_bytes(bytes(data))
    prepared = PreparedCorpus.open(corpus)  # same size: only the checksum tells
    with pytest.raises(DataError, match=r"train-00000\.text\.idx\.npy: checksum mismatch"):
        prepared.verify()


def test_another_tokenizer_is_refused(corpus: Path, tmp_path: Path) -> None:
    other = CharTokenizer.train(["abc"])
    with pytest.raises(ConfigError, match="another tokenizer"):
        PreparedCorpus.open(corpus, tokenizer=other)
    path = other.save(tmp_path / "other.json")
    with pytest.raises(ConfigError, match="other.json"):
        PreparedCorpus.open(corpus, tokenizer=path)
    assert PreparedCorpus.open(corpus, tokenizer=ByteTokenizer()).splits  # the same one passes


def test_missing_manifest_and_unknown_version(corpus: Path) -> None:
    manifest = json.loads((corpus / "manifest.json").read_text())
    (corpus / "manifest.json").write_text(json.dumps({**manifest, "version": 99}))
    with pytest.raises(ConfigError, match="version 99 is not supported"):
        PreparedCorpus.open(corpus)
    (corpus / "manifest.json").unlink()
    with pytest.raises(DataError, match="manifest.json: missing"):
        PreparedCorpus.open(corpus)


def test_check_sources_reports_changed_and_gone_files(corpus: Path, tmp_path: Path) -> None:
    kept, changed, gone = (tmp_path / n for n in ("kept.txt", "changed.txt", "gone.txt"))
    for path in (kept, changed, gone):
        path.write_text("some text\n")
    manifest = json.loads((corpus / "manifest.json").read_text())
    manifest["sources"] = {"train": [{"path": str(p), "size": p.stat().st_size, "mtime": p.stat().st_mtime,
                                      "sha256": "x"} for p in (kept, changed, gone)]}
    (corpus / "manifest.json").write_text(json.dumps(manifest))
    changed.write_text("other, longer text\n")
    gone.unlink()
    problems = PreparedCorpus.open(corpus).check_sources()
    assert len(problems) == 2
    assert any("changed.txt: changed since prepare" in p for p in problems)
    assert any("gone.txt: gone since prepare" in p for p in problems)
