"""Reading a prepared corpus: :class:`PreparedCorpus` (the folder), :class:`PreparedSplit` (one split's shards),
:class:`TokenStream` (a split's tokens of one field as one virtual array).

Opening checks the manifest, the size of every listed file and, when a tokenizer is given, that it is the one the
corpus was tokenized with; :meth:`PreparedCorpus.verify` checks every file's sha256 (reads everything) and
:meth:`PreparedCorpus.check_ids` that every token id is inside the vocabulary (a vectorized max per shard: a byte
flipped on disk since the prepare keeps the file's size, and an id beyond the embedding table would otherwise crash
a run hundreds of steps in). Every read checks the ids it returns too (a max over what is already in hand), so a
corpus too big to scan at start still fails on the first damaged batch with the shard named, never an
``IndexError``. Shards are memory-mapped lazily, on first use and once per process: a ``DataLoader`` worker (forked
or spawned) maps its own, and pickling a split never copies tokens.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from synthformer.common import ConfigError
from synthformer.data.errors import DataError
from synthformer.data.tokenization import load_tokenizer
from synthformer.data.tokenizer_base import Tokenizer, tokenizer_difference

from .format import TOKENIZER, bin_name, idx_name, np_dtype, read_manifest, sha256_file

__all__ = ["ID_SCAN_BYTES", "PreparedCorpus", "PreparedSplit", "TokenStream", "redo_hint"]

_REDO = "re-run the same 'synthformer prepare' command to rewrite it"
_REDO_VERIFY = "re-run the same 'synthformer prepare' command with --verify to rewrite it"
#: :meth:`PreparedCorpus.check_ids` scans a corpus at start when its token files hold at most this many bytes (1 GiB:
#: about a second from the page cache); a bigger one is checked batch by batch as it is read.
ID_SCAN_BYTES = 1 << 30
_SCAN_CHUNK = 1 << 24  # ids per vectorized max: bounds the working set of a scan, not its cost


def redo_hint(sources: dict[str, Any], verify: bool = False) -> str:
    """What to do about a damaged file of a corpus whose manifest lists ``sources``: re-run the prepare (with
    ``--verify`` where the file kept its size, which a re-run without it does not look past), or, when a source
    is gone or of another size since the prepare, restore the sources first: the re-run that rewrites a shard
    tokenizes its source again, and refuses without it."""
    redo = _REDO_VERIFY if verify else _REDO
    for entries in sources.values():
        for entry in entries:
            if entry.get("size") is None:  # a data set, not a file: nothing to stat
                continue
            path = Path(entry["path"])
            try:
                size = path.stat().st_size
            except OSError:
                return (f"rewriting it needs the sources, and {path} is gone since the prepare: restore the sources, "
                        f"then {redo}")
            if size != entry["size"]:
                return (f"rewriting it needs the sources as they were, and {path} changed since the prepare "
                        f"({entry['size']:,} -> {size:,} bytes): restore them, then {redo}")
    return redo


class PreparedCorpus:
    """A prepared folder, opened with :meth:`open`."""

    def __init__(self, path: Path, manifest: dict[str, Any]) -> None:
        self.path = path
        self.manifest = manifest
        self._tokenizer: Tokenizer | None = None
        self._splits: dict[str, PreparedSplit] = {}

    # -- opening ---------------------------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str], tokenizer: Tokenizer | str | os.PathLike[str] | None = None,
             ) -> PreparedCorpus:
        """Open the prepared corpus at ``path``: the manifest's format and version, every listed file's size and,
        with ``tokenizer`` (a tokenizer or a tokenizer file), that it equals the corpus's.

        Raises:
            DataError: no folder or manifest, a listed file missing or of the wrong size (truncated, damaged), the
                manifest damaged. The message names the file and what to do.
            ConfigError: another format or version, or a tokenizer other than the corpus's.
        """
        folder = Path(path)
        corpus = cls(folder, read_manifest(folder))
        corpus._check_sizes()
        if tokenizer is not None:
            corpus.check_tokenizer(tokenizer)
        return corpus

    def _check_sizes(self) -> None:
        tok = self.path / self.manifest["tokenizer"].get("file", TOKENIZER)
        if not tok.is_file():
            raise DataError(tok, None, f"missing (the prepared corpus's tokenizer); {self.redo_hint()}")
        for name in self.splits:
            for shard in self.manifest["splits"][name]["shards"]:
                for file, size in shard.get("bytes", {}).items():
                    path = self.path / file
                    try:
                        got = path.stat().st_size
                    except FileNotFoundError:
                        raise DataError(path, None, f"missing (a shard of split {name!r}); {self.redo_hint()}",
                                        ) from None
                    if got != size:
                        raise DataError(path, None, f"{got:,} bytes where the manifest says {size:,} (truncated or "
                                                    f"damaged); {self.redo_hint()}")

    def redo_hint(self, verify: bool = False) -> str:
        """What to do about a damaged file of this corpus (:func:`redo_hint`)."""
        return redo_hint(self.manifest.get("sources") or {}, verify)

    @property
    def vocab_size(self) -> int | None:
        """The size of the vocabulary the corpus was tokenized with (the manifest's; None in a manifest without)."""
        size = self.manifest["tokenizer"].get("vocab_size")
        return int(size) if isinstance(size, int) else None

    def token_bytes(self) -> int:
        """The bytes of every token file (``.bin``) of the corpus: what :meth:`check_ids` reads."""
        return sum(size for name in self.splits for shard in self.manifest["splits"][name]["shards"]
                   for file, size in shard.get("bytes", {}).items() if file.endswith(".bin"))

    def check_ids(self, max_bytes: int | None = None) -> bool:
        """Check that every token id of every shard is below the vocabulary size: a vectorized max over each
        memory-mapped shard. Skipped (False returned) when the token files hold more than ``max_bytes`` (None: no
        bound; a run passes :data:`ID_SCAN_BYTES`) or the manifest records no vocabulary size; reads then check
        their own ids (:class:`PreparedSplit`).

        Raises:
            DataError: the first shard holding an id outside the vocabulary, the id, its position and what to do.
        """
        if self.vocab_size is None or (max_bytes is not None and self.token_bytes() > max_bytes):
            return False
        for name in self.splits:
            split = self.split(name)
            for shard in range(len(split.shards)):
                for field in split.fields:
                    tokens, _ = split.shard_arrays(shard, field)
                    for start in range(0, len(tokens), _SCAN_CHUNK):
                        split.check_ids(tokens[start:start + _SCAN_CHUNK], shard, field, start)
        return True

    def check_tokenizer(self, tokenizer: Tokenizer | str | os.PathLike[str]) -> None:
        """Raise :class:`ConfigError` unless ``tokenizer`` (an object or a file) is the corpus's tokenizer."""
        theirs = tokenizer if isinstance(tokenizer, Tokenizer) else load_tokenizer(tokenizer)
        ours = self.tokenizer()
        if theirs != ours:
            where = "" if isinstance(tokenizer, Tokenizer) else f" ({tokenizer})"
            differ = tokenizer_difference(ours, theirs, ("the corpus's", "the one given"))
            raise ConfigError(
                f"{self.path / 'manifest.json'}: the corpus was tokenized with another tokenizer than the one "
                f"given{where}: {differ}; use the corpus's tokenizer.json, or prepare again with --tokenizer FILE"
            )

    # -- contents --------------------------------------------------------------------------------------------------
    @property
    def splits(self) -> list[str]:
        """The split names, in manifest order."""
        return list(self.manifest["splits"])

    @property
    def fields(self) -> list[str]:
        """The fields of every example (``["text"]`` or ``["source", "target"]``)."""
        return list(self.manifest["fields"])

    def tokenizer(self) -> Tokenizer:
        """The corpus's tokenizer (read once; its sha256 checked against the manifest)."""
        if self._tokenizer is None:
            info = self.manifest["tokenizer"]
            path = self.path / info.get("file", TOKENIZER)
            if "sha256" in info and sha256_file(path) != info["sha256"]:
                raise DataError(path, None, f"differs from the tokenizer the corpus was made with (sha256); {_REDO}")
            self._tokenizer = load_tokenizer(path)
        return self._tokenizer

    def split(self, name: str) -> PreparedSplit:
        """One split (``train``, ``valid``, ...).

        Raises:
            ConfigError: no such split (the message lists the present ones).
        """
        if name not in self.manifest["splits"]:
            raise ConfigError(f"{self.path}: the prepared corpus has no split {name!r}; it has {self.splits}")
        if name not in self._splits:
            self._splits[name] = PreparedSplit(self.path, name, self.manifest["splits"][name], self.fields,
                                               self.manifest["dtype"], self.vocab_size,
                                               self.manifest.get("sources") or {})
        return self._splits[name]

    def files(self) -> Iterator[tuple[Path, str]]:
        """Every file the manifest lists with a checksum: ``(path, sha256)``, the tokenizer first."""
        info = self.manifest["tokenizer"]
        if "sha256" in info:
            yield self.path / info.get("file", TOKENIZER), info["sha256"]
        for name in self.splits:
            for shard in self.manifest["splits"][name]["shards"]:
                for file, digest in shard["sha256"].items():
                    yield self.path / file, digest

    def verify(self) -> None:
        """Check the sha256 of every file (reads the whole corpus).

        Raises:
            DataError: the first file whose content differs from what was written (or that is gone).
        """
        for path, digest in self.files():
            if not path.is_file():
                raise DataError(path, None, f"missing; {self.redo_hint()}")
            if sha256_file(path) != digest:
                raise DataError(path, None, "checksum mismatch: the file changed since it was written (damaged); "
                                            f"{self.redo_hint(verify=True)}")

    def check_sources(self, full: bool = False) -> list[str]:
        """Problems with the source files since prepare: gone, or another size or modification time (with
        ``full``, the sha256 is compared too: reads every source). Empty when all is as recorded; sources that are
        no local file (a Hugging Face data set) are not checked."""
        problems = []
        for split, entries in self.manifest.get("sources", {}).items():
            for entry in entries:
                if entry.get("size") is None:
                    continue
                path = Path(entry["path"])
                try:
                    stat = path.stat()
                except OSError:
                    problems.append(f"{path}: gone since prepare ({split} source)")
                    continue
                if stat.st_size != entry["size"]:
                    problems.append(f"{path}: changed since prepare ({entry['size']:,} -> {stat.st_size:,} bytes)")
                elif full and entry.get("sha256"):
                    if sha256_file(path) != entry["sha256"]:
                        problems.append(f"{path}: content changed since prepare (sha256)")
                elif entry.get("mtime") is not None and stat.st_mtime != entry["mtime"]:
                    problems.append(f"{path}: modified since prepare (its modification time changed)")
        return sorted(set(problems))

    def sources_note(self, full: bool = False) -> str | None:
        """One line on the sources gone or changed since prepare (:meth:`check_sources`), or None when all are as
        recorded. A note, not an error: the corpus holds its tokens and their checksums, so training never reads
        the sources (only a re-run of prepare that rewrites a damaged shard does)."""
        problems = self.check_sources(full=full)
        if not problems:
            return None
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return (f"{problems[0]}{more}: the prepared corpus {self.path} does not need its sources (its shards are "
                "checked against its manifest; 'synthformer prepare --check' verifies every checksum)")

    def __repr__(self) -> str:
        return f"PreparedCorpus({str(self.path)!r}, splits={self.splits})"


class PreparedSplit:
    """The shards of one split: ``len()`` documents (examples), each with every field of the layout.

    ``vocab_size`` (the corpus's): every read checks that its ids are below it (:meth:`check_ids`); ``sources``:
    the manifest's, for the advice of that error (:func:`redo_hint`)."""

    def __init__(self, folder: Path, name: str, info: dict[str, Any], fields: list[str], dtype: str,
                 vocab_size: int | None = None, sources: dict[str, Any] | None = None) -> None:
        self.folder = folder
        self.name = name
        self.fields = list(fields)
        self.dtype = np_dtype(dtype)
        self.vocab_size = vocab_size
        self.sources = sources or {}
        self.shards = [s["name"] for s in info["shards"]]
        docs = [int(s["documents"]) for s in info["shards"]]
        # cumulative document / token counts: shard j holds documents [doc_starts[j], doc_starts[j + 1])
        self.doc_starts = np.concatenate([[0], np.cumsum(docs, dtype=np.int64)]).astype(np.int64)
        self.token_starts = {f: np.concatenate([[0], np.cumsum([int(s["tokens"][f]) for s in info["shards"]],
                                                               dtype=np.int64)]).astype(np.int64)
                             for f in self.fields}
        self._maps: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
        self._pid = os.getpid()

    def __len__(self) -> int:
        return int(self.doc_starts[-1])

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_maps"] = {}  # the memory maps are per process: pickling never copies tokens
        return state

    def num_tokens(self, field: str = "text") -> int:
        """Tokens of ``field`` in the whole split."""
        return int(self._starts(field)[-1])

    def _starts(self, field: str) -> np.ndarray:
        if field not in self.token_starts:
            raise KeyError(f"split {self.name!r} has fields {self.fields}, not {field!r}")
        return self.token_starts[field]

    def shard_arrays(self, shard: int, field: str = "text") -> tuple[np.ndarray, np.ndarray]:
        """``(tokens, offsets)`` of one shard's field, memory-mapped on first use in this process."""
        if self._pid != os.getpid():  # forked: map again, in this process
            self._maps, self._pid = {}, os.getpid()
        key = (shard, field)
        if key not in self._maps:
            stem = self.shards[shard]
            bin_path = self.folder / bin_name(stem, field)
            tokens = (np.memmap(bin_path, dtype=self.dtype, mode="r") if bin_path.stat().st_size
                      else np.zeros(0, self.dtype))
            offsets = np.load(self.folder / idx_name(stem, field), mmap_mode="r")
            self._maps[key] = (tokens, offsets)
        return self._maps[key]

    def check_ids(self, tokens: np.ndarray, shard: int, field: str, start: int) -> None:
        """Raise :class:`DataError` if ``tokens`` (ids from position ``start`` of the ``field`` file of shard
        ``shard``) hold an id outside the vocabulary: the file, the id, its position and what to do."""
        if self.vocab_size is None or not len(tokens) or int(tokens.max()) < self.vocab_size:
            return
        at = int(np.argmax(tokens >= self.vocab_size))
        path = self.folder / bin_name(self.shards[shard], field)
        raise DataError(path, None, f"token id {int(tokens[at]):,} at token {start + at:,} is outside the "
                                    f"vocabulary of {self.vocab_size:,} ids (the file is damaged: its size is right, "
                                    f"its content is not); {redo_hint(self.sources, verify=True)}")

    def document(self, i: int, field: str = "text") -> np.ndarray:
        """The tokens of document ``i`` (0 <= i < len): a memory-mapped view, no copy."""
        self._starts(field)
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"document {i} out of range [0, {n}) of split {self.name!r}")
        shard = bisect.bisect_right(self.doc_starts, i) - 1
        tokens, offsets = self.shard_arrays(shard, field)
        j = i - int(self.doc_starts[shard])
        doc = tokens[int(offsets[j]):int(offsets[j + 1])]
        self.check_ids(doc, shard, field, int(offsets[j]))
        return doc

    def stream(self, field: str = "text") -> TokenStream:
        """Every token of ``field``, documents back to back, as one virtual array."""
        self._starts(field)
        return TokenStream(self, field)

    def __repr__(self) -> str:
        return f"PreparedSplit({self.name!r}, documents={len(self)}, fields={self.fields})"


