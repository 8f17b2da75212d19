"""Readers for the plain-file formats: LM text, parallel text (translation), classification files.

Every reader decodes strict UTF-8 and raises :class:`~synthformer.data.errors.DataError` with the file,
the 1-based line number and the problem for malformed input. Line numbers count ``\\n`` only.

Empty lines (lines that are empty or whitespace only, or a side / text field that is) follow the
``empty_lines`` argument:

* ``"error"`` (default): raise :class:`DataError` at the first one;
* ``"skip"``: drop them and log a warning with how many were dropped and the first line number.

A file that yields no example at all is always an error.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
from collections.abc import Iterable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from synthformer.data.errors import DataError, json_object, read_utf8, split_lines

__all__ = [
    "CLASSIFICATION_FORMATS",
    "LM_SPLITS",
    "ClassificationExample",
    "TranslationPair",
    "build_label_set",
    "load_label_set",
    "read_classification",
    "read_parallel",
    "read_parallel_tsv",
    "read_text_file",
    "read_translation_split",
    "save_label_set",
    "split_text",
]

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]
_S = TypeVar("_S", bound=Sequence[Any])

#: The split conventions of the LM corpora of ``shared/data`` (see its README), as
#: ``(valid_fraction, test_fraction)`` for :func:`split_text`.
LM_SPLITS: dict[str, tuple[float, float]] = {
    "tiny_shakespeare": (0.1, 0.0),  # first 90% train, last 10% valid
    "enwik8": (0.05, 0.05),  # 90 / 5 / 5
}
_EMPTY_POLICIES = ("error", "skip")


class TranslationPair(NamedTuple):
    """One aligned sentence pair; ``line`` is its 1-based line in the source file(s)."""

    source: str
    target: str
    line: int | None = None


class ClassificationExample(NamedTuple):
    """One labelled text; ``label`` is always a string; ``line`` is its 1-based line in the file."""

    text: str
    label: str
    line: int | None = None


# -- language modelling --------------------------------------------------------------------------
def read_text_file(path: PathLike, errors: str = "strict") -> str:
    """The whole file as one string (for language modelling).

    Args:
        path: a UTF-8 text file.
        errors: ``"strict"`` raises on invalid UTF-8 (naming the line); ``"replace"`` substitutes U+FFFD.

    Raises:
        DataError: missing, empty or (strict) not valid UTF-8.
    """
    text = read_utf8(path, errors=errors)
    if not text:
        raise DataError(path, 1, "file is empty")
    return text


def split_text(data: _S, valid_fraction: float, test_fraction: float = 0.0) -> tuple[_S, _S, _S]:
    """Split a corpus (str, bytes, list or 1-D tensor) into contiguous ``(train, valid, test)`` parts.

    Train is the first part, valid follows, test is the end. Boundaries are
    ``floor(n * (1 - valid - test))`` and ``floor(n * (1 - test))``, computed in exact decimal
    arithmetic, so ``split_text(text, 0.1)`` gives the tiny_shakespeare convention
    ``text[:int(n * 0.9)]`` / ``text[int(n * 0.9):]`` and ``split_text(data, 0.05, 0.05)`` the
    enwik8 90/5/5 one (see :data:`LM_SPLITS`).

    Raises:
        ValueError: a fraction outside ``[0, 1)`` or fractions summing to 1 or more.
    """
    if not (0 <= valid_fraction < 1 and 0 <= test_fraction < 1 and valid_fraction + test_fraction < 1):
        raise ValueError(
            f"need 0 <= valid_fraction, test_fraction and valid + test < 1, got {valid_fraction}, "
            f"{test_fraction}"
        )
    n = len(data)
    fv, ft = Fraction(str(valid_fraction)), Fraction(str(test_fraction))
    train_end = int(n * (1 - fv - ft))  # int() of a non-negative Fraction is floor
    valid_end = int(n * (1 - ft))
    return data[:train_end], data[train_end:valid_end], data[valid_end:]  # type: ignore[return-value]


# -- translation ---------------------------------------------------------------------------------
def _check_policy(empty_lines: str) -> None:
    if empty_lines not in _EMPTY_POLICIES:
        raise ValueError(f"empty_lines must be one of {_EMPTY_POLICIES}, got {empty_lines!r}")


class _SkipCounter:
    """Counts skipped empty lines and logs them once."""

    def __init__(self, source: PathLike, policy: str) -> None:
        _check_policy(policy)
        self.source, self.policy = source, policy
        self.count, self.first = 0, 0

    def empty(self, line: int, what: str) -> None:
        if self.policy == "error":
            raise DataError(self.source, line, f"{what} (pass empty_lines='skip' to skip such lines)")
        self.count += 1
        self.first = self.first or line

    def report(self) -> None:
        if self.count:
            logger.warning("%s: skipped %d empty line(s), the first at line %d",
                           self.source, self.count, self.first)


def _empty_reason(skips: _SkipCounter) -> str:
    return f"all {skips.count} line(s) empty and skipped" if skips.count else "no data lines"


def read_parallel(source_path: PathLike, target_path: PathLike,
                  empty_lines: str = "error") -> list[TranslationPair]:
    """Read two line-aligned files (e.g. ``train.de`` and ``train.en``) into sentence pairs.

    Lines are stripped of surrounding whitespace. A pair where either side is empty follows
    ``empty_lines`` (``"error"`` or ``"skip"``, see the module doc).

    Raises:
        DataError: invalid UTF-8 (file and line), different line counts (naming both files and the
            first line without a partner), an empty side (``"error"`` policy), or no pair at all.
    """
    src_lines = split_lines(read_utf8(source_path))
    tgt_lines = split_lines(read_utf8(target_path))
    if len(src_lines) != len(tgt_lines):
        longer, shorter = (source_path, target_path) if len(src_lines) > len(tgt_lines) else (
            target_path, source_path)
        n_short = min(len(src_lines), len(tgt_lines))
        raise DataError(
            longer, n_short + 1,
            f"line counts differ: {longer} has {max(len(src_lines), len(tgt_lines))} lines but "
            f"{shorter} has {n_short}; this line has no partner",
        )
    skips = _SkipCounter(source_path, empty_lines)
    pairs: list[TranslationPair] = []
    for i, (src, tgt) in enumerate(zip(src_lines, tgt_lines, strict=True), start=1):
        src, tgt = src.strip(), tgt.strip()
        if not src or not tgt:
            empty_file = source_path if not src else target_path
            if empty_lines == "error":
                raise DataError(empty_file, i, "empty line (pass empty_lines='skip' to skip such pairs)")
            skips.empty(i, "empty line")
            continue
        pairs.append(TranslationPair(src, tgt, i))
    skips.report()
    if not pairs:
        raise DataError(source_path, 1, f"no sentence pairs ({_empty_reason(skips)})")
    return pairs


def read_parallel_tsv(path: PathLike, empty_lines: str = "error", header: bool = False,
                      columns: tuple[int, int] = (0, 1)) -> list[TranslationPair]:
    """Read sentence pairs from a tab-separated file with (at least) two columns.

    Args:
        path: the TSV file (no quoting: a tab always separates columns).
        empty_lines: ``"error"`` or ``"skip"`` for lines or sides that are empty.
        header: skip the first line.
        columns: the (source, target) column indexes.

    Raises:
        DataError: invalid UTF-8, a line with too few columns, an empty side (``"error"``), no pair.
    """
    lines = split_lines(read_utf8(path))
    skips = _SkipCounter(path, empty_lines)
    need = max(columns) + 1
    pairs: list[TranslationPair] = []
    for i, line in enumerate(lines, start=1):
        if header and i == 1:
            continue
        if not line.strip():
            skips.empty(i, "empty line")
            continue
        cells = line.split("\t")
        if len(cells) < need:
            raise DataError(path, i, f"expected at least {need} tab-separated columns, found {len(cells)}")
        src, tgt = cells[columns[0]].strip(), cells[columns[1]].strip()
        if not src or not tgt:
            skips.empty(i, "empty source or target column")
            continue
        pairs.append(TranslationPair(src, tgt, i))
    skips.report()
    if not pairs:
        raise DataError(path, 1, f"no sentence pairs ({_empty_reason(skips)})")
    return pairs


def read_translation_split(directory: PathLike, split: str, source_lang: str, target_lang: str,
                           empty_lines: str = "error") -> list[TranslationPair]:
    """Pairs of ``directory/{split}.{source_lang}`` and ``directory/{split}.{target_lang}``.

    Example: ``read_translation_split(".../multi30k", "train", "de", "en")``.
    """
    directory = Path(directory)
    return read_parallel(directory / f"{split}.{source_lang}", directory / f"{split}.{target_lang}",
                         empty_lines=empty_lines)


# -- classification ------------------------------------------------------------------------------
#: Formats :func:`read_classification` understands.
CLASSIFICATION_FORMATS: tuple[str, ...] = ("jsonl", "csv", "tsv", "label_text")
_SUFFIX_FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "tsv"}


def _label_str(value: Any, path: PathLike, line: int, field: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise DataError(path, line, f"label field {field!r} must be a string or an integer, "
                                    f"got {type(value).__name__} {value!r}")
    label = str(value).strip()
    if not label:
        raise DataError(path, line, f"label field {field!r} is empty")
    return label


def read_classification(
    path: PathLike,
    format: str | None = None,
    text_field: str | int = "text",
    label_field: str | int = "label",
    label_set: Iterable[str] | None = None,
    empty_lines: str = "error",
    header: bool = True,
) -> list[ClassificationExample]:
    """Read labelled texts from JSONL, CSV, TSV or ``label<space>text`` lines.

    Args:
        path: the file.
        format: ``"jsonl"``, ``"csv"``, ``"tsv"`` or ``"label_text"`` (e.g. SST-2's
            ``stsa.binary.*``: ``1 a stirring , funny ...``); ``None`` infers it from the suffix
            (``.jsonl``/``.json``, ``.csv``, ``.tsv``).
        text_field, label_field: JSONL keys; for CSV/TSV a column name (from the header) or a 0-based
            column index. Unused for ``label_text``.
        label_set: if given, every label must be in it.
        empty_lines: ``"error"`` or ``"skip"`` for blank lines and empty texts.
        header: CSV/TSV only: the first row is a header (needed when fields are names).

    Labels are returned as strings (JSON integers are converted: ``1`` -> ``"1"``).

    Raises:
        DataError: invalid UTF-8, malformed JSON or CSV, a missing field, a label outside ``label_set``,
            an empty text (``"error"``), or no example at all; the message names file and line.
        ValueError: an unknown format, or one that cannot be inferred.
    """
    if format is None:
        format = _SUFFIX_FORMATS.get(Path(path).suffix.lower())
        if format is None:
            raise ValueError(f"cannot infer the format of {path} from its suffix; pass format= one of "
                             f"{', '.join(CLASSIFICATION_FORMATS)}")
    if format not in CLASSIFICATION_FORMATS:
        raise ValueError(f"unknown classification format {format!r}; valid: "
                         f"{', '.join(CLASSIFICATION_FORMATS)}")
    allowed = None if label_set is None else set(label_set)
    skips = _SkipCounter(path, empty_lines)
    text = read_utf8(path)
    if format == "jsonl":
        rows = _jsonl_rows(path, text, text_field, label_field, skips)
    elif format == "label_text":
        rows = _label_text_rows(path, text, skips)
    else:
        rows = _table_rows(path, text, "," if format == "csv" else "\t", text_field, label_field,
                           header, skips, quoting=format == "csv")
    examples: list[ClassificationExample] = []
    for line, body, label in rows:
        if not body.strip():
            skips.empty(line, "empty text")
            continue
        if allowed is not None and label not in allowed:
            raise DataError(path, line, f"label {label!r} is not in the label set {sorted(allowed)}")
        examples.append(ClassificationExample(body, label, line))
    skips.report()
    if not examples:
        raise DataError(path, 1, f"no examples ({_empty_reason(skips)})")
    return examples


def _jsonl_rows(path: PathLike, text: str, text_field: str | int, label_field: str | int,
                skips: _SkipCounter) -> Iterable[tuple[int, str, str]]:
    for i, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            skips.empty(i, "empty line")
            continue
        record = json_object(line, path, i)
        for field in (text_field, label_field):
            if field not in record:
                raise DataError(path, i, f"missing field {field!r} (fields present: {sorted(record)})")
        body = record[text_field]
        if not isinstance(body, str):
            raise DataError(path, i, f"text field {text_field!r} must be a string, got "
                                     f"{type(body).__name__}")
        yield i, body, _label_str(record[label_field], path, i, str(label_field))


def _label_text_rows(path: PathLike, text: str, skips: _SkipCounter) -> Iterable[tuple[int, str, str]]:
    for i, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            skips.empty(i, "empty line")
            continue
        label, sep, body = line.strip().partition(" ")
        if not sep or not body.strip():
            raise DataError(path, i, f"expected 'label text', found only {label!r} (no text)")
        yield i, body.strip(), label


def _table_rows(path: PathLike, text: str, delimiter: str, text_field: str | int,
                label_field: str | int, header: bool, skips: _SkipCounter,
                quoting: bool) -> Iterable[tuple[int, str, str]]:
    stream = io.StringIO(text, newline="")
    reader = csv.reader(stream, delimiter=delimiter, quoting=csv.QUOTE_MINIMAL if quoting else csv.QUOTE_NONE,
                        strict=True)
    line = 1  # the first physical line of the next record
    columns: dict[str, int] = {}

    def index_of(field: str | int, where: int) -> int:
        if isinstance(field, int):
            return field
        if not header:
            raise ValueError(f"field {field!r} is a name but header=False; pass a column index")
        if field not in columns:
            raise DataError(path, where, f"missing column {field!r} in the header (columns: "
                                         f"{list(columns)})")
        return columns[field]

    text_idx = label_idx = -1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise DataError(path, line, f"malformed {'CSV' if quoting else 'TSV'}: {exc}") from exc
        start, line = line, reader.line_num + 1
        if header and not columns:
            columns = {name.strip(): j for j, name in enumerate(row)}
            text_idx, label_idx = index_of(text_field, start), index_of(label_field, start)
            continue
        if text_idx < 0:
            text_idx, label_idx = index_of(text_field, start), index_of(label_field, start)
        if not row or not any(cell.strip() for cell in row):
            skips.empty(start, "empty line")
            continue
        need = max(text_idx, label_idx) + 1
        if len(row) < need:
            raise DataError(path, start, f"expected at least {need} columns, found {len(row)}")
        yield start, row[text_idx], _label_str(row[label_idx], path, start, str(label_field))


# -- label sets ----------------------------------------------------------------------------------
def build_label_set(labels: Iterable[str | ClassificationExample]) -> list[str]:
    """The sorted distinct labels (of strings or of examples): numerically when every label is an
    integer (``"2" < "10"``), else as strings. The index of a label in this list is its class id."""
    distinct = {x.label if isinstance(x, ClassificationExample) else str(x) for x in labels}
    try:
        return sorted(distinct, key=int)
    except ValueError:
        return sorted(distinct)


def save_label_set(labels: Sequence[str], path: PathLike) -> Path:
    """Write a label set as a JSON list (the run directory keeps it beside the tokenizer)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(list(labels), ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def load_label_set(path: PathLike) -> list[str]:
    """Read a label set written by :func:`save_label_set`.

    Raises:
        DataError: not a JSON list of distinct strings.
    """
    text = read_utf8(path)
    try:
        labels = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(path, exc.lineno, f"invalid JSON: {exc.msg}") from exc
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise DataError(path, None, "a label set must be a JSON list of strings")
    if len(set(labels)) != len(labels):
        raise DataError(path, None, "duplicate labels in the label set")
    return labels
