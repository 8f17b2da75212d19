"""From a source's rows (or files) to the local layout of a named data set: one ``fetch_<name>`` per data set.

Each takes ``(entry, location, out, loader)``: ``location`` is the source's hub id or URL (or a local folder or
file given instead, ``synthformer data get NAME --from PATH``), ``out`` the empty folder to fill and ``loader``
a :class:`~.fetch.Loader` (``rows``: the rows of one split through ``datasets.load_dataset``; ``download``: a
file or an extracted archive in the Hugging Face cache). The layouts are those the task readers read (the
project's copies in ``../shared/data``): plain text, ``label text`` lines, line-aligned parallel files, JSON
lines, CSV, the official GLUE TSVs and SuperGLUE folders, DailyDialog's ``__eou__`` lines, ParlAI's text files.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fetch import Loader
    from .model import DataSet

__all__ = ["GLUE_CONFIGS", "SUPERGLUE_CONFIGS"]

#: The hub split names of our splits (a data set without one of them simply lacks that split).
_HUB_SPLITS = {"train": "train", "valid": "validation", "test": "test"}


def _one_line(text: str) -> str:
    """A text as one field of a line-based file: tabs and line breaks would start a new field or example."""
    return re.sub(r"[\t\r\n]+", " ", text).strip()


def _write_lines(path: Path, lines: Iterable[str]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            fh.write(line + "\n")
            count += 1
    return count


def _write_jsonl(path: Path, records: Iterable[Mapping[str, Any]]) -> int:
    return _write_lines(path, (json.dumps(dict(r), ensure_ascii=False) for r in records))


def _hub_splits(entry: DataSet, location: str, loader: Loader, config: str | None = None,
                splits: Mapping[str, str] = _HUB_SPLITS) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(our split, its rows) for every split of ``splits`` the source has (train must be there)."""
    options = dict(entry.source.options)
    for ours, theirs in splits.items():
        rows = loader.rows(location, config, theirs, required=ours == "train", **options)
        if rows is not None:
            yield ours, rows


# -- plain files ------------------------------------------------------------------------------------------------

def fetch_text_file(entry: DataSet, location: str, out: Path, loader: Loader) -> None:
    """One text file, whole (Tiny Shakespeare's ``input.txt``), through ``datasets``' ``text`` builder."""
    rows = loader.rows("text", None, "train", data_files={"train": location}, sample_by="document")
    assert rows is not None
    (out / entry.splits["train"]).write_text("".join(r["text"] for r in rows), encoding="utf-8", newline="")


def fetch_enwik8_prefix(entry: DataSet, location: str, out: Path, loader: Loader) -> None:
    """The first 1,071,051 bytes of enwik8 (the size of the project's copy)."""
    folder = loader.download(location)
    source = folder / "enwik8" if folder.is_dir() else folder
    with source.open("rb") as fh:
        (out / entry.splits["train"]).write_bytes(fh.read(1_071_051))


# -- classification -------------------------------------------------------------------------------------------

def fetch_imdb(entry: DataSet, location: str, out: Path, loader: Loader) -> None:
    """``{"id", "label", "text"}`` lines (label 0 negative, 1 positive), train and test."""
    for split, rows in _hub_splits(entry, location, loader, splits={"train": "train", "test": "test"}):
        _write_jsonl(out / entry.splits[split], ({"id": i, "label": int(r["label"]), "text": r["text"]}
                                                 for i, r in enumerate(rows)))


def fetch_sst2(entry: DataSet, location: str, out: Path, loader: Loader) -> None:
    """``label text`` lines (harvardnlp's stsa.binary files)."""
    for split, rows in _hub_splits(entry, location, loader):
        _write_lines(out / entry.splits[split], (f"{int(r['label'])} {_one_line(r['text'])}" for r in rows))


# -- translation, summarization, dialogue --------------------------------------------------------------------

def fetch_multi30k(entry: DataSet, location: str, out: Path, loader: Loader) -> None:
    """Line-aligned ``PREFIX.de`` / ``PREFIX.en``."""
    for split, rows in _hub_splits(entry, location, loader):
        for lang in ("de", "en"):
            _write_lines(out / f"{entry.splits[split]}.{lang}", (_one_line(r[lang]) for r in rows))


