"""Reading the sources of a prepare as a stream: files by glob (txt, jsonl, json.gz, csv, parquet) and Hugging Face
data sets with ``streaming=True``. Memory does not grow with a file: records are read one at a time.

A file is read whole, or, when it is plain (uncompressed) text or JSON lines, by byte ranges (:func:`file_ranges`)
so that several processes share one big file. A record belongs to the range its first byte is in, so the ranges of
a file together yield every record exactly once, whatever their size. Each record comes with its *position*: its
byte offset in the file (line-based formats) or its row number (csv, parquet, data sets): a stable name for it.

Text files (``.txt`` and any suffix not listed below) are cut into documents by ``text_unit``: ``"line"`` (each
non-empty line), ``"paragraph"`` (runs of non-empty lines separated by empty ones, their line ends kept inside;
the default) or ``"file"`` (the whole file: memory grows with the file).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from synthformer.common import ConfigError
from synthformer.data.errors import DataError, check_data_path

__all__ = ["TEXT_UNITS", "expand_glob", "file_format", "file_ranges", "iter_file", "iter_hf", "splittable"]

TEXT_UNITS = ("line", "paragraph", "file")
_FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet"}
#: Called with the bytes read since the last call (for progress bars).
Progress = Callable[[int], None]
Record = tuple[int, tuple[str, ...]]


def expand_glob(pattern: str) -> list[Path]:
    """The files ``pattern`` names, sorted (a plain path is its own match; ``**`` recurses).

    Raises:
        DataError: no file matches.
    """
    path = Path(pattern)
    if not any(ch in pattern for ch in "*?["):
        check_data_path(path)  # a symlink loop or a FIFO would read as "not found", or block the read
        if path.is_dir():
            raise DataError(path, None, "is a directory, expected a file or a glob (e.g. 'c4/en/c4-train.*.json.gz')")
        if not path.is_file():
            raise DataError(path, None, "file not found")
        return [path]
    anchor = Path(path.anchor) if path.is_absolute() else Path(".")
    rel = str(path.relative_to(anchor)) if path.is_absolute() else pattern
    matches = sorted(p for p in anchor.glob(rel) if p.is_file())
    if not matches:
        raise DataError(pattern, None, "no file matches this pattern")
    return matches


def file_format(path: Path) -> tuple[str, bool]:
    """``(format, gzipped)`` of a source file by its suffixes: jsonl, csv, tsv, parquet or text."""
    suffixes = [s.lower() for s in path.suffixes]
    gz = bool(suffixes) and suffixes[-1] == ".gz"
    if gz:
        suffixes = suffixes[:-1]
    return (_FORMATS.get(suffixes[-1], "text") if suffixes else "text"), gz


def splittable(path: Path, text_unit: str) -> bool:
    """Whether the file can be read by byte ranges (uncompressed text or JSON lines; not whole-file text)."""
    fmt, gz = file_format(path)
    return not gz and (fmt == "jsonl" or (fmt == "text" and text_unit != "file"))


def file_ranges(size: int, unit_bytes: int) -> list[tuple[int, int]]:
    """``[start, stop)`` byte ranges of about ``unit_bytes`` covering a file of ``size`` bytes (one if empty)."""
    if size <= unit_bytes:
        return [(0, size)]
    return [(a, min(a + unit_bytes, size)) for a in range(0, size, unit_bytes)]


class _Counting(io.RawIOBase):
    """A file opened for reading that reports the bytes read from disk to ``progress`` (compressed bytes, for a
    gzip file: its position in the file on disk)."""

    def __init__(self, path: Path, progress: Progress | None) -> None:
        self._fh = open(path, "rb")  # noqa: SIM115 - closed with this object
        self._progress = progress

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._fh.seek(offset, whence)

    def tell(self) -> int:
        return self._fh.tell()

    def readinto(self, buffer: Any) -> int:
        n = self._fh.readinto(buffer)
        if n and self._progress is not None:
            self._progress(n)
        return n or 0

    def close(self) -> None:
        self._fh.close()
        super().close()


def _open(path: Path, gz: bool, progress: Progress | None) -> BinaryIO:
    raw = io.BufferedReader(_Counting(path, progress), buffer_size=1 << 20)
    return gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw  # type: ignore[return-value]


def _decode(line: bytes, path: Path, pos: int) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(path, None, f"invalid UTF-8 at byte offset {pos + err.start} (byte 0x{line[err.start]:02x})"
                        ) from None


def _first_line(fh: BinaryIO, start: int) -> int:
    """The offset of the first line that starts at or after ``start`` (the file positioned there)."""
    if start == 0:
        fh.seek(0)
        return 0
    fh.seek(start - 1)
    return start - 1 + len(fh.readline())  # the rest of the line under way at start - 1 is not ours


def _lines(fh: BinaryIO, start: int, stop: int | None) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` for the lines that START in ``[start, stop)`` (``stop`` None: to the end)."""
    pos = _first_line(fh, start)
    while stop is None or pos < stop:
        line = fh.readline()
        if not line:
            return
        yield pos, line
        pos += len(line)


