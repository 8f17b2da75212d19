"""One unit of a prepare, in whatever process runs it: read its examples, tokenize them in batches, write its
shards under ``DIR/.parts/u<index>/``, hash its source files, and record it as done (``done.json``, written last).

Errors travel back as plain data (:func:`run_unit` never raises): exceptions such as ``DataError`` do not survive
pickling between processes with their message intact.
"""

from __future__ import annotations

import errno
import json
import shutil
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from synthformer.common import ConfigError, atomic_write_text
from synthformer.data import TOKENIZER, DataError, ShardWriter, Tokenizer, load_tokenizer, sha256_file

from .plan import Context, Unit, unit_records
from .preparation import Preparation

__all__ = ["DONE", "PARTS", "load_done", "part_dir", "run_unit"]

PARTS = ".parts"
DONE = "done.json"
_BATCH_DOCS = 256
_BATCH_CHARS = 1 << 22
_TOKENIZERS: dict[str, Tokenizer] = {}
Report = Callable[[int, int], None]


def part_dir(folder: Path, unit: Unit) -> Path:
    """Where ``unit`` writes its shards."""
    return folder / PARTS / f"u{unit.index:05d}"


def _tokenizer(folder: str) -> Tokenizer:
    """The prepare's tokenizer, read once per process (by content: a later prepare into the same folder may have
    another)."""
    path = Path(folder) / TOKENIZER
    key = f"{path.resolve()}:{sha256_file(path)}"
    if key not in _TOKENIZERS:
        _TOKENIZERS.clear()
        _TOKENIZERS[key] = load_tokenizer(path)
    return _TOKENIZERS[key]


class _Progress:
    """Bytes read and documents written, passed on to ``report`` at most every 0.2 s (and never more bytes than the
    unit holds: read-ahead past a range's end is not progress)."""

    def __init__(self, report: Report | None, limit: int) -> None:
        self.report, self.limit = report, limit
        self.bytes = self.docs = self.sent_bytes = self.sent_docs = 0
        self.last = time.monotonic()

    def read(self, n: int) -> None:
        self.bytes += n
        self._maybe_send()

    def wrote(self, n: int) -> None:
        self.docs += n
        self._maybe_send()

    def _maybe_send(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.report is None or not (force or now - self.last > 0.2):
            return
        capped = min(self.bytes, self.limit) if self.limit else self.bytes
        self.report(capped - self.sent_bytes, self.docs - self.sent_docs)
        self.sent_bytes, self.sent_docs, self.last = capped, self.docs, now

    def finish(self) -> None:
        self.bytes = max(self.bytes, self.limit)
        self._maybe_send(force=True)


def _encode(tok: Tokenizer, preparation: Preparation, batch: list[tuple[str, tuple[str, ...]]],
            writers: dict[str, ShardWriter], make: Callable[[str], ShardWriter]) -> None:
    rows = preparation.encode(tok, [texts for _, texts in batch], preparation.layout)
    for (split, _), ids in zip(batch, rows, strict=True):
        if split not in writers:
            writers[split] = make(split)
        writers[split].add(ids)


def process_unit(ctx: Context, unit: Unit, report: Report | None = None) -> dict[str, Any]:
    """Tokenize ``unit`` into its part folder; return (and write as ``done.json``) its record."""
    folder = Path(ctx.folder)
    out = part_dir(folder, unit)
    shutil.rmtree(out, ignore_errors=True)  # a unit that did not finish starts over
    # exist_ok: whatever could not be removed is no part of this unit (done.json lists its files, with checksums)
    out.mkdir(parents=True, exist_ok=True)
    tok = _tokenizer(ctx.folder)
    preparation = ctx.preparation
    progress = _Progress(report, unit.size)
    writers: dict[str, ShardWriter] = {}

    def make(split: str) -> ShardWriter:
        return ShardWriter(out, lambda k: f"{split}-{k:05d}", ctx.fields, ctx.dtype, ctx.shard_tokens)

    batch: list[tuple[str, tuple[str, ...]]] = []
    chars = 0
    # characters of the first field per split: an LM's bits per character from subword tokens needs them
    split_chars: dict[str, int] = {}
    try:
        for position, texts in unit_records(ctx, unit, progress.read):
            split = ctx.split_of(unit, position)
            batch.append((split, texts))
            chars += sum(len(t) for t in texts)
            split_chars[split] = split_chars.get(split, 0) + len(texts[0])
            if len(batch) >= _BATCH_DOCS or chars >= _BATCH_CHARS:
                _encode(tok, preparation, batch, writers, make)
                progress.wrote(len(batch))
                batch, chars = [], 0
        if batch:
            _encode(tok, preparation, batch, writers, make)
            progress.wrote(len(batch))
        shards = {split: w.close() for split, w in writers.items()}
    except BaseException:
        for w in writers.values():
            w.abort()
        raise
    hashes = {path: sha256_file(path) for path in unit.hash_files}
    record = {"unit": unit.index, "shards": shards, "sha256": hashes, "documents": progress.docs,
              "characters": split_chars}
    atomic_write_text(out / DONE, json.dumps(record, indent=1) + "\n")
    progress.finish()
    return record


def load_done(folder: Path, unit: Unit) -> dict[str, Any] | None:
    """The record of a finished unit whose shard files are all there with their checksums, else None."""
    out = part_dir(folder, unit)
    try:
        record = json.loads((out / DONE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for shards in record.get("shards", {}).values():
        for shard in shards:
            for file, info in shard["files"].items():
                path = out / file
                if not path.is_file() or path.stat().st_size != info["bytes"] or sha256_file(path) != info["sha256"]:
                    return None
    return record


def run_unit(ctx: Context, unit: Unit, report: Report | None = None) -> dict[str, Any]:
    """:func:`process_unit`, with any error turned into ``{"error": kind, "message": ...}`` (kinds: ``data``,
    ``config``, ``nospace``, ``os``, ``bug``)."""
    try:
        return process_unit(ctx, unit, report)
    except DataError as err:
        return {"error": "data", "message": str(err)}
    except ConfigError as err:
        return {"error": "config", "message": str(err)}
    except OSError as err:
        kind = "nospace" if err.errno == errno.ENOSPC else "os"
        return {"error": kind, "message": f"{err.filename or unit.source}: {err.strerror or err}"}
    except Exception:  # a bug: its traceback goes to the main process
        return {"error": "bug", "message": traceback.format_exc()}
