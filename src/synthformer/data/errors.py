"""The error raised for malformed input data, and the helpers that read text files strictly."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

__all__ = ["DataError", "check_data_path", "json_object", "read_utf8", "split_lines"]

# What a path that is neither a file nor a folder is, in words (the stat.S_IS* test of each)
_SPECIAL_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                  (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


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


def check_data_path(path: str | os.PathLike[str], *, what: str = "", expected: str = "a regular file") -> None:
    """Refuse a data path that no reader should open: a symlink loop, or anything but a regular file or a folder.
    A FIFO's ``open`` waits for a writer that never comes, a device reads forever, a symlink loop fails in
    ``pathlib`` with a ``RuntimeError``: each becomes a :class:`DataError` before anything is opened. A path that does
    not exist passes (the reader says "file not found", where the format decides what is missing), and so does a
    folder (the reader says whether its format takes one, in its own terms).

    Args:
        path: the data path.
        what: the config key that named the path (``task.train``), put before it in the message.
        expected: what the path should be, in the message.
    """
    where = f"{what}: {path}" if what else str(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DataError(where, None, "is a symbolic link loop (too many levels of symbolic links); point it at "
                                         "the data itself") from None
        if exc.errno == errno.ENOTDIR:  # a file where a folder of the path should be: no such path
            return
        raise DataError(where, None, f"cannot read the file ({exc.strerror or exc})") from None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = next((name for test, name in _SPECIAL_KINDS if test(mode)), "neither a file nor a folder")
    raise DataError(where, None, f"is {kind}, expected {expected}; save the data to a file and name that")


def read_utf8(path: str | os.PathLike[str], errors: str = "strict") -> str:
    """Read a whole file as UTF-8 text.

    Args:
        path: the file to read.
        errors: ``"strict"`` (default) raises a :class:`DataError` naming the line of the first invalid
            byte; ``"replace"`` substitutes U+FFFD for invalid bytes.

    Raises:
        DataError: the file does not exist, is a folder, a FIFO or another non-regular file, a symlink loop,
            cannot be read, or (``errors="strict"``) is not valid UTF-8.
    """
    path = Path(path)
    check_data_path(path)  # before opening: a FIFO would block the open
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
