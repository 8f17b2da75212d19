"""Readers for multi-turn dialogue corpora, and the (persona + history -> response) exchanges built from them.

Formats (every reader decodes strict UTF-8 and raises :class:`~synthformer.data.errors.DataError` as
``file:line: problem`` for a malformed line):

* ``parlai``: PersonaChat as ParlAI ships it, in either of ParlAI's two text layouts (detected per line):

  - the numbered dialogue text of ``*_self_original_no_cands.txt``: ``N your persona: ...`` lines, then
    ``N partner's turn<TAB>our response[<TAB>reward<TAB>candidates]``, with N restarting at 1 for each dialogue
    (``partner's persona:`` lines of the ``both`` variants are read and ignored);
  - ParlAI's field layout: ``text:...<TAB>labels:...<TAB>episode_done:True``, where ``text`` holds the persona
    lines and the partner's turn joined by ``\\n``, ``labels`` the response (the first of ``|``-separated ones)
    and ``episode_done:True`` ends the dialogue.

* ``jsonl``: one dialogue per line, ``{"persona": ["i like cats.", ...], "turns": ["hi !", "hello", ...]}``
  (``persona`` optional; at least two turns).
* ``dailydialog``: DailyDialog's official ``dialogues_*.txt``: one dialogue per line, turns separated by
  ``__eou__`` (no personas).

A :class:`Dialogue` with a persona speaks for that persona: in PersonaChat the partner speaks first, so the turns
at odd positions (1, 3, ...) are the persona's responses; a dialogue without one has a response at every turn after
the first. :func:`dialogue_exchanges` turns each response into one :class:`Exchange`.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from synthformer.data import DataError, json_object, read_utf8, split_lines

__all__ = ["DIALOGUE_FORMATS", "Dialogue", "Exchange", "dialogue_exchanges", "read_dialogues", "response_positions"]

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]
#: Formats :func:`read_dialogues` understands.
DIALOGUE_FORMATS: tuple[str, ...] = ("parlai", "jsonl", "dailydialog")
_NUMBERED = re.compile(r"(\d+) (.*)")
_SELF_PERSONA = "your persona:"
_PARTNER_PERSONA = "partner's persona:"
_EOU = "__eou__"


class Dialogue(NamedTuple):
    """One dialogue: the persona of the responding speaker (empty when there is none), the turns in order, and
    the 1-based line of the file it starts at."""

    persona: tuple[str, ...]
    turns: tuple[str, ...]
    line: int | None = None


class Exchange(NamedTuple):
    """One training example: the responder's persona, the preceding turns (oldest first; the last one is the
    partner's), and the response."""

    persona: tuple[str, ...]
    history: tuple[str, ...]
    response: str
    line: int | None = None


def read_dialogues(path: PathLike, format: str, empty_lines: str = "error") -> list[Dialogue]:
    """The dialogues of a file in ``format`` (one of :data:`DIALOGUE_FORMATS`, see the module docstring).

    Args:
        empty_lines: ``"error"`` or ``"skip"`` for blank lines (the ParlAI layouts skip nothing else).

    Raises:
        DataError: a malformed line (file and line named), or a file without any dialogue.
        ValueError: an unknown format or empty-line policy.
    """
    if format not in DIALOGUE_FORMATS:
        raise ValueError(f"unknown dialogue format {format!r}; valid: {', '.join(DIALOGUE_FORMATS)}")
    if empty_lines not in ("error", "skip"):
        raise ValueError(f"empty_lines must be 'error' or 'skip', got {empty_lines!r}")
    lines = list(_lines(path, empty_lines))
    readers = {"parlai": _read_parlai, "jsonl": _read_jsonl, "dailydialog": _read_dailydialog}
    dialogues = readers[format](path, lines)
    if not dialogues:
        raise DataError(path, None, f"no dialogues found (format {format!r})")
    return dialogues


def _lines(path: PathLike, empty_lines: str) -> Iterable[tuple[int, str]]:
    for number, line in enumerate(split_lines(read_utf8(path)), start=1):
        if line.strip():
            yield number, line
        elif empty_lines == "error":
            raise DataError(path, number, "empty line (pass empty_lines='skip' to skip such lines)")


def _turn(text: str, path: PathLike, number: int, what: str) -> str:
    text = text.strip()
    if not text:
        raise DataError(path, number, f"empty {what}")
    return text


