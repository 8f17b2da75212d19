"""Tokenizers: round trips, special ids, vocabulary caps, save/load, the factory's errors."""

from __future__ import annotations

import json

import pytest
import torch

from synthformer.data import (
    SPECIAL_TOKENS,
    TOKENIZER_KINDS,
    ByteTokenizer,
    CharTokenizer,
    FixedVocabTokenizer,
    Tokenizer,
    WordTokenizer,
    build_tokenizer,
    load_tokenizer,
)
from synthformer.data.tokenization import TOKENIZER_FILE

ALL_KINDS = ("char", "byte", "word", "bpe")


def _build(kind: str, text: str) -> Tokenizer:
    # small bpe vocabulary: the sample text is short
    return build_tokenizer(kind, [text], vocab_size=300 if kind == "bpe" else None)


@pytest.mark.parametrize("kind", ["char", "byte", "bpe"])
def test_round_trip_exact(kind: str, sample_text: str) -> None:
    tok = _build(kind, sample_text)
    ids = tok.encode(sample_text)
    assert all(isinstance(i, int) and 0 <= i < tok.vocab_size for i in ids)
    assert tok.decode(ids) == sample_text
    # specials are skipped by default, shown on request
    framed = tok.encode(sample_text, add_bos=True, add_eos=True)
    assert framed[0] == tok.bos_id and framed[-1] == tok.eos_id and framed[1:-1] == ids
    assert tok.decode(framed) == sample_text
    assert tok.decode(torch.tensor(framed)) == sample_text  # tensors are accepted


@pytest.mark.parametrize("kind", ["char", "byte", "bpe"])
def test_round_trip_on_real_corpus(kind: str, shared_data) -> None:
    text = (shared_data / "tiny_shakespeare" / "input.txt").read_text(encoding="utf-8")
    train, valid = text[:200_000], text[-20_000:]
    tok = build_tokenizer(kind, [train], vocab_size=500 if kind == "bpe" else None)
    assert tok.decode(tok.encode(valid)) == valid
    if kind == "bpe":  # bpe compresses: fewer tokens than bytes
        assert len(tok.encode(valid)) < 0.7 * len(valid.encode())


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_common_interface_and_special_ids(kind: str, sample_text: str) -> None:
    tok = _build(kind, sample_text)
    assert (tok.pad_id, tok.unk_id, tok.bos_id, tok.eos_id) == (0, 1, 2, 3)
    for i, name in enumerate(SPECIAL_TOKENS):
        assert tok.id_to_token(i) == name
        assert tok.token_to_id(name) == i
    assert tok.encode("") == []
    with pytest.raises(IndexError):
        tok.id_to_token(tok.vocab_size)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_save_load_equality(kind: str, sample_text: str, tmp_path) -> None:
    tok = _build(kind, sample_text)
    path = tok.save(tmp_path / "tok")
    assert path.name == TOKENIZER_FILE
    json.loads(path.read_text(encoding="utf-8"))  # plain JSON, no pickle
    loaded = load_tokenizer(tmp_path / "tok")
    assert type(loaded) is type(tok)
    assert loaded == tok
    assert loaded.vocab_size == tok.vocab_size
    probe = sample_text + " unseen-words xyzzy 🙂"
    assert loaded.encode(probe) == tok.encode(probe)
    assert loaded.decode(tok.encode(probe)) == tok.decode(tok.encode(probe))
    assert load_tokenizer(path) == tok  # the file itself also works


def test_save_and_load_take_the_file_path(tmp_path) -> None:
    tok = build_tokenizer("char", ["abc"])
    path = tmp_path / "run" / "my_tokenizer.json"  # a run directory passes RunDir(run).tokenizer_path
    assert tok.save(path) == path and sorted(p.name for p in path.parent.iterdir()) == ["my_tokenizer.json"]
    assert load_tokenizer(path) == tok
    assert tok.save(str(path)) == path  # overwrites its own file
    with pytest.raises(FileNotFoundError, match="no tokenizer file at .*other.json"):
        load_tokenizer(tmp_path / "run" / "other.json")
    # a directory (existing, or a new name without .json) gets the default file name inside it
    assert tok.save(tmp_path / "run").name == TOKENIZER_FILE == "synthformer_tokenizer.json"
    assert load_tokenizer(tmp_path / "run") == tok


def test_tokenization_module_keeps_its_names() -> None:
    from synthformer.data import tokenization

    names = ["SPECIAL_TOKENS", "TOKENIZER_FILE", "TOKENIZER_KINDS", "BPETokenizer", "ByteTokenizer", "CharTokenizer",
             "FixedVocabTokenizer", "Tokenizer", "WordTokenizer", "build_tokenizer", "load_tokenizer",
             "PAD", "UNK", "BOS", "EOS"]
    assert [name for name in names if not hasattr(tokenization, name)] == []
    assert tokenization.CharTokenizer is CharTokenizer and issubclass(tokenization.BPETokenizer, Tokenizer)


