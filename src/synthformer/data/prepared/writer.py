"""Writing shards: :class:`ShardWriter` streams documents into shard files of about ``shard_tokens`` tokens, and
:func:`write_manifest` / :func:`write_prepared` finish a folder.

A shard's files are written under temporary names (``.tmp`` suffix), fsynced and renamed only once the shard is
complete, and their sha256 and size computed while writing: a reader (or a resumed prepare) never sees half a
shard. Memory stays flat: tokens go to the file as they come; only the offsets of the open shard are kept.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from synthformer.common import atomic_write_text, fsync_path
from synthformer.data.tokenizer_base import Tokenizer

from .format import FORMAT, LAYOUTS, MANIFEST, TOKENIZER, VERSION, dtype_for, np_dtype, sha256_file, shard_name

__all__ = ["ShardWriter", "manifest_shard", "write_manifest", "write_prepared"]

#: Default shard size in tokens (per field, summed): 2^26, 128 MiB of uint16 ids.
DEFAULT_SHARD_TOKENS = 1 << 26


def write_bytes(fh: BinaryIO, data: bytes) -> None:
    """Every write of shard data goes through here (one place to fail: tests simulate a full disk on it)."""
    fh.write(data)


class _FieldFile:
    """The open ``.bin`` of one field of the shard being written: its hash, size and document offsets."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tmp = path.with_name(path.name + ".tmp")
        self.fh: BinaryIO = open(self.tmp, "wb")  # noqa: SIM115 - closed by finish() / abort()
        self.digest = hashlib.sha256()
        self.offsets = [0]

    def add(self, data: bytes, count: int) -> None:
        write_bytes(self.fh, data)
        self.digest.update(data)
        self.offsets.append(self.offsets[-1] + count)

    def finish(self) -> dict[str, dict[str, Any]]:
        """Close, fsync and rename the ``.bin``; write the ``.idx.npy`` the same way. Their sha256 and sizes."""
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()
        buf = io.BytesIO()
        np.save(buf, np.asarray(self.offsets, dtype="<i8"), allow_pickle=False)
        idx_bytes = buf.getvalue()
        idx_path = self.path.with_name(self.path.name.removesuffix(".bin") + ".idx.npy")
        idx_tmp = idx_path.with_name(idx_path.name + ".tmp")
        with open(idx_tmp, "wb") as fh:
            write_bytes(fh, idx_bytes)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(self.tmp, self.path)
        os.replace(idx_tmp, idx_path)
        return {self.path.name: {"sha256": self.digest.hexdigest(), "bytes": self.path.stat().st_size},
                idx_path.name: {"sha256": hashlib.sha256(idx_bytes).hexdigest(), "bytes": len(idx_bytes)}}

    def abort(self) -> None:
        self.fh.close()
        self.tmp.unlink(missing_ok=True)


class ShardWriter:
    """Writes documents (one token sequence per field) into shards ``stem(0)``, ``stem(1)``, ... in ``folder``.

    Args:
        folder: where the shard files go.
        stem: shard number -> file stem (``train-00000``; a prepare writes parts under other names first).
        fields: the layout's fields, in order.
        dtype: ``"uint16"`` or ``"uint32"``.
        shard_tokens: a shard is closed once its tokens (all fields) reach this many.

    :attr:`shards` lists each finished shard: ``{"stem", "documents", "tokens": {field: n}, "longest": {field: n},
    "files": {file name: {"sha256", "bytes"}}}`` (``longest``: the most tokens of one document, so that a plan can
    tell a run whose lengths would truncate examples read whole without opening a shard).
    """

    def __init__(self, folder: str | os.PathLike[str], stem: Callable[[int], str], fields: Sequence[str],
                 dtype: str, shard_tokens: int = DEFAULT_SHARD_TOKENS) -> None:
        if shard_tokens < 1:
            raise ValueError(f"shard_tokens must be >= 1, got {shard_tokens}")
        self.folder = Path(folder)
        self.stem = stem
        self.fields = list(fields)
        self.dtype = np_dtype(dtype)
        self.limit = np.iinfo(self.dtype).max
        self.shard_tokens = shard_tokens
        self.shards: list[dict[str, Any]] = []
        self._open: dict[str, _FieldFile] | None = None
        self._stem = ""
        self._tokens = 0
        self._longest: dict[str, int] = {}

    def add(self, ids: Sequence[Sequence[int] | np.ndarray]) -> None:
        """Append one document: its token ids for each field, in :attr:`fields` order."""
        if len(ids) != len(self.fields):
            raise ValueError(f"expected {len(self.fields)} fields {self.fields}, got {len(ids)}")
        if self._open is None:
            stem = self._stem = self.stem(len(self.shards))
            self._open = {f: _FieldFile(self.folder / f"{stem}.{f}.bin") for f in self.fields}
        for field, seq in zip(self.fields, ids, strict=True):
            array = np.asarray(seq, dtype=np.int64)
            if array.size and (array.min() < 0 or array.max() > self.limit):
                raise ValueError(f"token id out of the range of {self.dtype.name}: [{array.min()}, {array.max()}]")
            self._open[field].add(array.astype(self.dtype).tobytes(), int(array.size))
            self._tokens += int(array.size)
            self._longest[field] = max(self._longest.get(field, 0), int(array.size))
        if self._tokens >= self.shard_tokens:
            self.flush()

    def flush(self) -> None:
        """Close the open shard (if any document went into it)."""
        if self._open is None:
            return
        files: dict[str, dict[str, Any]] = {}
        for f in self.fields:
            files.update(self._open[f].finish())
        first = self._open[self.fields[0]]
        self.shards.append({"stem": self._stem, "documents": len(first.offsets) - 1,
                            "tokens": {f: self._open[f].offsets[-1] for f in self.fields},
                            "longest": {f: self._longest.get(f, 0) for f in self.fields}, "files": files})
        self._open, self._tokens, self._longest = None, 0, {}

    def close(self) -> list[dict[str, Any]]:
        """Finish the last shard; return :attr:`shards`."""
        self.flush()
        return self.shards

    def abort(self) -> None:
        """Drop the open shard's temporary files (finished shards stay)."""
        for handle in (self._open or {}).values():
            handle.abort()
        self._open = None


