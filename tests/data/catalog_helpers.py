"""Helpers of the named-data-set tests: a machine without the project's copies, and hub-layout folders made from
the shared copies (the layout of the data set on the Hugging Face hub: JSON lines with the hub's field names and
split names), so that the real fetch path (``datasets.load_dataset`` on a folder, then the conversion) runs
without the network."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import synthformer.data.catalog.locate as locate

#: Rows kept of each split: the comparisons need a few, not all.
ROWS = 40


def no_local_copies(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, offline: bool) -> Path:
    """This process as on a user's clone: cwd a fresh folder (no ``../shared``), ``$SYNTHFORMER_DATA`` an empty
    folder, no checkout's ``../shared/data``, the fetched-copy cache empty; ``offline``: the Hugging Face offline
    switch set. Returns the working directory."""
    work = tmp_path / "clone" / "work"
    work.mkdir(parents=True)
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("SYNTHFORMER_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("SYNTHFORMER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(locate, "_checkout_shared", lambda: None)
    for name in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    if offline:
        monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    return work


def _lines(path: Path, n: int = ROWS) -> list[str]:
    with path.open(encoding="utf-8", newline="") as fh:
        return [line.rstrip("\r\n") for _, line in zip(range(n), fh, strict=False)]


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in _lines(path)]


def sst2(shared: Path, local: Path, hub: Path) -> None:
    """stsa.binary ``label text`` lines -> SetFit/sst2's ``{train,dev,test}.jsonl`` (text, label, label_text)."""
    for split, theirs in (("train", "train"), ("dev", "dev"), ("test", "test")):
        lines = _lines(shared / "sst2" / f"stsa.binary.{split}")
        (local / "sst2").mkdir(parents=True, exist_ok=True)
        (local / "sst2" / f"stsa.binary.{split}").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        rows = [{"text": line[2:], "label": int(line[0]), "label_text": ("negative", "positive")[int(line[0])]}
                for line in lines]
        _jsonl(hub / f"{theirs}.jsonl", rows)


def multi30k(shared: Path, local: Path, hub: Path) -> None:
    """``PREFIX.{de,en}`` -> bentrevett/multi30k's ``{train,val,test}.jsonl`` (en, de)."""
    for prefix, theirs in (("train", "train"), ("val", "val"), ("test_2016_flickr", "test")):
        sides = {lang: _lines(shared / "multi30k" / f"{prefix}.{lang}") for lang in ("de", "en")}
        for lang, lines in sides.items():
            (local / "multi30k").mkdir(parents=True, exist_ok=True)
            (local / "multi30k" / f"{prefix}.{lang}").write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
        _jsonl(hub / f"{theirs}.jsonl", [{"en": en, "de": de} for de, en in zip(sides["de"], sides["en"], strict=True)])


def samsum(shared: Path, local: Path, hub: Path) -> None:
    """``{"id", "document", "summary"}`` -> the hub's rows (``dialogue``), under its export's folder ``samsum/``."""
    for ours, theirs in (("train", "train"), ("valid", "validation"), ("test", "test")):
        rows = _records(shared / "samsum" / f"{ours}.jsonl")
        _jsonl(local / "samsum" / f"{ours}.jsonl", rows)
        _jsonl(hub / "samsum" / f"{theirs}.jsonl",
               [{"id": r["id"], "dialogue": r["document"], "summary": r["summary"]} for r in rows])


def dialogsum(shared: Path, local: Path, hub: Path) -> None:
    """``{"id", "document", "summary", "topic"}`` (test: ``references``) -> knkarthick/dialogsum's rows, a test
    dialogue once per reference summary (``test_0_1``, ...)."""
    for ours, theirs in (("train", "train"), ("valid", "validation"), ("test", "test")):
        rows = _records(shared / "dialogsum" / f"{ours}.jsonl")
        _jsonl(local / "dialogsum" / f"{ours}.jsonl", rows)
        hub_rows = []
        for r in rows:
            topics = r.get("topics") or [r["topic"]] * len(r.get("references", [r["summary"]]))
            for k, (summary, topic) in enumerate(zip(r.get("references", [r["summary"]]), topics, strict=True)):
                ident = f"{r['id']}_{k + 1}" if "references" in r else r["id"]
                hub_rows.append({"id": ident, "dialogue": r["document"], "summary": summary, "topic": topic})
        _jsonl(hub / f"{theirs}.jsonl", hub_rows)


def dailydialog(shared: Path, local: Path, hub: Path) -> None:
    """``dialogues_*.txt`` (and the act / emotion files) -> the hub's parquet export's rows, ``default/<split>/``."""
    for split in ("train", "validation", "test"):
        files = {kind: _lines(shared / "dailydialog" / f"dialogues_{kind}{split}.txt")
                 for kind in ("", "act_", "emotion_")}
        for kind, lines in files.items():
            (local / "dailydialog").mkdir(parents=True, exist_ok=True)
            (local / "dailydialog" / f"dialogues_{kind}{split}.txt").write_text(
                "".join(f"{x}\n" for x in lines), encoding="utf-8")
        rows = [{"dialog": [t.strip() for t in line.split("__eou__")[:-1]],
                 "act": [int(x) for x in act.split()], "emotion": [int(x) for x in emotion.split()]}
                for line, act, emotion in zip(files[""], files["act_"], files["emotion_"], strict=True)]
        _jsonl(hub / "default" / split / "0000.jsonl", rows)


#: Data set -> (its shipped config, the function making the local copy and the hub-layout folder).
HUB_LAYOUTS: dict[str, tuple[str, Callable[[Path, Path, Path], None]]] = {
    "sst2": ("cls_sst2.yaml", sst2),
    "multi30k": ("mt_multi30k_de_en.yaml", multi30k),
    "samsum": ("table3_samsum.yaml", samsum),
    "dialogsum": ("table3_dialogsum.yaml", dialogsum),
    "dailydialog": ("table3_dailydialog.yaml", dailydialog),
}
