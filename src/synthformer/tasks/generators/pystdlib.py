"""A character-LM corpus that every Python installation carries: its own standard library's ``.py`` sources.

It makes a real learning problem (source code has structure at every scale, from indentation to identifiers)
that needs no network and no data folder. The corpus differs between Python versions, so compare numbers only
between runs on the same Python.

Files are found under ``sysconfig.get_paths()["stdlib"]``; third-party packages (``site-packages``,
``dist-packages``) and the stdlib's own test suites (directories ``test``, ``tests``, ``idle_test``) are left
out, the rest is read in sorted order of the relative path. The split is by file, so validation measures how
well a model predicts code it has never seen: a file goes to valid or test when a stable hash of its relative
path (CRC-32, the same on every platform and run) falls below ``valid_fraction`` (then ``valid_fraction +
test_fraction``). Files that are not valid UTF-8 are skipped.
"""

from __future__ import annotations

import logging
import os
import sysconfig
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..contract import Generator, RawData
from ..registry import register_generator

if TYPE_CHECKING:
    from ..run.task_config import TaskConfig

__all__ = ["PyStdlibCorpus", "PyStdlibGenerator", "load_pystdlib", "stdlib_root", "stdlib_source_files"]

logger = logging.getLogger(__name__)

_EXCLUDED_DIRS = frozenset({"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"})
# Files are joined with a blank line, so a model sees where one file ends and the next begins.
_SEPARATOR = "\n\n"


def stdlib_root() -> Path:
    """The running interpreter's standard-library directory."""
    return Path(sysconfig.get_paths()["stdlib"])


def stdlib_source_files(root: str | os.PathLike[str] | None = None) -> list[Path]:
    """The ``.py`` files of the standard library (see the module docstring), sorted by relative path."""
    base = Path(root) if root is not None else stdlib_root()
    if not base.is_dir():
        raise FileNotFoundError(f"standard library directory not found: {base}")
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(base):
        # Pruning in place keeps os.walk out of site-packages, which can be far larger than the stdlib.
        dirnames[:] = [d for d in dirnames if d not in _EXCLUDED_DIRS]
        found.extend(Path(dirpath) / f for f in filenames if f.endswith(".py"))
    return sorted(found, key=lambda p: p.relative_to(base).as_posix())


def _bucket(relative: str) -> float:
    """A stable pseudo-random number in [0, 1) for a file (CRC-32 of its relative POSIX path)."""
    return zlib.crc32(relative.encode("utf-8")) / 2**32


@dataclass
class PyStdlibCorpus:
    """The three splits as strings, and which files went where (relative paths)."""

    train: str
    valid: str
    test: str
    files: dict[str, list[str]]


def load_pystdlib(valid_fraction: float = 0.05, test_fraction: float = 0.0, max_train_chars: int | None = None,
                  max_eval_chars: int | None = None, root: str | os.PathLike[str] | None = None) -> PyStdlibCorpus:
    """Read the standard library's sources and split them by file.

    Args:
        valid_fraction, test_fraction: expected fraction of the files in each held-out split.
        max_train_chars: keep only the first this many characters of the training text (``None``: all, about
            12 M characters on CPython 3.11).
        max_eval_chars: the same for the valid and test texts.
        root: another directory to read instead of the standard library (for tests).

    Raises:
        FileNotFoundError: no standard library (or ``root``) directory.
        ValueError: bad fractions, or a split that ends up empty.
    """
    if not (0 <= valid_fraction < 1 and 0 <= test_fraction < 1 and valid_fraction + test_fraction < 1):
        raise ValueError(f"need 0 <= valid_fraction, test_fraction and a sum < 1, got {valid_fraction}, "
                         f"{test_fraction}")
    base = Path(root) if root is not None else stdlib_root()
    parts: dict[str, list[str]] = {"train": [], "valid": [], "test": []}
    files: dict[str, list[str]] = {"train": [], "valid": [], "test": []}
    skipped = 0
    for path in stdlib_source_files(base):
        relative = path.relative_to(base).as_posix()
        try:
            text = path.read_bytes().decode("utf-8")
        except (UnicodeDecodeError, OSError):
            skipped += 1
            continue
        if not text.strip():
            continue
        h = _bucket(relative)
        split = "valid" if h < valid_fraction else "test" if h < valid_fraction + test_fraction else "train"
        parts[split].append(text)
        files[split].append(relative)
    if skipped:
        logger.info("pystdlib: skipped %d unreadable or non-UTF-8 file(s)", skipped)
    texts = {split: _SEPARATOR.join(chunks) for split, chunks in parts.items()}
    if not texts["train"]:
        raise ValueError(f"pystdlib: no training text found under {base}")
    if valid_fraction > 0 and not texts["valid"]:
        raise ValueError(f"pystdlib: no file of {base} fell into the valid split; raise valid_fraction")
    for split, limit in (("train", max_train_chars), ("valid", max_eval_chars), ("test", max_eval_chars)):
        if limit is not None:
            texts[split] = texts[split][:limit]
    logger.info("pystdlib: %s", ", ".join(f"{s} {len(files[s])} files / {len(texts[s]):,} chars" for s in texts))
    return PyStdlibCorpus(texts["train"], texts["valid"], texts["test"], files)


@register_generator
class PyStdlibGenerator(Generator):
    """``generator: pystdlib``: a character LM over the running Python's standard library sources, split by file
    (``valid_fraction``, 0.05 when left at 0, and ``test_fraction`` of the files; options ``max_train_chars``,
    ``max_eval_chars``)."""

    name = "pystdlib"
    task_type = "lm"
    option_defaults = {"max_train_chars": None, "max_eval_chars": None}
    reads = frozenset({"test_fraction"})

    def load(self, task: TaskConfig) -> RawData:
        opts = self.options(task)
        corpus = load_pystdlib(task.valid_fraction or 0.05, task.test_fraction, opts["max_train_chars"],
                               opts["max_eval_chars"])
        splits = {"train": corpus.train, "valid": corpus.valid}
        if corpus.test:
            splits["test"] = corpus.test
        return RawData("lm", splits, info={"files": {s: len(f) for s, f in corpus.files.items()}})

    def has_test_split(self, task: TaskConfig) -> bool:
        return task.test_fraction > 0