def manifest_shard(shard: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The manifest entry of a shard written as ``shard["stem"]`` and named ``name`` in the manifest (its file
    names rewritten to that name)."""
    old = shard["stem"]
    entry: dict[str, Any] = {"name": name, "documents": shard["documents"], "tokens": dict(shard["tokens"]),
                             "sha256": {}, "bytes": {}}
    if "longest" in shard:  # absent from the parts of a prepare interrupted before the key existed
        entry["longest"] = dict(shard["longest"])
    for file, info in shard["files"].items():
        new_file = name + file[len(old):]
        entry["sha256"][new_file] = info["sha256"]
        entry["bytes"][new_file] = info["bytes"]
    return entry


def write_manifest(folder: str | os.PathLike[str], manifest: Mapping[str, Any]) -> Path:
    """Write ``manifest.json`` atomically (the last file of a prepare: its presence means the folder is complete)."""
    import json

    path = Path(folder) / MANIFEST
    atomic_write_text(path, json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    return path


def base_manifest(task_type: str, layout: str, tokenizer: Tokenizer, tokenizer_file: Path) -> dict[str, Any]:
    """The manifest's fixed keys for a corpus of ``layout`` tokenized by ``tokenizer`` (saved at ``tokenizer_file``)."""
    return {"format": FORMAT, "version": VERSION, "task_type": task_type, "layout": layout,
            "fields": list(LAYOUTS[layout]), "dtype": dtype_for(tokenizer.vocab_size),
            "eos_appended": layout == "documents",
            "tokenizer": {"file": tokenizer_file.name, "sha256": sha256_file(tokenizer_file), "kind": tokenizer.kind,
                          "vocab_size": tokenizer.vocab_size}}


def write_prepared(folder: str | os.PathLike[str], tokenizer: Tokenizer,
                   splits: Mapping[str, Iterable[Sequence[str]]], *, layout: str = "documents",
                   task_type: str = "lm", shard_tokens: int = DEFAULT_SHARD_TOKENS,
                   extra: Mapping[str, Any] | None = None) -> Path:
    """A prepared corpus from texts in memory, in one process (for tests and small data; ``synthformer prepare``
    is the way for files): ``splits`` maps a split name to its examples, each a sequence of texts, one per field
    of ``layout`` (``("text",)`` for documents). Returns the manifest's path.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tok_path = tokenizer.save(folder / TOKENIZER)
    manifest = base_manifest(task_type, layout, tokenizer, tok_path)
    manifest["sources"] = {}
    manifest["splits"] = {}
    for split, examples in splits.items():
        writer = ShardWriter(folder, lambda k, s=split: shard_name(s, k), LAYOUTS[layout], manifest["dtype"],
                             shard_tokens)
        for texts in examples:
            ids = [tokenizer.encode(t, add_eos=layout == "documents") for t in texts]
            writer.add(ids)
        shards = [manifest_shard(s, s["stem"]) for s in writer.close()]
        manifest["splits"][split] = split_entry(shards, LAYOUTS[layout])
    manifest.update(extra or {})
    manifest["created"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    fsync_path(folder)
    return write_manifest(folder, manifest)


def split_entry(shards: list[dict[str, Any]], fields: Sequence[str]) -> dict[str, Any]:
    """A split's manifest entry from its shards' entries: totals, the longest document per field (when every
    shard knows its own) and the shard list."""
    entry: dict[str, Any] = {"tokens": {f: sum(s["tokens"][f] for s in shards) for f in fields},
                             "documents": sum(s["documents"] for s in shards)}
    if shards and all("longest" in s for s in shards):
        entry["longest"] = {f: max(s["longest"][f] for s in shards) for f in fields}
    entry["shards"] = shards
    return entry
