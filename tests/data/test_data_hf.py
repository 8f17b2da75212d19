"""Hugging Face ``datasets`` loading, through the real ``datasets.load_dataset`` on local files."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from synthformer.data import DataError, load_hf_dataset, load_hf_pairs, load_hf_text

datasets = pytest.importorskip("datasets")


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    # never reach the network; the generic builders work from local files
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    if hasattr(datasets.config, "HF_DATASETS_OFFLINE"):
        monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    datasets.disable_progress_bars()


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_load_classification(tmp_path: Path) -> None:
    data = _jsonl(tmp_path / "train.jsonl", [{"text": "great", "label": 1}, {"text": "awful", "label": 0}])
    examples = load_hf_dataset("json", "train", data_files={"train": str(data)},
                               cache_dir=str(tmp_path / "cache"))
    assert [(e.text, e.label, e.line) for e in examples] == [("great", "1", 1), ("awful", "0", 2)]


def test_label_outside_set_and_missing_field(tmp_path: Path) -> None:
    data = _jsonl(tmp_path / "train.jsonl", [{"text": "a", "label": 0}, {"text": "b", "label": 5}])
    kwargs = {"data_files": {"train": str(data)}, "cache_dir": str(tmp_path / "cache")}
    with pytest.raises(DataError) as info:
        load_hf_dataset("json", "train", label_set=["0", "1"], **kwargs)
    assert "json[train]:2:" in str(info.value) and "not in the label set" in str(info.value)
    with pytest.raises(DataError) as info:
        load_hf_dataset("json", "train", text_field="sentence", **kwargs)
    assert "json[train]:1:" in str(info.value) and "missing field 'sentence'" in str(info.value)


def test_empty_text_policy(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = _jsonl(tmp_path / "train.jsonl", [{"text": "a", "label": 0}, {"text": "", "label": 1}])
    kwargs = {"data_files": {"train": str(data)}, "cache_dir": str(tmp_path / "cache")}
    with pytest.raises(DataError, match=r"json\[train\]:2: empty text"):
        load_hf_dataset("json", "train", **kwargs)
    with caplog.at_level(logging.WARNING):
        assert len(load_hf_dataset("json", "train", empty="skip", **kwargs)) == 1
    assert "skipped 1 empty row(s)" in caplog.text


def test_text_and_nested_pairs(tmp_path: Path) -> None:
    data = _jsonl(tmp_path / "mt.jsonl", [
        {"translation": {"de": "Hallo", "en": "Hello"}},
        {"translation": {"de": "Danke", "en": "Thanks"}},
    ])
    kwargs = {"data_files": {"train": str(data)}, "cache_dir": str(tmp_path / "cache")}
    pairs = load_hf_pairs("json", "train", "translation.de", "translation.en", **kwargs)
    assert [(p.source, p.target) for p in pairs] == [("Hallo", "Hello"), ("Danke", "Thanks")]
    with pytest.raises(DataError, match="missing field 'translation.fr'"):
        load_hf_pairs("json", "train", "translation.de", "translation.fr", **kwargs)
    lm = _jsonl(tmp_path / "lm.jsonl", [{"text": "one"}, {"text": "two"}])
    texts = load_hf_text("json", "train", data_files={"train": str(lm)}, cache_dir=str(tmp_path / "cache"))
    assert texts == ["one", "two"]


def test_csv_builder_and_split_expression(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    data.write_text("text,label\na,x\nb,y\nc,x\n", encoding="utf-8")
    examples = load_hf_dataset("csv", "train[:2]", data_files={"train": str(data)},
                               cache_dir=str(tmp_path / "cache"))
    assert [(e.text, e.label) for e in examples] == [("a", "x"), ("b", "y")]


def test_class_label_names(tmp_path: Path) -> None:
    data = _jsonl(tmp_path / "train.jsonl", [{"text": "great", "label": 1}, {"text": "awful", "label": 0}])
    features = datasets.Features({"text": datasets.Value("string"),
                                  "label": datasets.ClassLabel(names=["neg", "pos"])})
    kwargs = {"data_files": {"train": str(data)}, "cache_dir": str(tmp_path / "cache"), "features": features}
    assert [e.label for e in load_hf_dataset("json", "train", **kwargs)] == ["1", "0"]
    named = load_hf_dataset("json", "train", use_label_names=True, **kwargs)
    assert [e.label for e in named] == ["pos", "neg"]
