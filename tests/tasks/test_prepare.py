"""``prepare_corpus`` (``synthformer prepare``): every preparable task type against its in-memory reader, worker
counts, resume after a fault, a full disk, the lock and a folder holding another prepare."""

from __future__ import annotations

import errno
import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from synthformer.common.config import ConfigError, from_dict
from synthformer.data import ByteTokenizer, DataError, SentinelTokenizer
from synthformer.data.prepared import PreparedCorpus
from synthformer.data.prepared import writer as shard_writer
from synthformer.tasks import TaskConfig, load_raw_data
from synthformer.tasks.prepared import PrepareError, check_prepared, prepare_corpus

from .helpers import LM_TEXT, glue_dir, summarization_config

WORDS = LM_TEXT.split()


def _task(**fields: Any) -> TaskConfig:
    return from_dict(TaskConfig, fields)


def _c4(folder: Path, files: int = 3, docs: int = 12) -> str:
    """C4's layout: json.gz files of {"text", "timestamp", "url"} lines; returns the glob of the train files."""
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        with gzip.open(folder / f"c4-train.{f:05d}-of-01024.json.gz", "wt", encoding="utf-8") as fh:
            for d in range(docs):
                text = " ".join(WORDS[(f * docs + d) % 40:(f * docs + d) % 40 + 5 + d])
                fh.write(json.dumps({"text": text, "timestamp": "2019-04-25T12:57:54Z", "url": f"u{d}"}) + "\n")
    return str(folder / "c4-train.*-of-01024.json.gz")


def _shard_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix in (".bin", ".npy", ".json")
            and p.name != "manifest.json"}


def _manifest(folder: Path) -> dict[str, Any]:
    manifest = json.loads((folder / "manifest.json").read_text())
    return {k: v for k, v in manifest.items() if k not in ("created", "command")}


def test_c4_layout_as_is_documents_end_with_eos(tmp_path: Path) -> None:
    task = _task(type="span_corruption", train=_c4(tmp_path / "c4"), valid_fraction=0.2, tokenizer="bpe",
                 vocab_size=300, max_len=32)
    result = prepare_corpus(task, tmp_path / "out", shard_tokens=200)
    corpus = PreparedCorpus.open(tmp_path / "out")
    tok = corpus.tokenizer()
    assert isinstance(tok, SentinelTokenizer) and result.manifest["layout"] == "documents"
    train, valid = corpus.split("train"), corpus.split("valid")
    assert len(train) + len(valid) == 36 and len(valid) > 0
    docs = [train.document(i).tolist() for i in range(len(train))]
    assert all(d[-1] == tok.eos_id and tok.eos_id not in d[:-1] for d in docs)
    texts = {tok.decode(d) for d in docs}
    assert " ".join(WORDS[0:5]) in texts  # the first document of the first file
    sources = result.manifest["sources"]["train"]
    assert len(sources) == 3 and all(len(s["sha256"]) == 64 and s["size"] > 0 for s in sources)


def test_workers_and_byte_ranges_do_not_change_the_shards(tmp_path: Path) -> None:
    text = tmp_path / "corpus.txt"
    text.write_text("\n\n".join(" ".join(WORDS[i:i + 7]) for i in range(60)) + "\n")
    task = _task(type="lm", train=str(text), valid_fraction=0.1, tokenizer="char")
    one = prepare_corpus(task, tmp_path / "one", unit_bytes=400, shard_tokens=300)
    prepare_corpus(task, tmp_path / "two", unit_bytes=400, shard_tokens=300, workers=2)
    assert one.units > 3 and _shard_bytes(tmp_path / "one") == _shard_bytes(tmp_path / "two")
    assert _manifest(tmp_path / "one") == _manifest(tmp_path / "two")
    corpus = PreparedCorpus.open(tmp_path / "one")
    total = len(corpus.split("train")) + len(corpus.split("valid"))
    assert total == 60  # every paragraph once, whatever the ranges


def _fail_after(monkeypatch: pytest.MonkeyPatch, calls: int, error: OSError | None = None) -> None:
    """Shard writes fail from the ``calls``-th on (a kill or a full disk between shards)."""
    real = shard_writer.write_bytes
    count = [0]

    def write(fh: Any, data: bytes) -> None:
        count[0] += 1
        if count[0] >= calls:
            raise error or KeyboardInterrupt()
        real(fh, data)

    monkeypatch.setattr(shard_writer, "write_bytes", write)


