"""The ``synthformer`` commands the documentation shows: every fenced shell block of README.md and docs/*.md, the
examples of every verb's ``--help`` and those in the header comments of configs/*.yaml, read as a shell would read
them (lines continued by a backslash, comments, ``NAME=value`` assignments, ``for VAR in ...; do ... done`` loops
over every value, ``bash -c '...'``), each command reduced to the arguments that follow ``synthformer`` (or
``-m synthformer.cli.main`` under torchrun, accelerate, python or srun). Used by ``test_doc_commands.py``."""

from __future__ import annotations

import argparse
import itertools
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^```(?:bash|sh|shell|console)[ \t]*\n(.*?)^```", flags=re.S | re.M)
_LOOP = re.compile(r"^for (\w+) in ([^;]*); do\b(.*)$")
_VARIABLE = re.compile(r"\$\{?(\w+)\}?")
_ASSIGNMENT = re.compile(r"^(\w+)=(.*)$", flags=re.S)
_LAUNCHER_WORDS = frozenset({"exec", "srun", "time", "nice"})
_OPERATORS = frozenset({">", ">>", "<", "|", "||", "&&", ";", "&", "2>", "2>&1"})


@dataclass(frozen=True)
class Command:
    """One command: where it is written (``file:line`` or ``synthformer VERB --help``) and the arguments after
    ``synthformer``."""

    where: str
    argv: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.where}: synthformer {shlex.join(self.argv)}"


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(first line number, line)`` with backslash-continued lines joined."""
    pending, start = "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        yield start, pending + line
        pending = ""
    if pending:
        yield start, pending


def _split(line: str) -> list[str]:
    """The shell words of ``line``; prose that is no shell (an apostrophe) is no words, a command that is not shell
    either is an error."""
    try:
        return shlex.split(line, comments=True)
    except ValueError:
        if re.search(r"\bsynthformer(\.cli\.main)?\s", line):
            raise ValueError(f"not a shell command: {line!r}") from None
        return []


def _invocation(words: list[str]) -> list[str] | None:
    """The arguments after ``synthformer`` in a command's words, or None when it runs no synthformer."""
    for i in range(len(words) - 1):
        if words[i] == "-m" and words[i + 1] == "synthformer.cli.main":
            return words[i + 2:]
        if words[i] == "-c" and i and words[i - 1] in ("bash", "sh"):
            return _invocation(_split(words[i + 1]))
    j = 0
    while j < len(words) and (words[j] in _LAUNCHER_WORDS or _ASSIGNMENT.match(words[j])):
        j += 1
    return words[j + 1:] if j < len(words) and words[j] == "synthformer" else None


def commands_in_shell(text: str, where: str, line_offset: int = 0) -> list[Command]:
    """The synthformer commands of a piece of shell (see the module docstring); unknown ``$VARIABLES`` become their
    name in lower case (``$HOME/runs`` -> ``home/runs``: a relative path)."""
    found: list[Command] = []
    variables: dict[str, str] = {}
    loops: list[tuple[str, list[str]]] = []

    def expand(line: str, number: int) -> None:
        names = [name for name, _ in loops]
        for values in itertools.product(*(vals for _, vals in loops)) if loops else [()]:
            known = {**variables, **dict(zip(names, values, strict=True))}
            text = _VARIABLE.sub(lambda m, known=known: known.get(m.group(1), m.group(1).lower()), line)
            argv = _invocation(_split(text))
            if argv is None:
                continue
            cut = next((k for k, w in enumerate(argv) if w in _OPERATORS), len(argv))
            found.append(Command(f"{where}:{number + line_offset}", tuple(argv[:cut])))

    for number, line in _logical_lines(text):
        stripped = line.strip()
        loop = _LOOP.match(stripped)
        if loop:
            body = loop.group(3).split("#", 1)[0].strip()
            loops.append((loop.group(1), loop.group(2).split()))
            if body.endswith("done"):  # for ...; do COMMAND; done on one line
                expand(body.removesuffix("done").rstrip().rstrip(";"), number)
                loops.pop()
            elif body:
                expand(body, number)
            continue
        if stripped.startswith("done"):
            loops.pop()
            continue
        words = _split(stripped)
        if len(words) == 1 and _ASSIGNMENT.match(words[0]):
            name, value = _ASSIGNMENT.match(words[0]).groups()  # type: ignore[union-attr]
            variables[name] = value
            continue
        if words:
            expand(stripped, number)
    return found


def doc_files() -> list[Path]:
    """README.md and every page of docs/ and docs/results/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
            *sorted((ROOT / "docs" / "results").glob("*.md"))]


def commands_in_markdown(path: Path) -> list[Command]:
    """The synthformer commands of the fenced shell blocks of a Markdown file."""
    text = path.read_text(encoding="utf-8")
    found = []
    for block in _FENCE.finditer(text):
        first = text.count("\n", 0, block.start(1))  # the block's first line is line first + 1
        found += commands_in_shell(block.group(1), str(path.relative_to(ROOT)), first)
    return found


def commands_in_config(path: Path) -> list[Command]:
    """The synthformer commands of a run config's comments (its indented comment lines: ``#   synthformer ...``)."""
    lines = [line[1:] if line.startswith("#") and line[1:3] == "  " else ""
             for line in path.read_text(encoding="utf-8").splitlines()]
    return commands_in_shell("\n".join(lines), str(path.relative_to(ROOT)))


def help_epilogs() -> dict[str, str]:
    """``synthformer [VERB] --help`` -> its epilog (the examples), every verb's and the benchmark's modes."""
    from synthformer.bench.cli import build_parser as bench_parser
    from synthformer.bench.lra_cli import build_lra_parser
    from synthformer.cli.main import build_parser

    parser = build_parser()
    out = {"synthformer --help": parser.epilog or ""}
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    for name, verb in verbs.choices.items():
        out[f"synthformer {name} --help"] = verb.epilog or ""
    out["synthformer bench --help"] = bench_parser("synthformer bench").epilog or ""
    out["synthformer bench --lra-table2 --help"] = build_lra_parser("synthformer bench --lra-table2").epilog or ""
    return out


def commands_in_help() -> list[Command]:
    """The synthformer commands among the examples of every ``--help`` (its indented lines)."""
    found = []
    for where, epilog in help_epilogs().items():
        examples = "\n".join(line for line in epilog.splitlines() if line.startswith("  "))
        found += [Command(where, c.argv) for c in commands_in_shell(examples, where)]
    return found


def all_commands() -> list[Command]:
    """Every documented command, in the order of the files (then the help texts, then the configs)."""
    configs = [c for path in sorted((ROOT / "configs").glob("*.yaml")) for c in commands_in_config(path)]
    return [c for path in doc_files() for c in commands_in_markdown(path)] + commands_in_help() + configs