def _blank(line: bytes) -> bool:
    return line in (b"\n", b"\r\n")


def _after_blank_line(fh: BinaryIO, pos: int) -> bool:
    """Whether the line before the line starting at ``pos`` is empty (or there is none)."""
    if pos == 0:
        return True
    fh.seek(max(pos - 3, 0))
    tail = fh.read(min(pos, 3))
    fh.seek(pos)
    # the previous line is the bytes after the second-to-last line end
    return tail.endswith((b"\n\n", b"\n\r\n")) or tail[-pos:] in (b"\n", b"\r\n")


def _paragraphs(fh: BinaryIO, path: Path, start: int, stop: int | None) -> Iterator[Record]:
    """Paragraphs (runs of non-empty lines) whose first line starts in ``[start, stop)``; the last may run past
    ``stop``, and one that began before ``start`` is skipped (the previous range's)."""
    first = _first_line(fh, start)
    prev_blank = _after_blank_line(fh, first)
    para: list[bytes] = []
    para_start = first
    for pos, line in _lines(fh, first, None):
        if _blank(line):
            if para:
                yield para_start, (_decode(b"".join(para), path, para_start).rstrip("\r\n"),)
                para = []
            if stop is not None and pos >= stop:
                return
            prev_blank = True
            continue
        if not para:
            if not prev_blank:
                continue  # inside a paragraph that is not ours
            if stop is not None and pos >= stop:
                return
            para_start = pos
        para.append(line)
        prev_blank = False
    if para:
        yield para_start, (_decode(b"".join(para), path, para_start).rstrip("\r\n"),)


def _field(record: dict[str, Any], field: str, path: Path, where: str) -> str:
    value: Any = record
    for part in field.split("."):
        if not isinstance(value, dict) or part not in value:
            present = sorted(value) if isinstance(value, dict) else type(value).__name__
            raise DataError(path, None, f"{where}: missing field {field!r} (present: {present})")
        value = value[part]
    if not isinstance(value, str):
        raise DataError(path, None, f"{where}: field {field!r} must be a string, got {type(value).__name__}")
    return value


def iter_file(path: Path, fields: Sequence[str], *, start: int = 0, stop: int | None = None,
              text_unit: str = "paragraph", progress: Progress | None = None) -> Iterator[Record]:
    """``(position, texts)`` of each record of one source file (or of the byte range ``[start, stop)``): ``texts``
    holds the value of each of ``fields`` (dotted paths into JSON records; a text file has only its text).

    Raises:
        DataError: invalid UTF-8 or JSON, a missing or non-string field, naming the file and where.
        ConfigError: an unknown ``text_unit``, or a text file asked for fields other than one.
    """
    if text_unit not in TEXT_UNITS:
        raise ConfigError(f"--text-unit: expected one of {list(TEXT_UNITS)}, got {text_unit!r}")
    fmt, gz = file_format(path)
    if fmt == "text" and len(fields) != 1:
        raise ConfigError(f"{path}: a text file holds one text per document, not fields {list(fields)}")
    try:
        fh = _open(path, gz, progress)
    except FileNotFoundError:
        raise DataError(path, None, "file not found (gone since the prepare began?)") from None
    with fh:
        try:
            yield from _records(fh, path, fmt, fields, start, stop, text_unit)
        except (EOFError, gzip.BadGzipFile, zlib.error) as err:  # zlib: a block damaged inside the stream
            raise DataError(path, None, f"damaged gzip file ({err})") from None


def _records(fh: BinaryIO, path: Path, fmt: str, fields: Sequence[str], start: int, stop: int | None,
             text_unit: str) -> Iterator[Record]:
    if fmt == "jsonl":
        for pos, line in _lines(fh, start, stop):
            text = _decode(line, path, pos)
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as err:
                raise DataError(path, None, f"line at byte offset {pos}: invalid JSON: {err.msg}") from None
            if not isinstance(record, dict):
                raise DataError(path, None, f"line at byte offset {pos}: expected a JSON object, got "
                                            f"{type(record).__name__}")
            yield pos, tuple(_field(record, f, path, f"line at byte offset {pos}") for f in fields)
    elif fmt in ("csv", "tsv"):
        text = io.TextIOWrapper(fh, encoding="utf-8", newline="")
        reader = csv.DictReader(text, delimiter="," if fmt == "csv" else "\t")
        try:
            for row, record in enumerate(reader, start=1):
                yield row, tuple(_field(record, f, path, f"row {row}") for f in fields)
        except (csv.Error, UnicodeDecodeError) as err:
            raise DataError(path, None, f"malformed {fmt.upper()} ({err})") from None
    elif fmt == "parquet":
        yield from _parquet(path, fields)
    elif text_unit == "paragraph":
        yield from _paragraphs(fh, path, start, stop)
    elif text_unit == "line":
        for pos, line in _lines(fh, start, stop):
            text = _decode(line, path, pos).rstrip("\r\n")
            if text.strip():
                yield pos, (text,)
    else:
        data = fh.read()
        if data.strip():
            yield 0, (_decode(data, path, 0),)


