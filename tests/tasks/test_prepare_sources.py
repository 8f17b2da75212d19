"""A finished prepare met again after its sources moved, were copied without their modification times, were
deleted or changed (``synthformer.tasks.prepared.moved``); the one source a prepared run reads (a text-to-text dev
set scored on its records); what a prepare killed before recording its plan leaves behind."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from synthformer.common.config import from_dict
from synthformer.data import DataError
from synthformer.data.prepared import PreparedCorpus
from synthformer.data.prepared import format as prepared_format
from synthformer.tasks import RunConfig, TaskConfig, prepare_data
from synthformer.tasks.prepared import PrepareError, prepare_corpus

from .helpers import superglue_dir, t2t_config
from .test_prepare import WORDS, _c4, _shard_bytes


def _task(train: str, **fields: Any) -> TaskConfig:
    return from_dict(TaskConfig, {"type": "lm", "train": train, "valid_fraction": 0.2, "tokenizer": "char", **fields})


def _prepared(tmp: Path) -> tuple[TaskConfig, Path, dict[str, bytes]]:
    task = _task(_c4(tmp / "c4"))
    out = tmp / "out"
    assert prepare_corpus(task, out, shard_tokens=150).status == "prepared"
    return task, out, _shard_bytes(out)


def _sources(out: Path) -> list[dict[str, Any]]:
    return json.loads((out / "manifest.json").read_text())["sources"]["train"]


def test_sources_copied_without_their_times_are_the_same_prepare(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    task, out, shards = _prepared(tmp_path)
    for path in (tmp_path / "c4").iterdir():
        os.utime(path, (1, 1))  # cp without -p: same bytes, other times
    again = prepare_corpus(task, out, shard_tokens=150)
    assert again.status == "complete" and "3 source file(s) moved or copied" in again.note
    assert _shard_bytes(out) == shards and all(s["mtime"] == 1 for s in _sources(out))  # the manifest follows them
    assert PreparedCorpus.open(out).check_sources() == []
    hashed: list[str] = []
    real = prepared_format.sha256_file
    monkeypatch.setattr("synthformer.tasks.prepared.moved.sha256_file", lambda p: hashed.append(p) or real(p))
    third = prepare_corpus(task, out, shard_tokens=150)  # as recorded now: nothing hashed, nothing to say
    assert third.status == "complete" and third.note == "" and hashed == []


def test_sources_moved_elsewhere_are_found_by_their_content(tmp_path: Path) -> None:
    task, out, shards = _prepared(tmp_path)
    shutil.move(tmp_path / "c4", tmp_path / "scratch")
    with pytest.raises(DataError, match="no file matches"):  # another pattern that matches nothing: no excuse
        prepare_corpus(_task(str(tmp_path / "elsewhere" / "*.json.gz")), out, shard_tokens=150)
    moved = prepare_corpus(_task(str(tmp_path / "scratch" / "c4-train.*-of-01024.json.gz")), out, shard_tokens=150)
    assert moved.status == "complete" and "moved or copied" in moved.note and _shard_bytes(out) == shards
    assert all("/scratch/" in s["path"] for s in _sources(out))
    assert PreparedCorpus.open(out).check_sources() == []
    # a damaged shard is rewritten from the sources where they are now, checked against the recorded checksums
    shard = out / "train-00001.text.bin"
    shard.write_bytes(shard.read_bytes()[:-3])
    fixed = prepare_corpus(_task(str(tmp_path / "scratch" / "c4-train.*-of-01024.json.gz")), out, shard_tokens=150)
    assert fixed.status == "repaired" and _shard_bytes(out) == shards


def test_sources_deleted_after_the_prepare_leave_it_done(tmp_path: Path) -> None:
    task, out, shards = _prepared(tmp_path)
    files = sorted((tmp_path / "c4").iterdir())
    files[0].unlink()  # some deleted: the same pattern matches the others, as recorded
    some = prepare_corpus(task, out, shard_tokens=150)
    assert some.status == "complete" and f"{files[0].name}: gone since the prepare" in some.note
    for path in files[1:]:
        path.unlink()  # all deleted: the pattern matches nothing
    gone = prepare_corpus(task, out, shard_tokens=150, verify=True)
    assert gone.status == "complete" and "the sources are gone" in gone.note and "no file matches" in gone.note
    assert _shard_bytes(out) == shards
    shard = out / "train-00000.text.bin"
    shard.write_bytes(shard.read_bytes()[:-3])
    with pytest.raises(PrepareError, match=r"train-00000\.text\.bin: damaged, and rewriting it needs the sources"):
        prepare_corpus(task, out, shard_tokens=150)


def test_sources_that_hold_something_else_are_another_prepare(tmp_path: Path) -> None:
    data = tmp_path / "jsonl"
    data.mkdir()
    for k in range(3):
        (data / f"part-{k}.jsonl").write_text("".join(json.dumps({"text": f"doc {k} {i} {WORDS[i]}"}) + "\n"
                                                      for i in range(12)))
    task = _task(str(data / "part-*.jsonl"))
    out = tmp_path / "out"
    prepare_corpus(task, out, shard_tokens=150)
    shards = _shard_bytes(out)
    first = data / "part-0.jsonl"
    first.write_text(first.read_text().replace("doc 0", "doc 9"))  # same size, same name, other content
    with pytest.raises(PrepareError, match=r"holds a prepare of other source contents \(.*part-0\.jsonl: content "
                                           r"changed since the prepare \(sha256\)\).*--overwrite"):
        prepare_corpus(task, out, shard_tokens=150)
    assert _shard_bytes(out) == shards
    fewer = _task(str(data / "part-[12].jsonl"))  # a pattern for part of the files
    with pytest.raises(PrepareError, match="holds a prepare of other source contents .*named otherwise"):
        prepare_corpus(fewer, out, shard_tokens=150)
    assert prepare_corpus(task, out, shard_tokens=150, overwrite=True).status == "prepared"


def test_a_folder_left_before_the_plan_was_recorded_is_started_over(tmp_path: Path) -> None:
    task, clean, shards = _prepared(tmp_path)
    out = tmp_path / "cut"
    (out / ".parts").mkdir(parents=True)  # killed after saving its tokenizer, before plan.json
    shutil.copy(clean / "tokenizer.json", out / "tokenizer.json")
    (out / ".tmp-plan-x1y2.json").write_text("{")
    (out / ".lock").write_text("4242 elsewhere")  # the dead process's lock file: the kernel dropped its lock
    assert prepare_corpus(task, out, shard_tokens=150).status == "prepared"
    assert _shard_bytes(out) == shards and not list(out.glob(".tmp-*"))


def test_a_prepared_run_reads_a_record_scored_dev_file_and_names_it_when_gone(tmp_path: Path) -> None:
    root = superglue_dir(tmp_path)
    tasks = ["multirc", "super_glue_rte"]
    prepare_corpus(from_dict(TaskConfig, {"type": "text_to_text", "train": str(root), "options": {"tasks": tasks},
                                          "tokenizer": "char"}), tmp_path / "out")
    cfg = t2t_config(tmp_path, options={"tasks": tasks}, prepared=str(tmp_path / "out"))
    del cfg["task"]["train"], cfg["task"]["tokenizer"]
    run = from_dict(RunConfig, cfg)
    dev = root / "MultiRC" / "val.jsonl"
    train = root / "MultiRC" / "train.jsonl"
    want = [(e.task, e.label, e.group) for e in prepare_data(run).datasets["valid"].raw_examples]
    train.unlink()  # a training source: not read
    os.utime(dev, (1, 1))  # copied without its time: the same content
    assert [(e.task, e.label, e.group) for e in prepare_data(run).datasets["valid"].raw_examples] == want
    dev.write_text(dev.read_text().replace('"Ann"', '"Amy"'))
    with pytest.raises(DataError, match=r"val\.jsonl: content changed since prepare .*scoring multirc"):
        prepare_data(run)
    dev.unlink()
    with pytest.raises(DataError, match=r"MultiRC/val\.jsonl: gone since prepare: scoring multirc from the prepared "
                                        r"corpus .* put it back"):
        prepare_data(run)
