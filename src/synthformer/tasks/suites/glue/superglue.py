"""The SuperGLUE tasks whose records are not one flat example each: MultiRC, ReCoRD, WSC (and AX-g's pairs).

Each reader takes the records of one file (the official SuperGLUE JSONL) or of one Hugging Face ``super_glue``
split (whose layout is flatter: one row per answer option for MultiRC, per query for ReCoRD) and returns T5's
text-to-text examples. The formats follow T5 (``t5/data/preprocessors.py``: ``glue`` for MultiRC, ``record``,
``wsc_simple``; ``t5/data/glue_utils.py``), rewritten here:

* **MultiRC**: one example per answer option, ``"multirc question: {q} answer: {a} paragraph: {p}"`` with the
  HTML tags ``<br>`` (a space) and ``<b>``/``</b>`` removed, target ``False``/``True``, group
  ``"<paragraph idx>-<question idx>"`` (exact match is scored per question).
* **ReCoRD**: ``"record query: {query} entities: {e1}, {e2}, ... passage: {passage}"``, the entities the sorted
  distinct texts of the passage's entity spans (``end`` inclusive, as TFDS and Hugging Face read them), each
  ``"\\n@highlight\\n"`` of the passage turned into ``". "`` (or a space after ``. ? ! " '``). Training: one example
  per distinct gold answer, the answer the target. Dev: one example per query (T5 deduplicates the copies at
  scoring), the first answer (sorted) as target and all of them in :attr:`TextToTextExample.answers`.
* **WSC** (``wsc_simple``): ``"wsc: {text}"`` with the pronoun (``span2``) marked as ``*he*``; the target is the
  candidate referent's text (``span1_text``) and the label whether it is the pronoun's referent. Training keeps only
  the examples whose candidate is the referent (T5's ``correct_referent_only``); the dev set keeps every example.
  Where the word at ``span2_index`` is the pronoun with punctuation attached (``him,"``) the mark is ``*him* ,"``;
  where the index is off (one official example), the nearest occurrence of the pronoun is marked. T5 handles these
  two cases by hard-coding their texts.
* **AX-g**: pairs of consecutive lines, the same hypothesis with a male and a female premise; each pair is one
  group for the gender parity score (the order of the release file, as jiant's ``GenderParity`` reads it).

Every problem raises :class:`~synthformer.data.errors.DataError` naming the file (or data set and split) and line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from os import PathLike
from typing import Any

from synthformer.data import DataError

from .table import GlueTask, TextToTextExample

__all__ = ["mark_pronoun", "pair_axg", "read_superglue_records", "text_field"]

Where = str | PathLike[str]  # a file path or "benchmark/name[split]"


def text_field(record: Mapping[str, Any], key: str, where: Where, line: int) -> str:
    """``record[key]``, a string; a missing field or another type raises a located :class:`DataError`."""
    if key not in record:
        raise DataError(where, line, f"missing field {key!r} (present: {', '.join(sorted(record))})")
    value = record[key]
    if not isinstance(value, str):
        raise DataError(where, line, f"field {key!r} must be a string, got {type(value).__name__}")
    return value


def _typed(record: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: Where, line: int) -> Any:
    if key not in record:
        raise DataError(where, line, f"missing field {key!r} (present: {', '.join(sorted(record))})")
    value = record[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise DataError(where, line, f"field {key!r} must be a {names}, got {type(value).__name__}")
    return value


def _bool_label(raw: Any, where: Where, line: int) -> int:
    """A JSON bool (official files) or 0/1 (Hugging Face) as 0/1; -1 is a test row without a label."""
    if isinstance(raw, bool):
        return int(raw)
    if isinstance(raw, int) and raw in (0, 1):
        return raw
    if isinstance(raw, int) and raw == -1:
        raise DataError(where, line, "label -1: this split has no public labels; use the dev split")
    raise DataError(where, line, f"label {raw!r} is not a truth value (true/false or 0/1)")


def _label(record: Mapping[str, Any], where: Where, line: int) -> int:
    if "label" not in record:
        raise DataError(where, line, "missing field 'label' (test files have no labels)")
    return _bool_label(record["label"], where, line)


def _nonempty(where: Where, line: int, **values: str) -> None:
    for key, value in values.items():
        if not value.strip():
            raise DataError(where, line, f"empty text in field {key!r}")


# -- MultiRC --------------------------------------------------------------------------------------------------

def _multirc_source(question: str, answer: str, paragraph: str) -> str:
    joined = f"multirc question: {question} answer: {answer} paragraph: {paragraph}"
    return re.sub(r"</?b>", "", joined.replace("<br>", " "))  # T5 removes the HTML markup of the passages


def _multirc(task: GlueTask, record: Mapping[str, Any], where: Where, line: int) -> Iterator[TextToTextExample]:
    if "paragraph" in record:  # Hugging Face: one row per answer option
        idx = _typed(record, "idx", dict, where, line)
        group = f"{idx.get('paragraph')}-{idx.get('question')}"
        rows = [(text_field(record, "question", where, line), text_field(record, "answer", where, line),
                 _label(record, where, line))]
        paragraph = text_field(record, "paragraph", where, line)
        groups = [group]
    else:  # official: a paragraph with its questions, each with its answer options
        passage = _typed(record, "passage", dict, where, line)
        paragraph = text_field(passage, "text", where, line)
        rows, groups = [], []
        for question in _typed(passage, "questions", list, where, line):
            if not isinstance(question, dict):
                raise DataError(where, line, f"a question must be a JSON object, got {type(question).__name__}")
            text = text_field(question, "question", where, line)
            for answer in _typed(question, "answers", list, where, line):
                if not isinstance(answer, dict):
                    raise DataError(where, line, f"an answer must be a JSON object, got {type(answer).__name__}")
                rows.append((text, text_field(answer, "text", where, line), _label(answer, where, line)))
                groups.append(f"{record.get('idx')}-{question.get('idx')}")
        if not rows:
            raise DataError(where, line, "a MultiRC paragraph without any answer option")
    assert task.labels is not None
    for (question, answer, label), group in zip(rows, groups, strict=True):
        _nonempty(where, line, question=question, paragraph=paragraph)  # (a few official answers are empty)
        yield TextToTextExample(task.name, _multirc_source(question, answer, paragraph), task.labels[label], label,
                                line, group=group)


# -- ReCoRD ---------------------------------------------------------------------------------------------------

def _record_passage(passage: str) -> str:
    passage = re.sub(r"([.?!\"'])\n@highlight\n", r"\1 ", passage)
    return passage.replace("\n@highlight\n", ". ")


def _spans(text: str, spans: Any, key: str, where: Where, line: int) -> list[str]:
    """The texts of ``[{"start": s, "end": e}, ...]`` (``end`` inclusive) in ``text``."""
    if not isinstance(spans, list):
        raise DataError(where, line, f"field {key!r} must be a list of spans, got {type(spans).__name__}")
    out = []
    for span in spans:
        start, end = (span.get("start"), span.get("end")) if isinstance(span, dict) else (None, None)
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end < len(text)):
            raise DataError(where, line, f"{key}: {span!r} is no span of the passage (start <= end < "
                                         f"{len(text)}, end inclusive)")
        out.append(text[start:end + 1])
    return out


def _record_queries(record: Mapping[str, Any], where: Where,
                    line: int) -> Iterator[tuple[str, str, list[str], list[str], str]]:
    """(passage, query, entities, answers, group) of each query of a record, in either layout."""
    if "query" in record:  # Hugging Face: one row per query, entities and answers as lists of strings
        idx = _typed(record, "idx", dict, where, line)
        lists = {}
        for key in ("entities", "answers"):
            values = _typed(record, key, list, where, line)
            if not all(isinstance(v, str) for v in values):
                raise DataError(where, line, f"field {key!r} must be a list of strings")
            lists[key] = values
        yield (text_field(record, "passage", where, line), text_field(record, "query", where, line),
               lists["entities"], lists["answers"], f"{idx.get('passage')}-{idx.get('query')}")
        return
    passage = _typed(record, "passage", dict, where, line)
    text = text_field(passage, "text", where, line)
    entities = sorted(set(_spans(text, passage.get("entities"), "entities", where, line)))
    for qa in _typed(record, "qas", list, where, line):
        if not isinstance(qa, dict):
            raise DataError(where, line, f"a query must be a JSON object, got {type(qa).__name__}")
        answers = [text_field(a, "text", where, line) if isinstance(a, dict) else "" for a in qa.get("answers", [])]
        yield text, text_field(qa, "query", where, line), entities, answers, f"{record.get('idx')}-{qa.get('idx')}"


def _record(task: GlueTask, record: Mapping[str, Any], where: Where, line: int,
            train: bool) -> Iterator[TextToTextExample]:
    for passage, query, entities, answers, group in _record_queries(record, where, line):
        _nonempty(where, line, passage=passage, query=query)
        if "@placeholder" not in query:
            raise DataError(where, line, f"query {query!r} has no '@placeholder'")
        gold = tuple(sorted(set(answers)))
        if not gold or not all(a.strip() for a in gold):
            raise DataError(where, line, "a query without answers (or with an empty one): test files have no labels")
        source = f"record query: {query} entities: {', '.join(entities)} passage: {_record_passage(passage)}"
        for answer in gold if train else gold[:1]:
            yield TextToTextExample(task.name, source, answer, 0, line, group=group, answers=gold)


# -- WSC ------------------------------------------------------------------------------------------------------

def mark_pronoun(text: str, pronoun: str, index: int, where: Where, line: int) -> str:
    """``text`` with the words of ``pronoun`` at word ``index`` (split on single spaces) marked ``*pronoun*``."""
    words = text.split(" ")
    n = len(pronoun.split(" "))

    def matches(i: int) -> str | None:  # the punctuation after the pronoun at word i, or None: not there
        found = " ".join(words[i:i + n])
        if found == pronoun:
            return ""
        rest = found[len(pronoun):]
        return rest if found.startswith(pronoun) and rest and not any(c.isalnum() for c in rest) else None

    candidates = sorted(range(len(words)), key=lambda i: abs(i - index))  # the index first, then the nearest
    for i in candidates:
        rest = matches(i)
        if rest is not None:
            marked = f"*{pronoun}*" + (f" {rest}" if rest else "")
            return " ".join(words[:i] + [marked] + words[i + n:])
    raise DataError(where, line, f"span2_text {pronoun!r} is not a word of the text (span2_index {index})")


def _wsc(task: GlueTask, record: Mapping[str, Any], where: Where, line: int,
         train: bool) -> Iterator[TextToTextExample]:
    if "target" not in record and "span1_text" not in record:
        raise DataError(where, line, "missing field 'target' (official layout; Hugging Face rows have 'span1_text', "
                                     f"...) (present: {', '.join(sorted(record))})")
    spans = _typed(record, "target", dict, where, line) if "target" in record else record  # official | HF
    text = text_field(record, "text", where, line)
    referent = text_field(spans, "span1_text", where, line)
    pronoun = text_field(spans, "span2_text", where, line)
    index = _typed(spans, "span2_index", int, where, line)
    _nonempty(where, line, text=text, span1_text=referent, span2_text=pronoun)
    label = _label(record, where, line)
    if train and not label:  # T5 trains on the correct referents only
        return
    source = f"{task.prefix} {mark_pronoun(text, pronoun, index, where, line)}"
    # one official referent holds a line break: targets are single lines (decoded answers are written one a line)
    yield TextToTextExample(task.name, source, referent.replace("\n", " "), label, line)


# -- dispatch -------------------------------------------------------------------------------------------------

def read_superglue_records(task: GlueTask, records: Iterable[tuple[int, Mapping[str, Any]]], where: Where,
                           split: str) -> list[TextToTextExample]:
    """The examples of MultiRC, ReCoRD or WSC from ``(line, record)`` pairs (see the module docstring).

    Args:
        task: the task (its :attr:`GlueTask.scoring` is ``multirc``, ``record`` or ``wsc``).
        records: each JSON object with its 1-based line (or row) number, official or Hugging Face layout.
        where: the file or data set named in errors.
        split: ``"train"`` (ReCoRD: one example per answer; WSC: correct referents only) or a dev split.

    Raises:
        DataError: a missing or mistyped field, a bad label or span, an empty text; file and line named.
    """
    train = split.startswith("train")
    examples: list[TextToTextExample] = []
    for line, record in records:
        if task.scoring == "multirc":
            examples.extend(_multirc(task, record, where, line))
        elif task.scoring == "record":
            examples.extend(_record(task, record, where, line, train))
        elif task.scoring == "wsc":
            examples.extend(_wsc(task, record, where, line, train))
        else:
            raise ValueError(f"{task.name}: not a task with nested records (scoring {task.scoring!r})")
    return examples


def pair_axg(examples: list[TextToTextExample], hypotheses: list[str], where: Where) -> list[TextToTextExample]:
    """AX-g's examples with their pair as :attr:`TextToTextExample.group`: lines ``2k+1`` and ``2k+2`` (1-based)
    must share their hypothesis (the gender-swapped premises of one Winogender sentence).

    Raises:
        DataError: an odd number of examples, or a pair whose hypotheses differ (its second line named).
    """
    if len(examples) % 2:
        raise DataError(where, None, f"AX-g holds pairs of consecutive lines; found an odd count {len(examples)}")
    out = []
    for k in range(0, len(examples), 2):
        first, second = examples[k], examples[k + 1]
        if hypotheses[k] != hypotheses[k + 1]:
            raise DataError(where, second.line, f"hypothesis differs from the line before ({hypotheses[k]!r}): AX-g "
                                                "pairs are consecutive lines with the same hypothesis")
        for example in (first, second):
            out.append(TextToTextExample(example.task, example.source, example.target, example.label, example.line,
                                         group=f"pair{k // 2}"))
    return out
