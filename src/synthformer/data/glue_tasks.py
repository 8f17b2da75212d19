"""The GLUE and SuperGLUE tasks as text-to-text problems, in the format of T5 (Raffel et al. 2020).

Each task is a :class:`GlueTask` in :data:`GLUE_TASKS`, keyed by its name. The names are T5's task prefixes:
GLUE ``cola sst2 mrpc qqp stsb mnli qnli rte wnli`` and SuperGLUE ``boolq cb wic copa``. They are all distinct, so
the SuperGLUE ones carry no prefix; :attr:`GlueTask.benchmark` tells the two benchmarks apart. SuperGLUE's RTE is
GLUE's RTE data and is not listed twice.

Input text (``source``) is the task name followed by ``key: value`` for each input field, in this order, joined
with single spaces; the values are the data set's text as it is (not stripped)::

    cola    "cola sentence: {sentence}"
    sst2    "sst2 sentence: {sentence}"
    mrpc    "mrpc sentence1: {sentence1} sentence2: {sentence2}"
    qqp     "qqp question1: {question1} question2: {question2}"
    stsb    "stsb sentence1: {sentence1} sentence2: {sentence2}"
    mnli    "mnli hypothesis: {hypothesis} premise: {premise}"
    qnli    "qnli question: {question} sentence: {sentence}"
    rte     "rte sentence1: {sentence1} sentence2: {sentence2}"
    wnli    "wnli sentence1: {sentence1} sentence2: {sentence2}"
    boolq   "boolq passage: {passage} question: {question}"
    cb      "cb hypothesis: {hypothesis} premise: {premise}"
    wic     "wic sentence1: {sentence1} sentence2: {sentence2} word: {word}"
    copa    "copa choice1: {choice1} choice2: {choice2} premise: {premise} question: {question}"

(COPA's ``question`` is ``cause`` or ``effect``.) Targets are the class names, in class-index order:

    cola  unacceptable acceptable          sst2  negative positive
    mrpc  not_equivalent equivalent        qqp   not_duplicate duplicate
    mnli  entailment neutral contradiction qnli, rte  entailment not_entailment
    wnli  not_entailment entailment        boolq, wic  False True
    cb    entailment contradiction neutral copa  choice1 choice2

These orders are those of the GLUE files and of the Hugging Face ``glue`` / ``super_glue`` data sets, so a label
integer there is the class index here. STS-B is a regression: its target is the score rounded to the nearest 0.2
as ``round(score * 5) / 5`` with Python's :func:`round`, which rounds halves to even like T5's ``tf.round``
(0.1 -> ``"0.0"``, 0.3 -> ``"0.4"``, 3.9 -> ``"4.0"``), formatted with one decimal (``"%.1f"``).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["GLUE_TASKS", "GlueTask", "get_glue_task"]

#: How the label column of a GLUE TSV file is written.
_TSV_LABEL_KINDS = ("index", "name", "score")


@dataclass(frozen=True)
class GlueTask:
    """One GLUE or SuperGLUE task: where its data lie, how its examples read as text, and how it is scored.

    Attributes:
        name: the registry name and T5 prefix, e.g. ``"rte"``.
        benchmark: ``"glue"`` or ``"super_glue"`` (also the Hugging Face data set name).
        folder: the official folder name, e.g. ``"RTE"``, ``"SST-2"``, ``"BoolQ"``.
        labels: verbalized class names in class-index order; None for the regression task STS-B.
        metrics: metric names, as :mod:`synthformer.tasks.metrics.glue` computes them: ``accuracy``, ``f1``
            (binary F1 of class 1), ``f1_macro``, ``matthews_corrcoef``, ``pearson``, ``spearman``.
        dev_splits: file stems of the dev split(s); the first one is what ``split="dev"`` reads.
        inputs: the input field names in T5's order (also the Hugging Face / SuperGLUE JSONL field names).
        tsv_columns: for each input field, the TSV column holding it: a header name, or a 0-based index when the
            file has no header (CoLA); then the label column last. Empty for SuperGLUE (JSONL files).
        tsv_label: how the TSV label is written: ``"index"`` (the class index, ``0``/``1``), ``"name"`` (the class
            name) or ``"score"`` (a float).
        header: whether the TSV files start with a header line.
        hub_name: the configuration name on the Hugging Face hub (``load_dataset(benchmark, hub_name)``).
    """

    name: str
    benchmark: str
    folder: str
    labels: tuple[str, ...] | None
    metrics: tuple[str, ...]
    dev_splits: tuple[str, ...]
    inputs: tuple[str, ...]
    tsv_columns: tuple[str | int, ...] = ()
    tsv_label: str = "name"
    header: bool = True
    hub_name: str = ""

    def __post_init__(self) -> None:
        if self.tsv_label not in _TSV_LABEL_KINDS:
            raise ValueError(f"{self.name}: tsv_label must be one of {_TSV_LABEL_KINDS}, got {self.tsv_label!r}")
        if self.tsv_columns and len(self.tsv_columns) != len(self.inputs) + 1:
            raise ValueError(f"{self.name}: tsv_columns needs one column per input and the label column")
        if not self.hub_name:
            object.__setattr__(self, "hub_name", self.name)

    @property
    def is_regression(self) -> bool:
        """True for STS-B, whose label is a float score rather than a class."""
        return self.labels is None

    def verbalize(self, label: int | float) -> str:
        """The target text of ``label``: the class name of a class index, or (STS-B) the rounded score.

        Raises:
            ValueError: a class index outside ``range(len(labels))`` (bools are refused as well).
        """
        if self.labels is None:
            return f"{round(float(label) * 5) / 5:.1f}"
        if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < len(self.labels):
            raise ValueError(f"{self.name}: label must be a class index in [0, {len(self.labels)}), got {label!r}")
        return self.labels[label]

    def source_text(self, fields: Mapping[str, str]) -> str:
        """The T5 input text: ``"<name> <key>: <value> ..."`` over :attr:`inputs` (see the module docstring).

        Raises:
            KeyError: a field of :attr:`inputs` is missing from ``fields``.
        """
        parts = [self.name]
        for key in self.inputs:
            if key not in fields:
                raise KeyError(f"{self.name}: missing input field {key!r} (needs {', '.join(self.inputs)})")
            parts.append(f"{key}: {fields[key]}")
        return " ".join(parts)


_ENTAIL2 = ("entailment", "not_entailment")
_BOOL = ("False", "True")

_TASKS = (
    # GLUE, official TSV layout
    GlueTask("cola", "glue", "CoLA", ("unacceptable", "acceptable"), ("matthews_corrcoef",), ("dev",),
             ("sentence",), (3, 1), "index", header=False),
    GlueTask("sst2", "glue", "SST-2", ("negative", "positive"), ("accuracy",), ("dev",),
             ("sentence",), ("sentence", "label"), "index"),
    GlueTask("mrpc", "glue", "MRPC", ("not_equivalent", "equivalent"), ("f1", "accuracy"), ("dev",),
             ("sentence1", "sentence2"), ("#1 String", "#2 String", "Quality"), "index"),
    GlueTask("qqp", "glue", "QQP", ("not_duplicate", "duplicate"), ("f1", "accuracy"), ("dev",),
             ("question1", "question2"), ("question1", "question2", "is_duplicate"), "index"),
    GlueTask("stsb", "glue", "STS-B", None, ("pearson", "spearman"), ("dev",),
             ("sentence1", "sentence2"), ("sentence1", "sentence2", "score"), "score"),
    GlueTask("mnli", "glue", "MNLI", ("entailment", "neutral", "contradiction"), ("accuracy",),
             ("dev_matched", "dev_mismatched"), ("hypothesis", "premise"), ("sentence2", "sentence1", "gold_label"),
             "name"),
    GlueTask("qnli", "glue", "QNLI", _ENTAIL2, ("accuracy",), ("dev",),
             ("question", "sentence"), ("question", "sentence", "label"), "name"),
    GlueTask("rte", "glue", "RTE", _ENTAIL2, ("accuracy",), ("dev",),
             ("sentence1", "sentence2"), ("sentence1", "sentence2", "label"), "name"),
    GlueTask("wnli", "glue", "WNLI", ("not_entailment", "entailment"), ("accuracy",), ("dev",),
             ("sentence1", "sentence2"), ("sentence1", "sentence2", "label"), "index"),
    # SuperGLUE, official JSONL layout (train.jsonl, val.jsonl)
    GlueTask("boolq", "super_glue", "BoolQ", _BOOL, ("accuracy",), ("val",), ("passage", "question")),
    GlueTask("cb", "super_glue", "CB", ("entailment", "contradiction", "neutral"), ("accuracy", "f1_macro"),
             ("val",), ("hypothesis", "premise")),
    GlueTask("wic", "super_glue", "WiC", _BOOL, ("accuracy",), ("val",), ("sentence1", "sentence2", "word")),
    GlueTask("copa", "super_glue", "COPA", ("choice1", "choice2"), ("accuracy",), ("val",),
             ("choice1", "choice2", "premise", "question")),
)

#: Every task by name (see the module docstring for the names and formats).
GLUE_TASKS: dict[str, GlueTask] = {task.name: task for task in _TASKS}


def get_glue_task(name: str | GlueTask) -> GlueTask:
    """The task called ``name`` (case-insensitive; a :class:`GlueTask` is returned as it is).

    Raises:
        ValueError: an unknown name; the message suggests the closest name and lists the valid ones. (The data
            layer cannot import ``ConfigError``; :func:`synthformer.tasks.metrics.glue.glue_task_from_config`
            turns this into a ``ConfigError`` naming the config key.)
    """
    if isinstance(name, GlueTask):
        return name
    key = str(name).strip().lower()
    if key in GLUE_TASKS:
        return GLUE_TASKS[key]
    valid = list(GLUE_TASKS)
    close = difflib.get_close_matches(key, valid, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    raise ValueError(f"unknown GLUE task {name!r}{hint}; valid: {', '.join(valid)}")