def fetch_cnn_dailymail_sample(entry: DataSet, location: str, out: Path, loader: Loader) -> None:
    """The first 100 training articles as ``,id,article,highlights`` CSV (pandas' layout, as in the sample)."""
    options = dict(entry.source.options)
    rows = loader.rows(location, entry.source.configs[0], "train", limit=100, **options)
    assert rows is not None
    with (out / entry.splits["train"]).open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["", "id", "article", "highlights"])
        for i, r in enumerate(rows):
            writer.writerow([i, r["id"], r["article"], r["highlights"]])


def fetch_samsum(entry: DataSet, location: str, out: Path, loader: Loader) -> None:
    """``{"id", "document", "summary"}`` lines (``document``: the dialogue, unchanged)."""
    for split, rows in _hub_splits(entry, location, loader):
        _write_jsonl(out / entry.splits[split],
                     ({"id": r["id"], "document": r["dialogue"], "summary": r["summary"]} for r in rows))


def fetch_dialogsum(entry: DataSet, location: str, out: Path, loader: Loader) -> None:
    """``{"id", "document", "summary", "topic"}`` lines; a test dialogue given once per human summary becomes one
    row with ``summary`` (the first) and ``references`` (all), as in the official test file."""
    for split, rows in _hub_splits(entry, location, loader):
        records: list[dict[str, Any]] = []
        for r in rows:
            record = {"id": r["id"], "document": r["dialogue"], "summary": r["summary"], "topic": r.get("topic", "")}
            if split == "test" and records and records[-1]["document"] == record["document"]:
                records[-1]["references"].append(record["summary"])
                records[-1]["topics"].append(record["topic"])
                continue
            if split == "test":
                record.update(id=re.sub(r"_\d+$", "", str(record["id"])), references=[record["summary"]],
                              topics=[record["topic"]])
            records.append(record)
        _write_jsonl(out / entry.splits[split], records)


def fetch_dailydialog(entry: DataSet, location: str, out: Path, loader: Loader) -> None:
    """One dialogue a line, each turn followed by ``__eou__`` (the original files), with the act and emotion
    files beside them."""
    for split, rows in _hub_splits(entry, location, loader):
        name = entry.splits[split]
        _write_lines(out / name, (" ".join(f"{_one_line(t)} __eou__" for t in r["dialog"]) for r in rows))
        for labels in ("act", "emotion"):
            _write_lines(out / name.replace("dialogues_", f"dialogues_{labels}_"),
                         (" ".join(str(x) for x in r[labels]) + " " for r in rows))


def fetch_personachat(entry: DataSet, location: str, out: Path, loader: Loader) -> None:
    """ParlAI's ``*_self_original_no_cands.txt`` files, from the ConvAI2 archive (or a folder holding them)."""
    folder = loader.download(location)
    for name in entry.splits.values():
        found = sorted(folder.rglob(name)) if folder.is_dir() else []
        if not found:
            raise FileNotFoundError(f"{location}: no {name} in it")
        shutil.copyfile(found[0], out / name)


# -- Long Range Arena, CIFAR-10 -------------------------------------------------------------------------------

def _copy_head(source: Path, target: Path, lines: int | None) -> None:
    with source.open("r", encoding="utf-8", newline="") as src, target.open("w", encoding="utf-8", newline="") as dst:
        for i, line in enumerate(src):
            if lines is not None and i >= lines:
                break
            dst.write(line)


def _find(folder: Path, pattern: str, location: str) -> Path:
    found = sorted(folder.rglob(pattern)) if folder.is_dir() else []
    if not found:
        raise FileNotFoundError(f"{location}: no {pattern} in it")
    return found[0]


def fetch_lra_listops_sample(entry: DataSet, location: str, out: Path, loader: Loader) -> None:
    """The header and first 2,000 / 200 / 200 rows of LRA's ``listops-1000/basic_{train,val,test}.tsv``."""
    folder = loader.download(location)
    for split, rows in (("train", 2000), ("valid", 200), ("test", 200)):
        name = entry.splits[split]
        _copy_head(_find(folder, name, location), out / name, rows + 1)  # + the header line