def _parquet(path: Path, fields: Sequence[str]) -> Iterator[Record]:
    import pyarrow.parquet as pq

    columns = sorted({f.split(".")[0] for f in fields})
    row = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=1024, columns=columns):
        for record in batch.to_pylist():
            row += 1
            yield row, tuple(_field(record, f, path, f"row {row}") for f in fields)


_SLICE = re.compile(r"^(?P<name>[\w.-]+)\[(?P<start>-?\d+%?)?:(?P<stop>-?\d+%?)?\]$")


def _bound(text: str | None, default: int, count: Callable[[], int]) -> int:
    """A slice boundary in rows (``datasets``' rule for percents: the closest row, ``round(p * n / 100)``)."""
    if text is None:
        return default
    if text.endswith("%"):
        value = int(round(float(text[:-1]) * count() / 100.0))
    else:
        value = int(text)
    return value + count() if value < 0 else value


def _stream(name: str, split: str, config: str | None, options: dict[str, Any] | None) -> Any:
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("preparing a Hugging Face data set needs the optional 'datasets' package: "
                          "pip install datasets") from exc
    kwargs = {k: v for k, v in (options or {}).items() if k != "streaming"}
    return datasets.load_dataset(name, config, split=split, streaming=True, **kwargs)


def hf_shards(name: str, split: str, *, config: str | None = None, options: dict[str, Any] | None = None) -> int:
    """How many shards (files) a split streams from, so that processes can share it; 1 for a sliced split (read
    as one stream, to slice it as ``datasets`` does)."""
    if _SLICE.match(split.replace(" ", "")):
        return 1
    return max(int(getattr(_stream(name, split, config, options), "n_shards", 1) or 1), 1)


def iter_hf(name: str, split: str, fields: Sequence[str], *, config: str | None = None,
            options: dict[str, Any] | None = None, shard: tuple[int, int] = (0, 1)) -> Iterator[Record]:
    """``(row, texts)`` of a Hugging Face data set read with ``streaming=True`` (nothing is downloaded whole or
    cached: memory stays flat). Works offline on local files through the generic builders (``"json"`` with
    ``data_files``). ``shard = (index, count)`` reads one of ``count`` contiguous parts (by file, see
    :func:`hf_shards`); rows are then numbered ``index * 10**12 + row``. A sliced split (``train[:96%]``,
    ``validation[1000:]``) is read as ``datasets`` would read it without streaming; a percent or negative boundary
    needs the row count: from the data set's info, else from a first pass over the stream."""
    sliced = _SLICE.match(split.replace(" ", ""))
    base = sliced.group("name") if sliced else split
    stream = _stream(name, base, config, options)
    index, count_shards = shard
    if count_shards > 1:
        stream = stream.shard(num_shards=count_shards, index=index, contiguous=True)
    start, stop = index * 10**12, None
    if sliced:
        known: list[int] = []

        def count() -> int:
            if not known:
                info = getattr(stream, "info", None)
                splits = getattr(info, "splits", None) or {}
                n = splits[base].num_examples if base in splits else None
                known.append(n if n else sum(1 for _ in stream))
            return known[0]

        start = max(_bound(sliced.group("start"), 0, count), 0)
        stop = _bound(sliced.group("stop"), -1, count) if sliced.group("stop") is not None else None
        stream = stream.skip(start) if start else stream
        stream = stream.take(max(stop - start, 0)) if stop is not None else stream
    where = Path(f"{name}[{split}]")
    for row, record in enumerate(stream, start=start + 1):
        yield row, tuple(_field(record, f, where, f"row {row}") for f in fields)


def file_stat(path: Path) -> dict[str, Any]:
    """The manifest's record of a source file before its checksum: absolute path, size, modification time."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        raise DataError(path, None, "file not found") from None
    return {"path": str(path.resolve()), "size": stat.st_size, "mtime": stat.st_mtime}
