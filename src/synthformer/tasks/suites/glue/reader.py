"""Reading GLUE and SuperGLUE as text-to-text examples (T5 style), from the official files or Hugging Face.

The tasks, their names and the exact input and target formats are in :mod:`.table`
(re-exported here). Two sources:

* :func:`read_glue_split` reads the official release layout. GLUE: ``<data_dir>/<folder>/<split>.tsv``, e.g.
  ``glue/RTE/dev.tsv``, ``glue/MNLI/dev_matched.tsv``. Fields are split on tabs only (no CSV quoting: MRPC and
  MNLI have unbalanced double quotes), a leading UTF-8 byte-order mark is dropped (MRPC), and columns are found
  by header name; CoLA has no header and is read by position (``source, label, original label, sentence``).
  SuperGLUE: ``<data_dir>/<folder>/{train,val}.jsonl``, one JSON object per line with the official field names;
  the diagnostics have one labelled file, their dev set (``AX-b/AX-b.jsonl``, ``AX-g/AX-g.jsonl``). MultiRC,
  ReCoRD and WSC records are read by :mod:`.superglue`.
* :func:`load_hf_glue` reads ``datasets.load_dataset("glue" | "super_glue", <name>)``.

Both check every row: a wrong number of fields, a missing column or field, a label that is no class (or, STS-B, no
number in [0, 5]), or an empty text raise :class:`~synthformer.data.errors.DataError` naming the file (or data set
and split) and the 1-based line (or row). Test splits are refused: their labels are not public.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from synthformer.data import DataError, json_object, read_utf8, split_lines

from .superglue import pair_axg, read_superglue_records, text_field
from .table import GLUE_TASKS, GlueTask, TextToTextExample, get_glue_task

__all__ = [
    "GLUE_TASKS",
    "GlueTask",
    "TextToTextExample",
    "get_glue_task",
    "glue_split_path",
    "load_hf_glue",
    "read_glue_split",
]

logger = logging.getLogger(__name__)

_TEST_SPLITS = ("test", "test_matched", "test_mismatched")
_JSONL_DEV = ("dev", "val", "validation")


def _test_split_error(task: GlueTask, split: str) -> ValueError:
    return ValueError(f"{task.name}: the {split!r} split has no public labels ({task.benchmark} test labels are "
                      "not released); use 'dev' for evaluation")


def glue_split_path(task: str | GlueTask, data_dir: str | Path, split: str) -> Path:
    """The file that :func:`read_glue_split` reads for ``split`` (see there); it need not exist.

    Raises:
        ValueError: an unknown task or split name, or a test split.
    """
    task = get_glue_task(task)
    if split in _TEST_SPLITS:
        raise _test_split_error(task, split)
    folder = Path(data_dir) / task.folder
    if task.benchmark == "super_glue":
        if split == "train" and task.eval_only:
            raise ValueError(f"{task.name}: a diagnostic set has no training split (evaluate it with a model "
                             "trained on RTE-style data); valid: " + ", ".join(_JSONL_DEV))
        if split == "train":
            return folder / "train.jsonl"
        if split in _JSONL_DEV:
            return folder / f"{task.dev_splits[0]}.jsonl"
        valid = (() if task.eval_only else ("train",)) + _JSONL_DEV
    else:
        if split == "train":
            return folder / "train.tsv"
        if split == "dev":
            return folder / f"{task.dev_splits[0]}.tsv"
        if split in task.dev_splits:
            return folder / f"{split}.tsv"
        valid = ("train", "dev") + tuple(s for s in task.dev_splits if s != "dev")
    raise ValueError(f"{task.name}: unknown split {split!r}; valid: {', '.join(valid)}")


def read_glue_split(task: str | GlueTask, data_dir: str | Path, split: str) -> list[TextToTextExample]:
    """Read one split of a task from the official files under ``data_dir``.

    Args:
        task: a task name of :data:`GLUE_TASKS` or a :class:`GlueTask`.
        data_dir: the folder holding the task folders (``RTE/``, ``SST-2/``, ``BoolQ/`` ...).
        split: ``"train"`` or ``"dev"``. For MNLI ``"dev"`` reads ``dev_matched.tsv``; ``"dev_matched"`` and
            ``"dev_mismatched"`` may be named. For SuperGLUE ``"dev"`` (or ``"val"``) reads ``val.jsonl``.

    Returns:
        The examples in file order; ``line`` is the line of the file (the header is line 1).

    Raises:
        ValueError: an unknown task or split, or a test split.
        DataError: a missing file, invalid UTF-8 or JSON, a missing column, a row with the wrong number of
            fields, a bad label or an empty text, naming the file and line; a file with no examples.
    """
    task = get_glue_task(task)
    path = glue_split_path(task, data_dir, split)
    if not path.exists():  # a folder (or unreadable file) in its place: read_utf8 says so
        layout = "<folder>/{train,val}.jsonl" if task.benchmark == "super_glue" else "<folder>/<split>.tsv"
        layout = f"<folder>/{path.name}" if task.eval_only else layout
        raise DataError(path, None, f"file not found (expected the official {task.benchmark} layout "
                                    f"{Path(data_dir) / layout} with folder {task.folder!r})")
    text = read_utf8(path).removeprefix("\ufeff")
    lines = split_lines(text)
    if task.scoring in ("multirc", "record", "wsc"):
        records = ((number, json_object(line, path, number)) for number, line in enumerate(lines, start=1))
        examples = read_superglue_records(task, records, path, split)
    elif task.benchmark == "super_glue":
        examples = _read_jsonl(task, path, lines)
    else:
        examples = _read_tsv(task, path, lines)
    if not examples:
        raise DataError(path, None, "no examples in the file")
    logger.info("%s: read %d %s examples from %s", task.name, len(examples), split, path)
    return examples


def _column_indices(task: GlueTask, path: Path, lines: list[str]) -> tuple[list[int], int, int]:
    """Indices of the input and label columns, the expected field count, and the first data line (0-based)."""
    if not task.header:
        indices = [int(c) for c in task.tsv_columns]
        return indices, max(indices) + 1, 0
    if not lines:
        raise DataError(path, None, "empty file (expected a header line)")
    header = lines[0].split("\t")
    indices = []
    for column in task.tsv_columns:
        if column not in header:
            raise DataError(path, 1, f"missing column {column!r} in the header (found: {', '.join(header)})")
        indices.append(header.index(column))
    return indices, len(header), 1


def _read_tsv(task: GlueTask, path: Path, lines: list[str]) -> list[TextToTextExample]:
    indices, n_fields, first = _column_indices(task, path, lines)
    *input_indices, label_index = indices
    examples = []
    for number, line in enumerate(lines[first:], start=first + 1):
        fields = line.split("\t")
        if len(fields) != n_fields:
            raise DataError(path, number, f"expected {n_fields} tab-separated fields, found {len(fields)}")
        values = {key: fields[i] for key, i in zip(task.inputs, input_indices, strict=True)}
        label = _tsv_label(task, fields[label_index], path, number)
        examples.append(_example(task, values, label, path, number))
    return examples


def _tsv_label(task: GlueTask, raw: str, where: str | Path, line: int) -> int | float:
    raw = raw.strip()
    if task.tsv_label == "score":
        try:
            value = float(raw)
        except ValueError:
            raise DataError(where, line, f"score {raw!r} is not a number") from None
        return _score(value, where, line)
    assert task.labels is not None
    if task.tsv_label == "name":
        if raw not in task.labels:
            raise DataError(where, line, f"label {raw!r} is not one of {', '.join(task.labels)}")
        return task.labels.index(raw)
    valid = [str(i) for i in range(len(task.labels))]
    if raw not in valid:
        raise DataError(where, line, f"label {raw!r} is not a class index ({', '.join(valid)})")
    return int(raw)


def _score(value: float, where: str | Path, line: int) -> float:
    if not math.isfinite(value) or not 0.0 <= value <= 5.0:
        raise DataError(where, line, f"score {value!r} is not in [0, 5]")
    return value


def _read_jsonl(task: GlueTask, path: Path, lines: list[str]) -> list[TextToTextExample]:
    examples, hypotheses = [], []
    for number, line in enumerate(lines, start=1):
        record = json_object(line, path, number)
        values = _values(task, record, path, number)
        if "label" not in record:
            raise DataError(path, number, "missing field 'label' (test files have no labels)")
        label = _json_label(task, record["label"], path, number)
        examples.append(_example(task, values, label, path, number))
        hypotheses.append(values.get("hypothesis", ""))
    return pair_axg(examples, hypotheses, path) if task.scoring == "axg" else examples


def _values(task: GlueTask, record: Any, where: str | Path, line: int) -> dict[str, str]:
    """The input texts of a flat record, by input name (read from :attr:`GlueTask.fields`)."""
    return {key: text_field(record, field, where, line) for key, field in zip(task.inputs, task.fields, strict=True)}


def _json_label(task: GlueTask, raw: Any, where: str | Path, line: int) -> int | float:
    """A label as JSON or Hugging Face give it: a bool (BoolQ, WiC), a class index, a class name, or a score."""
    if task.labels is None:
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise DataError(where, line, f"score {raw!r} is not a number")
        return _score(float(raw), where, line)
    n = len(task.labels)
    if isinstance(raw, bool):
        if task.labels == ("False", "True"):
            return int(raw)
    elif isinstance(raw, int):
        if 0 <= raw < n:
            return raw
    elif isinstance(raw, str) and raw in task.labels:
        return task.labels.index(raw)
    raise DataError(where, line, f"label {raw!r} is not a class of {task.name} "
                                 f"(class indices 0..{n - 1} or names {', '.join(task.labels)})")


def _example(task: GlueTask, values: dict[str, str], label: int | float, where: str | Path,
             line: int) -> TextToTextExample:
    for key, value in values.items():
        if not value.strip():
            raise DataError(where, line, f"empty text in field {key!r}")
    return TextToTextExample(task.name, task.source_text(values), task.verbalize(label), label, line)


def _hf_split(task: GlueTask, split: str) -> str:
    if task.eval_only:  # the diagnostics' labelled rows are Hugging Face's "test" split
        if split == "train":
            raise ValueError(f"{task.name}: a diagnostic set has no training split; use 'dev'")
        return "test" if split in _JSONL_DEV + ("test",) else split
    if split in _TEST_SPLITS:
        raise _test_split_error(task, split)
    if task.name == "mnli" and split in ("dev", "dev_matched", "validation"):
        return "validation_matched"
    if task.name == "mnli" and split == "dev_mismatched":
        return "validation_mismatched"
    return "validation" if split in _JSONL_DEV else split


def _import_datasets() -> Any:
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("loading GLUE from Hugging Face needs the optional 'datasets' package: "
                          "pip install datasets (it is part of synthformer's 'dev' extra)") from exc
    return datasets


def load_hf_glue(task: str | GlueTask, split: str, *, path: str | None = None,
                 **load_kwargs: Any) -> list[TextToTextExample]:
    """Load one split of a task with ``datasets.load_dataset(benchmark, hub_name, split=...)``.

    Args:
        task: a task name of :data:`GLUE_TASKS` or a :class:`GlueTask`.
        split: ``"train"`` or ``"dev"`` (Hugging Face's ``"validation"``; MNLI: ``"validation_matched"``, and
            ``"dev_mismatched"`` gives ``"validation_mismatched"``). Other names, slices included
            (``"train[:1000]"``), are passed on as they are.
        path: the data set to load instead of :attr:`GlueTask.benchmark` (``"nyu-mll/glue"``, a local copy).
        **load_kwargs: passed on to :func:`datasets.load_dataset` (``cache_dir``, ``revision`` ...).

    Returns:
        The examples in data set order; ``line`` is the 1-based row number.

    Raises:
        ImportError: ``datasets`` is not installed.
        ValueError: an unknown task, or a test split.
        DataError: a missing field, a label that is no class, an empty text, or a label of -1 (a test split:
            its labels are not public), naming ``benchmark/name[split]`` and the row; an empty split.
    """
    task = get_glue_task(task)
    hf_split = _hf_split(task, split)
    datasets = _import_datasets()
    dataset_path = path or task.benchmark
    logger.info("loading Hugging Face data set %s/%s, split %s", dataset_path, task.hub_name, hf_split)
    rows = datasets.load_dataset(dataset_path, task.hub_name, split=hf_split, **load_kwargs)
    where = f"{dataset_path}/{task.hub_name}[{hf_split}]"
    if task.scoring in ("multirc", "record", "wsc"):
        examples = read_superglue_records(task, enumerate(rows, start=1), where, split)
        if not examples:
            raise DataError(where, None, "no examples in the split")
        return examples
    examples, hypotheses = [], []
    for number, record in enumerate(rows, start=1):
        values = _values(task, record, where, number)
        hypotheses.append(values.get("hypothesis", ""))
        if "label" not in record:
            raise DataError(where, number, "missing field 'label'")
        raw = record["label"]
        if not isinstance(raw, bool) and isinstance(raw, (int, float)) and raw == -1:
            raise DataError(where, number, f"label -1: this split has no public labels ({task.benchmark} test "
                                           "labels are not released); use the 'dev' split")
        examples.append(_example(task, values, _json_label(task, raw, where, number), where, number))
    if not examples:
        raise DataError(where, None, "no examples in the split")
    return pair_axg(examples, hypotheses, where) if task.scoring == "axg" else examples
