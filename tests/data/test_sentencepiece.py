"""The ``sentencepiece`` tokenizer kind: T5's ids and sentinels, round trips, files, and its one-line errors."""

from __future__ import annotations

import hashlib
import io
import pickle
from pathlib import Path

import pytest

pytest.importorskip("sentencepiece", reason="the sentencepiece kind needs the 'hf' extra")

from synthformer.data import (  # noqa: E402
    SentencePieceTokenizer,
    SentinelTokenizer,
    build_tokenizer,
    load_tokenizer,
)

from .conftest import spm_corpus  # noqa: E402


def test_t5_layout_of_the_ids(spm_tokenizer) -> None:
    tok = spm_tokenizer
    assert isinstance(tok, SentinelTokenizer) and isinstance(tok.base, SentencePieceTokenizer)
    assert tok.vocab_size == 200 and tok.base.vocab_size == 100 and tok.num_sentinels == 100
    assert [tok.id_to_token(i) for i in range(3)] == ["<pad>", "</s>", "<unk>"]
    assert (tok.pad_id, tok.eos_id, tok.unk_id, tok.bos_id) == (0, 1, 2, 0)  # T5: the decoder starts from <pad>
    # T5's sentinels count down from the last id
    assert tok.sentinel_id(0) == 199 and tok.sentinel_id(99) == 100
    assert tok.token_to_id("<extra_id_0>") == 199 and tok.id_to_token(100) == "<extra_id_99>"
    assert tok.sentinel_ids == list(range(199, 99, -1))
    assert tok.token_to_id("no such piece") is None and tok.token_to_id("<unk>") == 2


def test_round_trips_with_and_without_sentinels(spm_tokenizer) -> None:
    tok = spm_tokenizer
    text = "The big cat sat on the red mat."
    ids = tok.encode(text, add_eos=True)
    assert ids[-1] == tok.eos_id and tok.decode(ids) == text
    assert not any(tok.is_sentinel(i) for i in tok.encode("a <extra_id_0> b"))  # text never makes a sentinel
    masked = "The <extra_id_0> sat on <extra_id_1> mat."
    ids = tok.encode_with_sentinels(masked, add_eos=True)
    assert ids.count(199) == 1 and ids.count(198) == 1 and ids[-1] == 1
    assert tok.decode(ids) == masked
    assert tok.encode_batch([text, masked], add_eos=True) == [tok.encode(t, add_eos=True) for t in (text, masked)]


def test_saves_loads_and_the_file_is_stable(spm_tokenizer, tmp_path: Path) -> None:
    path = spm_tokenizer.save(tmp_path / "tokenizer.json")
    loaded = load_tokenizer(path)
    assert loaded == spm_tokenizer and loaded.sentinel_id(0) == 199
    text = "Water flows under the stone bridge."
    assert loaded.encode(text) == spm_tokenizer.encode(text)
    # the same text trains the same model: a run directory's tokenizer hashes the same every time
    again = build_tokenizer("sentencepiece", spm_corpus(), 200).save(tmp_path / "again.json")
    assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(again.read_bytes()).digest()
    # a DataLoader worker receives the tokenizer pickled
    assert pickle.loads(pickle.dumps(spm_tokenizer)).encode(text) == spm_tokenizer.encode(text)


def test_an_existing_spiece_model_is_read_as_t5_reads_it(spm_tokenizer, tmp_path: Path) -> None:
    model = spm_tokenizer.base.save_model(tmp_path / "spiece.model")
    tok = build_tokenizer("sentencepiece", [], model_file=str(model))
    assert tok == spm_tokenizer and tok.vocab_size == 200
    bare = build_tokenizer("sentencepiece", [], model_file=str(model), num_sentinels=0)
    assert isinstance(bare, SentencePieceTokenizer) and bare.vocab_size == 100
    # a bare model gets T5's descending sentinels from whoever adds them (span corruption, dialogue)
    assert SentinelTokenizer(bare, 3).sentinel_ids == [102, 101, 100]


def _other_specials_model(tmp_path: Path) -> Path:
    import sentencepiece

    out = io.BytesIO()  # SentencePiece's defaults: <unk> 0, <s> 1, </s> 2, no <pad>
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(spm_corpus()), model_writer=out, vocab_size=60,
                                             minloglevel=2, num_threads=1)
    path = tmp_path / "llama_like.model"
    path.write_bytes(out.getvalue())
    return path


@pytest.mark.parametrize(("case", "error", "message"), [
    ("too small", ValueError, "vocab_size 102 leaves no room for pieces after 100 sentinels and 3 specials"),
    ("no file", FileNotFoundError, "no SentencePiece model file at"),
    ("not a model", ValueError, "not a SentencePiece model"),
    ("other specials", ValueError, r"pad/eos/unk ids \(-1, 2, 0\), expected T5's \(0, 1, 2\)"),
    ("size mismatch", ValueError, "vocab_size 300, but .* has 100 pieces \\+ 100 sentinels = 200 ids"),
    ("bad sentinels", ValueError, "num_sentinels must be an integer >= 0, got -1"),
    ("unknown option", ValueError, r"unknown sentencepiece option\(s\) \['coverage'\]; valid: model_file,"),
])
def test_bad_input_is_a_one_line_error(spm_tokenizer, tmp_path: Path, case: str, error: type, message: str) -> None:
    model = spm_tokenizer.base.save_model(tmp_path / "spiece.model")
    (tmp_path / "notes.txt").write_text("not a model\n")
    calls = {
        "too small": lambda: build_tokenizer("sentencepiece", spm_corpus(), 102),
        "no file": lambda: build_tokenizer("sentencepiece", [], model_file=str(tmp_path / "missing.model")),
        "not a model": lambda: build_tokenizer("sentencepiece", [], model_file=str(tmp_path / "notes.txt")),
        "other specials": lambda: build_tokenizer("sentencepiece", [], model_file=str(_other_specials_model(tmp_path))),
        "size mismatch": lambda: build_tokenizer("sentencepiece", [], 300, model_file=str(model)),
        "bad sentinels": lambda: build_tokenizer("sentencepiece", spm_corpus(), 200, num_sentinels=-1),
        "unknown option": lambda: build_tokenizer("sentencepiece", spm_corpus(), 200, coverage=1.0),
    }
    with pytest.raises(error, match=message) as info:
        calls[case]()
    assert "\n" not in str(info.value)


def test_one_long_line_is_cut_into_sentences_not_skipped() -> None:
    # an LM corpus is one string; SentencePiece skips any sentence over 4192 bytes, so it is cut at spaces first
    text = " ".join(spm_corpus())
    assert len(text) > 10_000 and "\n" not in text
    tok = build_tokenizer("sentencepiece", [text], 200)
    assert tok.vocab_size == 200 and tok.decode(tok.encode("The red bird sings.")) == "The red bird sings."
