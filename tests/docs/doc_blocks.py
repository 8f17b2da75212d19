"""The fenced code blocks of README.md and docs/**/*.md, for ``test_doc_python.py``.

A ``python`` or ``yaml`` block is a *file* when the last line of the paragraph just before it ends with a colon and
names a ``.py`` or ``.yaml`` file in backticks (the first such name: ``... say `my_tasks.py`:``, ```parity/data.py`,
the examples (...):``): the user saves it under that name, and other blocks of the page import or read it. Every
other ``python`` block is a script, run as written. A block that is not meant to run (output, a diagram,
signatures) is fenced ``text``; a fence without a language is not allowed, so no block escapes both rules unseen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The languages a fence may name: python runs here, shell runs in ``test_doc_commands.py``, the rest is shown.
LANGUAGES = frozenset({"python", "bash", "sh", "shell", "console", "yaml", "json", "text"})
_FILE = re.compile(r"`([\w./-]+\.(?:py|ya?ml))`")  # the first on a line that ends with a colon


@dataclass(frozen=True)
class Block:
    """One fenced block: its page (relative to the root), the line of its opening fence, its language, its text,
    and the file name its paragraph gives it (None: not a file)."""

    page: str
    line: int
    language: str
    code: str
    file: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def module(self) -> str | None:
        """The module a ``.py`` file block is imported as (``parity/__init__.py`` -> ``parity``)."""
        if self.file is None or not self.file.endswith(".py"):
            return None
        return self.file.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def doc_pages() -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks_of(text: str, page: str) -> list[Block]:
    """The fenced blocks of a Markdown text, in order."""
    lines = text.splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = lines[i].strip()
        if not opening.startswith("```"):
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), len(lines))
        before = lines[i - 2] if i >= 2 and not lines[i - 1].strip() else ""
        language = opening[3:].strip()
        named = _FILE.search(before) if before.rstrip().endswith(":") and language in ("python", "yaml") else None
        found.append(Block(page, i + 1, language, "\n".join(lines[i + 1:end]) + "\n",
                           named.group(1) if named else None))
        i = end + 1
    return found


def all_blocks() -> list[Block]:
    """Every fenced block of every page."""
    return [b for path in doc_pages()
            for b in blocks_of(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