def test_byte_tokenizer_layout() -> None:
    tok = build_tokenizer("byte", [])
    assert isinstance(tok, ByteTokenizer) and tok.vocab_size == 260
    assert tok.encode("A") == [ord("A") + 4]
    assert tok.encode("é") == [0xC3 + 4, 0xA9 + 4]
    assert tok.encode(b"\xff\x00") == [0xFF + 4, 4]  # raw bytes accepted
    assert tok.decode_bytes(tok.encode(b"\xff\x00")) == b"\xff\x00"
    # a multi-byte character cut in half decodes with a replacement character, not an exception
    assert tok.decode(tok.encode("é")[:1]) == "\ufffd"
    with pytest.raises(ValueError, match="260"):
        build_tokenizer("byte", [], vocab_size=100)


def test_char_unknown_and_vocab_cap() -> None:
    tok = build_tokenizer("char", ["aaaabbbc"])
    assert isinstance(tok, CharTokenizer) and tok.vocab_size == 4 + 3
    assert tok.alphabet == ["a", "b", "c"]
    assert tok.encode("az") == [tok.token_to_id("a"), tok.unk_id]
    assert tok.decode(tok.encode("az")) == "a\ufffd"
    capped = build_tokenizer("char", ["aaaabbbc"], vocab_size=6)  # keeps the 2 most frequent
    assert capped.alphabet == ["a", "b"]
    assert capped.encode("c") == [capped.unk_id]


def test_word_tokenizer(sample_text: str) -> None:
    tok = build_tokenizer("word", [sample_text])
    assert isinstance(tok, WordTokenizer)
    ids = tok.encode("Speak, speak.")
    assert [tok.id_to_token(i) for i in ids] == ["Speak", ",", "speak", "."]
    assert tok.decode(ids) == "Speak , speak ."
    unk_ids = tok.encode("Speak xyzzy")
    assert unk_ids[-1] == tok.unk_id
    assert tok.decode(unk_ids) == "Speak <unk>"  # unknown words stay visible
    capped = build_tokenizer("word", [sample_text], vocab_size=10)
    assert capped.vocab_size == 10
    ws = build_tokenizer("word", ["a b. c"], split="whitespace")
    assert [ws.id_to_token(i) for i in ws.encode("a b.")] == ["a", "b."]


def test_bpe_vocab_size_respected(sample_text: str) -> None:
    tok = build_tokenizer("bpe", [sample_text * 3], vocab_size=290)
    assert tok.vocab_size <= 290
    with pytest.raises(ValueError, match="at least"):
        build_tokenizer("bpe", [sample_text], vocab_size=100)


def test_encode_batch_matches_encode(sample_text: str) -> None:
    lines = sample_text.splitlines()
    for kind in ALL_KINDS:
        tok = _build(kind, sample_text)
        assert tok.encode_batch(lines, add_eos=True) == [tok.encode(x, add_eos=True) for x in lines]


def test_unknown_kind_lists_valid_ones() -> None:
    with pytest.raises(ValueError) as info:
        build_tokenizer("wordpiece", ["x"])  # sentencepiece is a kind now
    for kind in TOKENIZER_KINDS:
        assert kind in str(info.value)


def test_load_rejects_bad_files(tmp_path) -> None:
    with pytest.raises(FileNotFoundError):
        load_tokenizer(tmp_path)
    (tmp_path / TOKENIZER_FILE).write_text('{"format_version": 1, "kind": "nope"}', encoding="utf-8")
    with pytest.raises(ValueError, match="unknown tokenizer kind"):
        load_tokenizer(tmp_path)
    (tmp_path / TOKENIZER_FILE).write_text("not json", encoding="utf-8")
    with pytest.raises(ValueError, match="not a valid tokenizer"):
        load_tokenizer(tmp_path)


def test_fixed_vocab_tokenizer(tmp_path) -> None:
    tok = FixedVocabTokenizer(["x", "y"], ignore=["(", ")"])
    assert tok.vocab_size == 6
    assert tok.encode("( x ) y z") == [4, 5, tok.unk_id]
    assert tok.decode([4, 5, 3]) == "x y"
    assert tok.ignore == ["(", ")"] and tok.ignore is not tok.ignore  # a copy: the tokenizer cannot be changed
    tok.save(tmp_path)
    assert load_tokenizer(tmp_path) == tok
    with pytest.raises(ValueError):
        FixedVocabTokenizer(["x", "x"])