def test_resume_after_a_fault_is_byte_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task = _task(type="lm", train=_c4(tmp_path / "c4", files=4), valid_fraction=0.2, tokenizer="char")
    clean = prepare_corpus(task, tmp_path / "clean", shard_tokens=150)
    with monkeypatch.context() as patch:
        _fail_after(patch, 33)  # in the third unit (12 documents each), after shards of earlier ones
        with pytest.raises(KeyboardInterrupt):
            prepare_corpus(task, tmp_path / "cut", shard_tokens=150)
    assert not (tmp_path / "cut" / "manifest.json").exists()  # no reader sees a half-made corpus
    resumed = prepare_corpus(task, tmp_path / "cut", shard_tokens=150)
    assert resumed.status == "resumed" and 0 < resumed.units_kept < resumed.units
    assert _shard_bytes(tmp_path / "cut") == _shard_bytes(tmp_path / "clean")
    assert _manifest(tmp_path / "cut") == _manifest(tmp_path / "clean") and clean.status == "prepared"
    assert prepare_corpus(task, tmp_path / "cut", shard_tokens=150).status == "complete"


def test_a_killed_worker_stops_the_prepare_and_a_rerun_continues(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import signal

    task = _task(type="lm", train=_c4(tmp_path / "c4", files=4), valid_fraction=0.2, tokenizer="char")
    prepare_corpus(task, tmp_path / "clean", shard_tokens=150, workers=2)
    real = shard_writer.write_bytes

    def write(fh: Any, data: bytes) -> None:  # forked workers inherit it: the one writing the 3rd unit dies
        if "u00002" in str(getattr(fh, "name", "")):
            os.kill(os.getpid(), signal.SIGKILL)
        real(fh, data)

    with monkeypatch.context() as patch:
        patch.setattr(shard_writer, "write_bytes", write)
        with pytest.raises(PrepareError, match="worker process died .* re-run the same command"):
            prepare_corpus(task, tmp_path / "cut", shard_tokens=150, workers=2)
    assert prepare_corpus(task, tmp_path / "cut", shard_tokens=150, workers=2).status == "resumed"
    assert _shard_bytes(tmp_path / "cut") == _shard_bytes(tmp_path / "clean")


def test_full_disk_says_what_is_needed_and_rerun_continues(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task = _task(type="lm", train=_c4(tmp_path / "c4"), valid_fraction=0.2, tokenizer="char")
    with monkeypatch.context() as patch:
        _fail_after(patch, 20, OSError(errno.ENOSPC, "No space left on device", "x.bin"))
        with pytest.raises(PrepareError, match=r"no space left .* MB more needed, .* MB free .* re-run the same"):
            prepare_corpus(task, tmp_path / "out", shard_tokens=150)
    assert prepare_corpus(task, tmp_path / "out", shard_tokens=150).status == "resumed"
    PreparedCorpus.open(tmp_path / "out").verify()


def test_a_rerun_rewrites_damaged_shards(tmp_path: Path) -> None:
    task = _task(type="lm", train=_c4(tmp_path / "c4"), valid_fraction=0.2, tokenizer="char")
    prepare_corpus(task, tmp_path / "out", shard_tokens=150)
    good = _shard_bytes(tmp_path / "out")
    truncated, corrupt = tmp_path / "out" / "train-00001.text.bin", tmp_path / "out" / "train-00002.text.idx.npy"
    truncated.write_bytes(truncated.read_bytes()[:-5])
    corrupt.write_bytes(corrupt.read_bytes()[:-1] + b"\xff")
    with pytest.raises(DataError, match=r"train-00001\.text\.bin: .*\(truncated"):
        check_prepared(tmp_path / "out")
    assert prepare_corpus(task, tmp_path / "out", shard_tokens=150).status == "repaired"  # sizes: the truncated one
    with pytest.raises(DataError, match="train-00002.text.idx.npy: checksum mismatch"):
        check_prepared(tmp_path / "out")
    assert prepare_corpus(task, tmp_path / "out", shard_tokens=150, verify=True).status == "repaired"
    assert _shard_bytes(tmp_path / "out") == good and not (tmp_path / "out" / ".parts").exists()


def test_another_prepare_in_out_is_refused_unless_overwrite(tmp_path: Path) -> None:
    task = _task(type="lm", train=_c4(tmp_path / "c4"), valid_fraction=0.2, tokenizer="char")
    prepare_corpus(task, tmp_path / "out")
    longer = _task(**{**task.__dict__, "max_len": 7})  # a training setting: the same prepare
    assert prepare_corpus(longer, tmp_path / "out").status == "complete"
    other = ByteTokenizer().save(tmp_path / "byte.json")
    with pytest.raises(PrepareError, match=r"holds a different prepare \(differs in: tokenizer\)"):
        prepare_corpus(task, tmp_path / "out", tokenizer=str(other))
    byte = prepare_corpus(task, tmp_path / "out", tokenizer=str(other), overwrite=True)  # the new tokenizer is used
    assert byte.status == "prepared" and byte.manifest["tokenizer"]["kind"] == "byte"
    assert PreparedCorpus.open(tmp_path / "out").split("train").document(0)[0] == ord("d") + 4  # "def ...", byte ids
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(PrepareError, match="not empty and holds no prepare"):
        prepare_corpus(task, tmp_path / "other")


def test_a_second_prepare_on_a_locked_folder_fails_at_once(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    holder = subprocess.Popen(  # another process holds the folder's lock (fcntl.lockf, as runlock takes it)
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
         "fcntl.lockf(fd, fcntl.LOCK_EX); os.write(fd, b'4242 elsewhere'); print('locked', flush=True); "
         "time.sleep(30)", str(out / ".lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        task = _task(type="lm", train=_c4(tmp_path / "c4", files=1), valid_fraction=0.2, tokenizer="char")
        with pytest.raises(PrepareError, match=r"in use by another process \(pid 4242 on elsewhere\)"):
            prepare_corpus(task, out)
    finally:
        holder.kill()
        holder.wait()


def test_pairs_are_the_in_memory_readers_pairs(tmp_path: Path) -> None:
    config = summarization_config(tmp_path)
    task = from_dict(TaskConfig, config["task"])
    prepare_corpus(task, tmp_path / "out", shard_tokens=100)
    corpus = PreparedCorpus.open(tmp_path / "out")
    tok = corpus.tokenizer()
    raw = load_raw_data(task)
    for split in ("train", "valid", "test"):
        prepared = corpus.split(split)
        got = [(tok.decode(prepared.document(i, "source")), tok.decode(prepared.document(i, "target")))
               for i in range(len(prepared))]
        want = [(tok.decode(tok.encode(s)), tok.decode(tok.encode(t))) for s, t, _ in raw.splits[split]]
        assert got == want
        # the manifest's longest document per field (what --dry-run's truncation warning reads), over the shards
        longest = {f: max(len(prepared.document(i, f)) for i in range(len(prepared))) for f in ("source", "target")}
        assert corpus.manifest["splits"][split]["longest"] == longest


def test_parallel_files_by_prefix(tmp_path: Path) -> None:
    pairs = [("ein haus", "a house"), ("zwei katzen", "two cats"), ("der hund", "the dog"), ("ein baum", "a tree")]
    (tmp_path / "train.de").write_text("".join(f"{s}\n" for s, _ in pairs * 3))
    (tmp_path / "train.en").write_text("".join(f"{t}\n" for _, t in pairs * 3))
    task = _task(type="seq2seq", train=str(tmp_path / "train"), format="parallel", source_lang="de",
                 target_lang="en", valid_fraction=0.3, tokenizer="char")
    manifest = prepare_corpus(task, tmp_path / "out").manifest
    assert [Path(s["path"]).name for s in manifest["sources"]["train"]] == ["train.de", "train.en"]
    corpus = PreparedCorpus.open(tmp_path / "out")
    tok = corpus.tokenizer()
    got = {(tok.decode(sp.document(i, "source")), tok.decode(sp.document(i, "target")))
           for sp in (corpus.split("train"), corpus.split("valid")) for i in range(len(sp))}
    counts = [manifest["splits"][split]["documents"] for split in ("train", "valid")]
    assert got == set(pairs) and sum(counts) == 12 and min(counts) > 0


def test_text_to_text_one_split_per_task_and_dev_set(tmp_path: Path) -> None:
    task = _task(type="text_to_text", train=str(glue_dir(tmp_path)), options={"tasks": ["rte", "sst2"]},
                 tokenizer="char")
    manifest = prepare_corpus(task, tmp_path / "out").manifest
    assert manifest["groups"] == {"train": {"rte": "train.rte", "sst2": "train.sst2"},
                                  "valid": {"rte": "valid.rte", "sst2": "valid.sst2"}}
    corpus = PreparedCorpus.open(tmp_path / "out")
    rte = corpus.split("train.rte")
    tok = corpus.tokenizer()
    assert len(rte) == 20 and tok.decode(rte.document(0, "source")).startswith("rte sentence1: The cat sat")
    assert tok.decode(rte.document(0, "target")) == "entailment"
    assert [Path(s["path"]).name for s in manifest["sources"]["valid.sst2"]] == ["dev.tsv"]  # fingerprinted


def test_every_preparable_type_names_a_known_layout() -> None:
    from synthformer.data.prepared import LAYOUTS
    from synthformer.tasks import get_task_type, list_task_types

    preparations = {name: get_task_type(name).preparation() for name in list_task_types()}
    layouts = {name: p.layout for name, p in preparations.items() if p is not None}
    assert set(layouts) >= {"lm", "span_corruption", "seq2seq", "summarization", "text_to_text", "dialogue"}
    assert set(layouts.values()) <= set(LAYOUTS)


def test_hf_streaming_through_datasets(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    files = [tmp_path / "rows-0.jsonl", tmp_path / "rows-1.jsonl"]
    for k, path in enumerate(files):
        lines = [json.dumps({"text": " ".join(WORDS[i:i + 6])}) for i in range(15 * k, 15 * k + 15)]
        path.write_text("".join(f"{line}\n" for line in lines))
    task = _task(type="lm", hf_name="json", hf_options={"data_files": {"train": [str(f) for f in files],
                                                                       "valid": str(files[0])}},
                 hf_splits={"train": "train", "valid": "valid"}, tokenizer="byte")
    result = prepare_corpus(task, tmp_path / "out", workers=2)
    manifest = result.manifest
    corpus = PreparedCorpus.open(tmp_path / "out")
    assert result.units == 3 and manifest["splits"]["train"]["documents"] == 30  # a unit per file of the split
    hf, *local = manifest["sources"]["train"]
    assert hf["path"] == "hf:json[train]" and [e["path"] for e in local] == [str(f.resolve()) for f in files]
    assert all(len(e["sha256"]) == 64 for e in local)
    train = corpus.split("train")
    assert [corpus.tokenizer().decode(train.document(i)) for i in (0, 29)] == [" ".join(WORDS[0:6]),
                                                                               " ".join(WORDS[29:35])]


def test_hf_sliced_splits_are_the_rows_datasets_gives(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"text": f"row {i}"}) + "\n" for i in range(30)))
    files = {"data_files": str(rows)}
    task = _task(type="lm", hf_name="json", hf_options=files, hf_splits={"train": "train[:85%]",
                                                                          "valid": "train[85%:]"}, tokenizer="byte")
    corpus = PreparedCorpus.open(prepare_corpus(task, tmp_path / "out").folder)
    tok = corpus.tokenizer()
    for ours, theirs in task.hf_splits.items():
        rows_read = datasets.load_dataset("json", split=theirs, cache_dir=str(tmp_path / "cache"), **files)
        want = [r["text"] for r in rows_read]
        split = corpus.split(ours)
        assert [tok.decode(split.document(i)) for i in range(len(split))] == want


def test_the_tokenizer_sample_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import synthformer.tasks.prepared.tokenizer as tokenizer_module

    seen: list[int] = []
    real = tokenizer_module.build_tokenizer

    def build(kind: str, texts: list[str], *args: Any, **kwargs: Any) -> Any:
        seen.append(sum(len(t.encode()) for t in texts))
        return real(kind, texts, *args, **kwargs)

    monkeypatch.setattr(tokenizer_module, "build_tokenizer", build)
    task = _task(type="lm", train=_c4(tmp_path / "c4", files=4), valid_fraction=0.2, tokenizer="char")
    prepare_corpus(task, tmp_path / "out", sample_bytes=200)
    assert 200 <= seen[0] < 200 + 200  # stops at the first document past the bound


def test_types_that_cannot_be_prepared_say_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'classification' data cannot be prepared .*supports .*dialogue"):
        prepare_corpus(_task(type="classification", train=str(tmp_path / "x.txt"), valid_fraction=0.2),
                       tmp_path / "o")
    with pytest.raises(ConfigError, match="task.valid: prepare needs a validation split"):
        prepare_corpus(_task(type="lm", train=_c4(tmp_path / "c4", files=1)), tmp_path / "o")
