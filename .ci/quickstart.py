"""The README's quick start as a list of shell commands, so that CI runs what the README says.

The quick start is the one fenced ```bash block between the lines ``<!-- quickstart -->`` and
``<!-- /quickstart -->`` of README.md (HTML comments: invisible on GitHub). Its commands are its lines
without the blank and comment-only ones; a line ending in a backslash continues on the next line, and
the command keeps both lines as written. ``.ci/run`` runs them; ``tests/test_quickstart.py`` checks them.
Both read them through :func:`extract`, so neither can drift from the README. Another marked block is read the
same way by its name (``--block triton-tests``: the README's commands that run the Triton kernels' tests, which
CI runs after the quick start's).

Standard library only: ``.ci/run`` calls it with the system Python before any virtual environment exists.

Usage: ``python .ci/quickstart.py [--block NAME] [README.md]`` writes the commands to stdout, each followed by a
NUL byte (a command may span lines); it exits with status 1 and a message when the block cannot be found.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

START = "<!-- quickstart -->"
END = "<!-- /quickstart -->"
# the whole text between the markers: one fenced bash block and nothing else but blank lines
_BLOCK = re.compile(r"\A\s*```(?:bash|sh|shell)[ \t]*\n(?P<body>.*?)^```[ \t]*\s*\Z", flags=re.S | re.M)


class QuickstartError(ValueError):
    """The README has no well-formed quick start (markers missing, repeated or misplaced; block empty)."""


def _marker_line(lines: list[str], marker: str) -> int:
    """Index of the single line that is exactly ``marker`` (surrounding spaces allowed)."""
    hits = [i for i, line in enumerate(lines) if line.strip() == marker]
    if len(hits) != 1:
        raise QuickstartError(f"expected exactly one line {marker!r} in the README, found {len(hits)}")
    return hits[0]


def markers(name: str) -> tuple[str, str]:
    """The lines that open and close the marked block ``name`` (``quickstart``: :data:`START`, :data:`END`)."""
    return f"<!-- {name} -->", f"<!-- /{name} -->"


def extract(text: str, name: str = "quickstart") -> list[str]:
    """The commands of a README's block ``name`` (the quick start by default), in order, each as written (without
    trailing spaces).

    Raises QuickstartError when a marker is missing or repeated, the end marker precedes the start marker,
    the text between them is not a single fenced bash block, or the block holds no command.
    """
    lines = text.splitlines()
    opening, closing = markers(name)
    start, end = _marker_line(lines, opening), _marker_line(lines, closing)
    if end <= start:
        raise QuickstartError(f"{closing!r} (line {end + 1}) must come after {opening!r} (line {start + 1})")
    between = "\n".join(lines[start + 1 : end]) + "\n"
    match = _BLOCK.match(between)
    # a fence inside the body means two blocks (or prose) between the markers
    if match is None or any(line.lstrip().startswith("```") for line in match.group("body").splitlines()):
        raise QuickstartError(
            f"between {opening!r} and {closing!r} (lines {start + 1}-{end + 1}) there must be exactly one fenced "
            "```bash block and nothing else"
        )
    commands: list[str] = []
    pending: list[str] = []  # the lines of a command continued with a trailing backslash
    for raw in match.group("body").splitlines():
        line = raw.rstrip()
        if not pending and (not line or line.lstrip().startswith("#")):
            continue
        pending.append(line)
        if not line.endswith("\\"):
            commands.append("\n".join(pending))
            pending = []
    if pending:
        raise QuickstartError(f"the {name} block's last command ends in a line continuation: {pending[-1]!r}")
    if not commands:
        raise QuickstartError(f"the {name} block between {opening!r} and {closing!r} holds no command")
    return commands


def main(argv: list[str]) -> int:
    """Write the commands of the README named by ``argv`` (default: the repository's) NUL-terminated; ``--block
    NAME`` first: another marked block than the quick start."""
    name = "quickstart"
    if argv[:1] == ["--block"] and len(argv) >= 2:
        name, argv = argv[1], argv[2:]
    readme = Path(argv[0]) if argv else Path(__file__).resolve().parents[1] / "README.md"
    try:
        commands = extract(readme.read_text(encoding="utf-8"), name)
    except (OSError, QuickstartError) as err:
        sys.stderr.write(f"quickstart: {readme}: {err}\n")
        return 1
    sys.stdout.write("".join(command + "\0" for command in commands))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