class TokenStream:
    """The tokens of one field of a split, concatenated across shards (virtually: nothing is read until sliced)."""

    def __init__(self, split: PreparedSplit, field: str) -> None:
        self.split = split
        self.field = field
        self.starts = split.token_starts[field]

    def __len__(self) -> int:
        return int(self.starts[-1])

    def slice(self, start: int, stop: int) -> np.ndarray:
        """A copy of tokens ``[start, stop)`` (``stop`` clipped to ``len``), across shard boundaries.

        Raises:
            IndexError: ``start`` negative or beyond ``stop``.
        """
        stop = min(stop, len(self))
        if start < 0 or start > stop:
            raise IndexError(f"slice [{start}, {stop}) out of range of {len(self)} tokens")
        parts = []
        shard = max(bisect.bisect_right(self.starts, start) - 1, 0)
        pos = start
        while pos < stop:
            base = int(self.starts[shard])
            tokens, _ = self.split.shard_arrays(shard, self.field)
            end = min(stop, int(self.starts[shard + 1]))
            if end > pos:
                part = np.asarray(tokens[pos - base:end - base])
                self.split.check_ids(part, shard, self.field, pos - base)
                parts.append(part)
            pos = max(pos, end)
            shard += 1
        if not parts:
            return np.zeros(0, dtype=self.split.dtype)
        return np.concatenate(parts) if len(parts) > 1 else parts[0].copy()
