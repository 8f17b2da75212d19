"""Token ids outside the vocabulary in a prepared corpus (a byte flipped on disk keeps a shard's size): the scan at
start (``PreparedCorpus.check_ids``) and the check of every read both name the shard, the id and the vocabulary."""

from __future__ import annotations

from pathlib import Path

import pytest

from synthformer.data import ByteTokenizer, DataError
from synthformer.data.prepared import PreparedCorpus, write_prepared
from synthformer.data.prepared.reader import redo_hint

DOCS = ["hello world", "a", "the quick brown fox", "jumps over", "the lazy dog", "zz"]


@pytest.fixture()
def damaged(tmp_path: Path) -> Path:
    """A byte-tokenized corpus (260 ids, uint16) whose second shard's third id has its high byte flipped."""
    folder = tmp_path / "prep"
    write_prepared(folder, ByteTokenizer(), {"train": [(d,) for d in DOCS]}, shard_tokens=12)
    shard = folder / "train-00001.text.bin"
    data = bytearray(shard.read_bytes())
    data[2 * 2 + 1] ^= 0x80  # id 2, little-endian: its high byte
    shard.write_bytes(bytes(data))
    return folder


def test_the_scan_names_the_shard_the_id_and_the_vocabulary(damaged: Path) -> None:
    corpus = PreparedCorpus.open(damaged)  # the sizes are right: opening passes
    with pytest.raises(DataError) as err:
        corpus.check_ids()
    message = str(err.value)
    assert message.startswith(f"{damaged / 'train-00001.text.bin'}: token id ")
    assert "at token 2 is outside the vocabulary of 260 ids" in message and "--verify" in message
    assert int(message.split("token id ")[1].split(" ")[0].replace(",", "")) >= 1 << 15


def test_a_corpus_over_the_bound_is_not_scanned_but_every_read_is_checked(damaged: Path) -> None:
    corpus = PreparedCorpus.open(damaged)
    assert corpus.check_ids(max_bytes=corpus.token_bytes() - 1) is False
    split = corpus.split("train")
    split.document(0)  # an intact shard reads as ever
    with pytest.raises(DataError, match=r"train-00001\.text\.bin: token id .* vocabulary of 260 ids"):
        for i in range(int(split.doc_starts[1]), int(split.doc_starts[2])):  # the documents of the damaged shard
            split.document(i)
    stream = split.stream()
    stream.slice(0, int(stream.starts[1]))  # up to the damaged shard: fine
    with pytest.raises(DataError, match=r"train-00001\.text\.bin: token id .* at token 2 "):
        stream.slice(0, len(stream))


def test_an_intact_corpus_passes_the_scan(tmp_path: Path) -> None:
    write_prepared(tmp_path / "ok", ByteTokenizer(), {"train": [(d,) for d in DOCS]}, shard_tokens=12)
    assert PreparedCorpus.open(tmp_path / "ok").check_ids() is True


def test_the_advice_needs_the_sources_when_they_are_gone(tmp_path: Path) -> None:
    source = tmp_path / "corpus.txt"
    source.write_text("text\n", encoding="utf-8")
    sources = {"train": [{"path": str(source), "size": 5}]}
    assert redo_hint(sources, verify=True) == ("re-run the same 'synthformer prepare' command with --verify to "
                                               "rewrite it")
    source.write_text("other text\n", encoding="utf-8")
    assert "changed since the prepare (5 -> 11 bytes): restore them, then re-run" in redo_hint(sources)
    source.unlink()
    hint = redo_hint(sources, verify=True)
    assert f"{source} is gone since the prepare: restore the sources, then re-run" in hint and "--verify" in hint
