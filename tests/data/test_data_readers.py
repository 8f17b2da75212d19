"""File readers: LM splits, parallel text, classification formats, and their DataErrors."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from synthformer.data import (
    LM_SPLITS,
    ClassificationExample,
    DataError,
    TranslationPair,
    build_label_set,
    load_label_set,
    read_classification,
    read_parallel,
    read_parallel_tsv,
    read_text_file,
    read_translation_split,
    save_label_set,
    split_text,
)


def _write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def _assert_error(info: pytest.ExceptionInfo[DataError], path: Path, line: int, words: str) -> None:
    message = str(info.value)
    assert path.name in message, message
    assert f":{line}:" in message, message
    assert info.value.line == line
    assert words in message, message


# -- language modelling ------------------------------------------------------------------------
def test_split_text_conventions() -> None:
    text = "".join(chr(97 + i % 26) for i in range(1_115_394))  # tiny_shakespeare's length
    train, valid, test = split_text(text, *LM_SPLITS["tiny_shakespeare"])
    n = len(text)
    assert train == text[: int(n * 0.9)] and valid == text[int(n * 0.9) :] and test == ""
    data = bytes(range(256)) * 400  # 102,400 bytes
    train, valid, test = split_text(data, *LM_SPLITS["enwik8"])
    assert (len(train), len(valid), len(test)) == (92_160, 5_120, 5_120)
    assert train + valid + test == data
    train, valid, test = split_text(list(range(100)), 0.05, 0.05)  # exact decimal: 90/5/5, not 89/6/5
    assert (len(train), len(valid), len(test)) == (90, 5, 5)
    with pytest.raises(ValueError):
        split_text(text, 0.6, 0.5)


def test_read_text_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "corpus.txt", "line one\nline two é\n")
    assert read_text_file(path) == "line one\nline two é\n"
    with pytest.raises(DataError) as info:
        read_text_file(_write(tmp_path / "empty.txt", ""))
    _assert_error(info, tmp_path / "empty.txt", 1, "empty")
    bad = _write(tmp_path / "bad.txt", b"ok\nok\nbad \xff byte\n")
    with pytest.raises(DataError) as info:
        read_text_file(bad)
    _assert_error(info, bad, 3, "invalid UTF-8")
    assert read_text_file(bad, errors="replace").endswith("bad \ufffd byte\n")


def test_lm_real_corpus_split(shared_data: Path) -> None:
    text = read_text_file(shared_data / "tiny_shakespeare" / "input.txt")
    train, valid, _ = split_text(text, *LM_SPLITS["tiny_shakespeare"])
    assert train.startswith("First Citizen") and len(train) == int(len(text) * 0.9)
    assert train + valid == text


# -- translation -------------------------------------------------------------------------------
def test_read_parallel(tmp_path: Path) -> None:
    de = _write(tmp_path / "train.de", "Hallo Welt\r\nZwei Männer\n")
    en = _write(tmp_path / "train.en", "Hello world\nTwo men\n")
    pairs = read_parallel(de, en)
    assert pairs == [TranslationPair("Hallo Welt", "Hello world", 1), TranslationPair("Zwei Männer", "Two men", 2)]
    assert read_translation_split(tmp_path, "train", "de", "en") == pairs


def test_parallel_line_count_mismatch(tmp_path: Path) -> None:
    de = _write(tmp_path / "train.de", "a\nb\nc\n")
    en = _write(tmp_path / "train.en", "a\nb\n")
    with pytest.raises(DataError) as info:
        read_parallel(de, en)
    _assert_error(info, de, 3, "line counts differ")
    assert "train.en" in str(info.value)


def test_parallel_empty_line_policy(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    de = _write(tmp_path / "x.de", "a\n\nc\nd\n")
    en = _write(tmp_path / "x.en", "A\nB\nC\n   \n")
    with pytest.raises(DataError) as info:
        read_parallel(de, en)
    _assert_error(info, de, 2, "empty line")
    with caplog.at_level(logging.WARNING):
        pairs = read_parallel(de, en, empty_lines="skip")
    assert [p.source for p in pairs] == ["a", "c"]
    assert "skipped 2 empty line(s), the first at line 2" in caplog.text
    with pytest.raises(ValueError, match="empty_lines"):
        read_parallel(de, en, empty_lines="ignore")


def test_parallel_bad_encoding(tmp_path: Path) -> None:
    de = _write(tmp_path / "t.de", "a\nb\n")
    en = _write(tmp_path / "t.en", b"a\n\xc3(\n")
    with pytest.raises(DataError) as info:
        read_parallel(de, en)
    _assert_error(info, en, 2, "invalid UTF-8")


def test_parallel_tsv(tmp_path: Path) -> None:
    path = _write(tmp_path / "pairs.tsv", "de\ten\nHallo\tHello\nJa\tYes\textra\n")
    assert read_parallel_tsv(path, header=True) == [TranslationPair("Hallo", "Hello", 2),
                                                     TranslationPair("Ja", "Yes", 3)]
    bad = _write(tmp_path / "bad.tsv", "Hallo\tHello\nno tab here\n")
    with pytest.raises(DataError) as info:
        read_parallel_tsv(bad)
    _assert_error(info, bad, 2, "columns")
    empty_side = _write(tmp_path / "empty_side.tsv", "Hallo\tHello\nJa\t\n")
    with pytest.raises(DataError) as info:
        read_parallel_tsv(empty_side)
    _assert_error(info, empty_side, 2, "empty")
    assert len(read_parallel_tsv(empty_side, empty_lines="skip")) == 1
    nothing = _write(tmp_path / "nothing.tsv", "")
    with pytest.raises(DataError) as info:
        read_parallel_tsv(nothing)
    _assert_error(info, nothing, 1, "no sentence pairs")


def test_multi30k_real(shared_data: Path) -> None:
    pairs = read_translation_split(shared_data / "multi30k", "val", "de", "en")
    assert len(pairs) == 1014  # Multi30k's official validation size (../shared/data/README.md)
    assert all(p.source and p.target for p in pairs)


# -- classification ----------------------------------------------------------------------------
def test_jsonl_reader(tmp_path: Path) -> None:
    path = _write(tmp_path / "train.jsonl",
                  '{"id": 0, "label": 1, "text": "good film"}\n{"id": 1, "label": 0, "text": "bad"}\n')
    assert read_classification(path) == [ClassificationExample("good film", "1", 1),
                                         ClassificationExample("bad", "0", 2)]
    custom = _write(tmp_path / "c.jsonl", '{"sentence": "x", "y": "pos"}\n')
    assert read_classification(custom, text_field="sentence", label_field="y")[0].label == "pos"


@pytest.mark.parametrize(
    ("content", "line", "words"),
    [
        ('{"text": "a", "label": 1}\n{"text": "b"}\n', 2, "missing field 'label'"),
        ('{"text": "a", "label": 1}\n{"label": 1}\n', 2, "missing field 'text'"),
        ('{"text": "a", "label": 1}\n{"text": "a", "label": 1\n', 2, "invalid JSON"),
        ('[1, 2]\n', 1, "expected a JSON object"),
        ('{"text": 5, "label": 1}\n', 1, "must be a string"),
        ('{"text": "a", "label": 1.5}\n', 1, "string or an integer"),
        ('{"text": "a", "label": 1}\n\n{"text": "b", "label": 0}\n', 2, "empty line"),
        ('{"text": "a", "label": 1}\n{"text": "  ", "label": 0}\n', 2, "empty text"),
        ('{"text": "a", "label": 7}\n', 1, "not in the label set"),
        ("", 1, "no examples"),
    ],
)
def test_jsonl_errors(tmp_path: Path, content: str, line: int, words: str) -> None:
    path = _write(tmp_path / "broken.jsonl", content)
    with pytest.raises(DataError) as info:
        read_classification(path, label_set=["0", "1"])
    _assert_error(info, path, line, words)


def test_invalid_utf8_classification(tmp_path: Path) -> None:
    path = _write(tmp_path / "bad.jsonl", b'{"text": "a", "label": 1}\n{"text": "\xe9t\xe9", "label": 0}\n')
    with pytest.raises(DataError) as info:
        read_classification(path)
    _assert_error(info, path, 2, "invalid UTF-8")


def test_label_text_format(tmp_path: Path) -> None:
    path = _write(tmp_path / "stsa.binary.train",
                  "1 a stirring , funny and finally transporting re-imagining\n0 apparently reassembled .\n")
    examples = read_classification(path, format="label_text")
    assert [(e.label, e.text) for e in examples] == [
        ("1", "a stirring , funny and finally transporting re-imagining"),
        ("0", "apparently reassembled ."),
    ]
    bad = _write(tmp_path / "bad.train", "1 fine\n0\n")
    with pytest.raises(DataError) as info:
        read_classification(bad, format="label_text")
    _assert_error(info, bad, 2, "no text")
    with pytest.raises(DataError) as info:
        read_classification(path, format="label_text", label_set=["1"])
    _assert_error(info, path, 2, "not in the label set")
    with pytest.raises(ValueError, match="cannot infer"):
        read_classification(path)


def test_csv_reader(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.csv",
                  'id,sentence,label\n1,"hello, world",pos\n2,"two\nlines",neg\n3,plain,pos\n')
    examples = read_classification(path, text_field="sentence")
    assert [(e.text, e.label, e.line) for e in examples] == [
        ("hello, world", "pos", 2), ("two\nlines", "neg", 3), ("plain", "pos", 5)]
    by_index = read_classification(path, text_field=1, label_field=2)
    assert [e.text for e in by_index] == [e.text for e in examples]
    missing = _write(tmp_path / "m.csv", "id,text\n1,hi\n")
    with pytest.raises(DataError) as info:
        read_classification(missing)
    _assert_error(info, missing, 1, "missing column 'label'")
    short = _write(tmp_path / "s.csv", "text,label\nhi,1\nonly-text\n")
    with pytest.raises(DataError) as info:
        read_classification(short)
    _assert_error(info, short, 3, "columns")
    bad_quote = _write(tmp_path / "q.csv", 'text,label\n"hi"x,1\n')
    with pytest.raises(DataError) as info:
        read_classification(bad_quote)
    _assert_error(info, bad_quote, 2, "malformed CSV")
    header_only = _write(tmp_path / "h.csv", "text,label\n")
    with pytest.raises(DataError) as info:
        read_classification(header_only)
    _assert_error(info, header_only, 1, "no examples")


def test_tsv_reader(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.tsv", 'text\tlabel\nsays "hi"\t1\nok\t0\n')
    assert [(e.text, e.label) for e in read_classification(path)] == [('says "hi"', "1"), ("ok", "0")]
    no_header = _write(tmp_path / "n.tsv", "1\tgood\n0\tbad\n")
    examples = read_classification(no_header, text_field=1, label_field=0, header=False)
    assert [(e.text, e.label) for e in examples] == [("good", "1"), ("bad", "0")]
    bad = _write(tmp_path / "b.tsv", "text\tlabel\nx\t1\ny\t\n")
    with pytest.raises(DataError) as info:
        read_classification(bad)
    _assert_error(info, bad, 3, "label field 'label' is empty")


def test_label_set_sorted_and_saved(tmp_path: Path) -> None:
    assert build_label_set(["10", "2", "1", "2"]) == ["1", "2", "10"]  # numeric order
    assert build_label_set(["pos", "neg", "neutral"]) == ["neg", "neutral", "pos"]
    assert build_label_set([ClassificationExample("t", "b"), ClassificationExample("t", "a")]) == ["a", "b"]
    path = save_label_set(["neg", "pos"], tmp_path / "run" / "labels.json")
    assert load_label_set(path) == ["neg", "pos"]
    bad = _write(tmp_path / "bad.json", '{"labels": 1}')
    with pytest.raises(DataError):
        load_label_set(bad)


def test_real_classification_files(shared_data: Path) -> None:
    sst = read_classification(shared_data / "sst2" / "stsa.binary.dev", format="label_text")
    assert len(sst) == 872 and build_label_set(sst) == ["0", "1"]  # SST-2's official dev size (shared data README)
