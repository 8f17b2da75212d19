"""The error raised for malformed input data, and the helpers that read text files strictly."""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["DataError", "json_object", "read_utf8", "split_lines"]


class DataError(ValueError):
    """Malformed or unusable input data.

    The message always names the file (or data set), the 1-based line (or row) when one applies, and
    the problem, as ``"path:line: problem"``; the three parts are also kept as attributes.

    Args:
        source: the file path or data set name the problem was found in.
        line: 1-based line number (row number for data sets), or ``None`` when the problem concerns the
            whole file (empty file, mismatched line counts found at the end).
        problem: what is wrong, in words.
    """

    def __init__(self, source: str | os.PathLike[str], line: int | None, problem: str) -> None:
        self.source = str(source)
        self.line = line
        self.problem = problem
        where = self.source if line is None else f"{self.source}:{line}"
        super().__init__(f"{where}: {problem}")


def read_utf8(path: str | os.PathLike[str], errors: str = "strict") -> str:
    """Read a whole file as UTF-8 text.

    Args:
        path: the file to read.
        errors: ``"strict"`` (default) raises a :class:`DataError` naming the line of the first invalid
            byte; ``"replace"`` substitutes U+FFFD for invalid bytes.

    Raises:
        DataError: the file does not exist, is a folder, cannot be read, or (``errors="strict"``) is not valid
            UTF-8.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise DataError(path, None, "file not found") from exc
    except IsADirectoryError as exc:
        raise DataError(path, None, "is a directory, expected a file") from exc
    except OSError as exc:  # no permission, an I/O error: name the file like every other data problem
        raise DataError(path, None, f"cannot read the file ({exc.strerror or exc})") from exc
    try:
        return raw.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataError(
            path, line, f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at file offset {exc.start})"
        ) from exc


def split_lines(text: str) -> list[str]:
    r"""Split text on ``\n`` only (``\r\n`` endings accepted), dropping the final newline.

    Unlike :meth:`str.splitlines`, characters such as U+2028 or ``\x1c`` inside a line do not start
    a new line, so line numbers agree with ``wc -l`` and with other line-aligned files.
    """
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def json_object(line: str, source: str | os.PathLike[str], number: int) -> dict:
    """The JSON object on one line of a JSONL file.

    Raises:
        DataError: the line is not valid JSON, or holds something other than an object (``source:number`` named).
    """
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(source, number, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(record, dict):
        raise DataError(source, number, f"expected a JSON object, got {type(record).__name__}")
    return record