# -- ParlAI ---------------------------------------------------------------------------------------------------
class _Builder:
    """Collects the persona and turns of the dialogue being read."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.persona: list[str] = []
        self.turns: list[str] = []
        self.start: int | None = None

    def add_persona(self, text: str, path: PathLike, number: int) -> None:
        if self.turns:
            raise DataError(path, number, "persona line after the dialogue's first turn (a new dialogue starts "
                                          "with line number 1)")
        self.start = self.start or number
        self.persona.append(_turn(text, path, number, "persona line"))

    def add_exchange(self, partner: str, response: str, path: PathLike, number: int) -> None:
        self.start = self.start or number
        self.turns += [_turn(partner, path, number, "partner turn"), _turn(response, path, number, "response")]

    def finish(self, path: PathLike, out: list[Dialogue]) -> None:
        """Append the dialogue read so far (if any) to ``out`` and start a new one."""
        if self.start is None:
            return
        if not self.turns:
            raise DataError(path, self.start, "dialogue has persona lines but no turns")
        out.append(Dialogue(tuple(self.persona), tuple(self.turns), self.start))
        self.reset()


def _read_parlai(path: PathLike, lines: list[tuple[int, str]]) -> list[Dialogue]:
    out: list[Dialogue] = []
    current = _Builder()
    previous = 0  # the last line number of the numbered layout
    for number, line in lines:
        if line.startswith("text:"):
            _parlai_fields(line, path, number, current, out)
            continue
        match = _NUMBERED.fullmatch(line)
        if match is None:
            raise DataError(path, number, "expected 'N text' (a line number, a space and the text) or ParlAI's "
                                          f"'text:...<TAB>labels:...' fields, got {line[:40]!r}")
        index, body = int(match.group(1)), match.group(2)
        if index == 1:
            current.finish(path, out)
        elif index != previous + 1:
            raise DataError(path, number, f"line number {index} does not follow {previous} (a dialogue counts "
                                          "1, 2, 3, ...)")
        previous = index
        if body.startswith(_SELF_PERSONA):
            current.add_persona(body[len(_SELF_PERSONA):], path, number)
        elif body.startswith(_PARTNER_PERSONA):
            continue
        elif "\t" not in body:
            raise DataError(path, number, "expected 'partner turn<TAB>response' (no tab found)")
        else:
            partner, response = body.split("\t")[:2]
            current.add_exchange(partner, response, path, number)
    current.finish(path, out)
    return out


def _parlai_fields(line: str, path: PathLike, number: int, current: _Builder, out: list[Dialogue]) -> None:
    fields = {}
    for field in line.split("\t"):
        key, sep, value = field.partition(":")
        if not sep:
            raise DataError(path, number, f"ParlAI field without 'name:' ({field[:30]!r})")
        fields[key] = value
    if "labels" not in fields and "eval_labels" not in fields:
        raise DataError(path, number, "ParlAI line without a 'labels:' field")
    response = (fields.get("labels") or fields.get("eval_labels", "")).split("|")[0]
    partner = []
    for part in fields["text"].split("\\n"):
        if part.startswith(_SELF_PERSONA):
            current.add_persona(part[len(_SELF_PERSONA):], path, number)
        elif not part.startswith(_PARTNER_PERSONA):
            partner.append(part)
    current.add_exchange(" ".join(partner), response, path, number)
    if fields.get("episode_done", "").strip().lower() == "true":
        current.finish(path, out)


# -- JSONL and DailyDialog ------------------------------------------------------------------------------------
def _strings(value: object, path: PathLike, number: int, field: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataError(path, number, f"field {field!r} must be a list of strings, got {type(value).__name__}")
    return tuple(_turn(v, path, number, f"string in {field!r}") for v in value)


def _read_jsonl(path: PathLike, lines: list[tuple[int, str]]) -> list[Dialogue]:
    out = []
    for number, line in lines:
        record = json_object(line, path, number)
        if "turns" not in record:
            raise DataError(path, number, f"missing field 'turns' (fields present: {sorted(record)})")
        turns = _strings(record["turns"], path, number, "turns")
        if len(turns) < 2:
            raise DataError(path, number, f"a dialogue needs at least 2 turns, got {len(turns)}")
        out.append(Dialogue(_strings(record.get("persona", []), path, number, "persona"), turns, number))
    return out


def _read_dailydialog(path: PathLike, lines: list[tuple[int, str]]) -> list[Dialogue]:
    out = []
    for number, line in lines:
        parts = [p.strip() for p in line.split(_EOU)]
        if parts and not parts[-1]:
            parts.pop()  # the line ends with __eou__
        if any(not p for p in parts):
            raise DataError(path, number, f"empty turn between two '{_EOU}' markers")
        if len(parts) < 2:
            raise DataError(path, number, f"a dialogue needs at least 2 turns separated by '{_EOU}', got "
                                          f"{len(parts)}")
        out.append(Dialogue((), tuple(parts), number))
    return out


# -- exchanges ------------------------------------------------------------------------------------------------
def response_positions(dialogue: Dialogue) -> range:
    """The turns that are responses: the persona's (odd positions) when the dialogue has one, else all but
    the first."""
    return range(1, len(dialogue.turns), 2) if dialogue.persona else range(1, len(dialogue.turns))


def dialogue_exchanges(dialogues: Sequence[Dialogue], history: int | None) -> list[Exchange]:
    """One :class:`Exchange` per response of each dialogue, with at most ``history`` preceding turns (None: all).

    Raises:
        ValueError: ``history`` below 1.
    """
    if history is not None and history < 1:
        raise ValueError(f"history must be >= 1 turn (or None for all), got {history}")
    out = []
    for d in dialogues:
        for i in response_positions(d):
            start = 0 if history is None else max(0, i - history)
            out.append(Exchange(d.persona, d.turns[start:i], d.turns[i], d.line))
    return out
