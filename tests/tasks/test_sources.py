"""Raw data of a run: file formats, generators, the Python-stdlib corpus, held-out splits, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synthformer.common.config import ConfigError, from_dict
from synthformer.data import DataError
from synthformer.tasks import RunConfig, load_pystdlib, load_raw_data, stdlib_source_files


def _task(**task):
    return from_dict(RunConfig, {"task": task}).task


def test_lm_text_split_is_contiguous_and_bytes_for_byte_tokenizer(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("abcdefghij" * 10, encoding="utf-8")
    raw = load_raw_data(_task(train=str(path), valid_fraction=0.1, test_fraction=0.1))
    assert raw.splits["train"] + raw.splits["valid"] + raw.splits["test"] == "abcdefghij" * 10
    assert (len(raw.splits["train"]), len(raw.splits["valid"]), len(raw.splits["test"])) == (80, 10, 10)
    raw = load_raw_data(_task(train=str(path), valid_fraction=0.5, tokenizer="byte"))
    assert isinstance(raw.splits["train"], bytes) and "test" not in raw.splits
    with pytest.raises(ConfigError, match=r"task\.valid: an LM needs a validation split"):
        load_raw_data(_task(train=str(path)))
    with pytest.raises(DataError, match="missing.txt: file not found"):
        load_raw_data(_task(train=str(tmp_path / "missing.txt"), valid_fraction=0.1))


def test_seq2seq_formats(tmp_path: Path) -> None:
    (tmp_path / "train.de").write_text("ein Hund\nzwei Katzen\n", encoding="utf-8")
    (tmp_path / "train.en").write_text("a dog\ntwo cats\n", encoding="utf-8")
    raw = load_raw_data(_task(type="seq2seq", train=str(tmp_path / "train"), valid=str(tmp_path / "train"),
                              source_lang="de", target_lang="en"))
    assert [tuple(p[:2]) for p in raw.splits["train"]] == [("ein Hund", "a dog"), ("zwei Katzen", "two cats")]
    csv = tmp_path / "s.csv"
    csv.write_text('id,article,highlights\n1,"A long, long text.",Short.\n2,Other text.,Other.\n', encoding="utf-8")
    raw = load_raw_data(_task(type="seq2seq", train=str(csv), valid=str(csv), source_field="article",
                              target_field="highlights"))
    assert tuple(raw.splits["valid"][0][:2]) == ("A long, long text.", "Short.")
    (tmp_path / "bad.en").write_text("only one line\n", encoding="utf-8")
    (tmp_path / "bad.de").write_text("eins\nzwei\n", encoding="utf-8")
    with pytest.raises(DataError, match="line counts differ"):
        load_raw_data(_task(type="seq2seq", train=str(tmp_path / "bad"), valid_fraction=0.5, source_lang="de",
                            target_lang="en"))


def test_generators_are_deterministic_and_options_checked() -> None:
    task = _task(type="seq2seq", generator="algorithmic:reverse",
                 generator_options={"num_train": 20, "num_valid": 5, "num_test": 0, "max_len": 4})
    a, b = load_raw_data(task), load_raw_data(task)
    assert a.splits == b.splits and set(a.splits) == {"train", "valid"}
    assert all(p.target == p.source[::-1] for p in a.splits["train"])
    lo = load_raw_data(_task(type="classification", generator="listops",
                             generator_options={"num_train": 30, "num_valid": 10, "num_test": 10}))
    assert lo.label_set == [str(d) for d in range(10)] and len(lo.splits["test"]) == 10
    with pytest.raises(ConfigError, match=r"generator_options: unknown option\(s\) \['num_trian'\]"):
        load_raw_data(_task(type="classification", generator="listops", generator_options={"num_trian": 3}))


def test_classification_holdout_limits_and_unknown_labels(tmp_path: Path) -> None:
    rows = [{"text": f"text {i}", "label": i % 3} for i in range(60)]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    raw = load_raw_data(_task(type="classification", train=str(path), valid_fraction=0.25, train_limit=20))
    assert len(raw.splits["valid"]) == 15 and len(raw.splits["train"]) == 20
    assert raw.label_set == ["0", "1", "2"]
    assert not {ex.text for ex in raw.splits["train"]} & {ex.text for ex in raw.splits["valid"]}
    other = tmp_path / "v.jsonl"
    other.write_text(json.dumps({"text": "x", "label": 7}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"label '7' never occurs in the training split"):
        load_raw_data(_task(type="classification", train=str(path), valid=str(other)))
    with pytest.raises(ConfigError, match=r"task\.valid: the task needs a validation split"):
        load_raw_data(_task(type="classification", train=str(path)))


def test_pystdlib_split_is_by_file_deterministic_and_skips_tests(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    for rel, text in {"a.py": "import os\n", "pkg/b.py": "x = 1\n", "pkg/c.py": "def f():\n    pass\n",
                      "test/test_a.py": "assert True\n", "site-packages/thirdparty.py": "y = 2\n",
                      "notes.txt": "not python\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "latin1.py").write_bytes(b"s = '\xe9'\n")  # not UTF-8: skipped
    files = [p.relative_to(root).as_posix() for p in stdlib_source_files(root)]
    assert files == ["a.py", "latin1.py", "pkg/b.py", "pkg/c.py"]
    corpus = load_pystdlib(valid_fraction=0.5, root=root)
    again = load_pystdlib(valid_fraction=0.5, root=root)
    assert corpus == again
    assert sorted(corpus.files["train"] + corpus.files["valid"]) == ["a.py", "pkg/b.py", "pkg/c.py"]
    for name in corpus.files["valid"]:
        assert (root / name).read_text() in corpus.valid and (root / name).read_text() not in corpus.train


def test_real_stdlib_corpus_is_found() -> None:
    files = stdlib_source_files()
    assert len(files) > 100
    names = {p.name for p in files}
    assert {"os.py", "__init__.py", "tokenize.py"} <= names
    assert not any("site-packages" in p.parts for p in files)


def test_hugging_face_source_on_local_files(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    rows = {"train": [("good film", 1), ("bad film", 0)] * 5, "test": [("fine film", 1), ("awful", 0)]}
    files = {}
    for split, items in rows.items():
        files[split] = str(tmp_path / f"{split}.jsonl")
        Path(files[split]).write_text("".join(json.dumps({"sentence": t, "y": y}) + "\n" for t, y in items))
    task = _task(type="classification", hf_name="json", hf_splits={"train": "train", "valid": "test"},
                 hf_options={"data_files": files, "cache_dir": str(tmp_path / "cache")}, text_field="sentence",
                 label_field="y")
    raw = load_raw_data(task)
    assert len(raw.splits["train"]) == 10 and raw.splits["valid"][1].text == "awful"
    assert raw.label_set == ["0", "1"]