def fetch_lra_aan(entry: DataSet, location: str, out: Path, loader: Loader) -> None:
    """LRA's Retrieval files ``new_aan_pairs.{train,eval,test}.tsv``, whole."""
    folder = loader.download(location)
    for name in entry.splits.values():
        shutil.copyfile(_find(folder, name, location), out / name)


def fetch_cifar10(entry: DataSet, location: str, out: Path, loader: Loader) -> None:
    """CIFAR-10's python batches folder ``cifar-10-batches-py``."""
    folder = loader.download(location)
    batches = folder if folder.name == "cifar-10-batches-py" else _find(folder, "cifar-10-batches-py", location)
    shutil.copytree(batches, out / "cifar-10-batches-py")


# -- GLUE and SuperGLUE -----------------------------------------------------------------------------------------

#: GLUE: hub configuration -> (folder, header or None (CoLA has none), a row's columns from a hub row).
_GLUE: dict[str, tuple[str, list[str] | None, Any]] = {
    "cola": ("CoLA", None, lambda r: ["hub", str(r["label"]), "" if r["label"] else "*", r["sentence"]]),
    "sst2": ("SST-2", ["sentence", "label"], lambda r: [r["sentence"], str(r["label"])]),
    "mrpc": ("MRPC", ["\ufeffQuality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
             lambda r: [str(r["label"]), str(r["idx"]), str(r["idx"]), r["sentence1"], r["sentence2"]]),
    "stsb": ("STS-B", ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1",
                       "sentence2", "score"],
             lambda r: [str(r["idx"]), "hub", "hub", "-", str(r["idx"]), "hub", "hub", r["sentence1"],
                        r["sentence2"], f"{float(r['label']):.3f}"]),
    "rte": ("RTE", ["index", "sentence1", "sentence2", "label"],
            lambda r: [str(r["idx"]), r["sentence1"], r["sentence2"], ("entailment", "not_entailment")[r["label"]]]),
    "qnli": ("QNLI", ["index", "question", "sentence", "label"],
             lambda r: [str(r["idx"]), r["question"], r["sentence"], ("entailment", "not_entailment")[r["label"]]]),
}
GLUE_CONFIGS: tuple[str, ...] = tuple(_GLUE)

#: SuperGLUE: hub configuration -> (folder, hub split -> file).
_SUPERGLUE: dict[str, tuple[str, dict[str, str]]] = {
    **{config: (folder, {"train": "train.jsonl", "validation": "val.jsonl", "test": "test.jsonl"})
       for config, folder in (("boolq", "BoolQ"), ("cb", "CB"), ("copa", "COPA"), ("multirc", "MultiRC"),
                              ("rte", "RTE"), ("wic", "WiC"), ("wsc.fixed", "WSC"))},
    "axb": ("AX-b", {"test": "AX-b.jsonl"}),  # the diagnostics' labelled rows are the hub's test split
    "axg": ("AX-g", {"test": "AX-g.jsonl"}),
}
SUPERGLUE_CONFIGS: tuple[str, ...] = tuple(_SUPERGLUE)


def fetch_glue(entry: DataSet, location: str, out: Path, loader: Loader) -> None:
    """``<TASK>/{train,dev}.tsv`` in the official layout (tab-separated, no quoting; CoLA without a header)."""
    for config in entry.source.configs:
        folder, header, columns = _GLUE[config]
        for split, file in (("train", "train.tsv"), ("validation", "dev.tsv")):
            rows = loader.rows(location, config, split, required=False, **entry.source.options)
            if rows is None:
                continue
            body = ("\t".join(_one_line(c) for c in columns(r)) for r in rows)
            _write_lines(out / folder / file, [*(["\t".join(header)] if header else []), *body])


def fetch_superglue(entry: DataSet, location: str, out: Path, loader: Loader) -> None:
    """``<Task>/{train,val,test}.jsonl`` (and ``AX-b/AX-b.jsonl``, ``AX-g/AX-g.jsonl``): the hub's rows, whose
    field names the SuperGLUE readers take as they take the official ones."""
    for config in entry.source.configs:
        folder, files = _SUPERGLUE[config]
        for split, file in files.items():
            rows = loader.rows(location, config, split, required=False, **entry.source.options)
            if rows is not None:
                _write_jsonl(out / folder / file, rows)
