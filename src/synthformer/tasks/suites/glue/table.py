"""The GLUE and SuperGLUE tasks as text-to-text problems, in the format of T5 (Raffel et al. 2020).

Each task is a :class:`GlueTask` in :data:`GLUE_TASKS`, keyed by its name. The names are T5's task prefixes:
GLUE ``cola sst2 mrpc qqp stsb mnli qnli rte wnli`` and SuperGLUE ``boolq cb wic copa multirc record wsc``, plus
three SuperGLUE tasks cast as RTE (T5's ``glue_utils``): ``super_glue_rte`` (SuperGLUE's copy of RTE, its JSONL
files and field names), and the diagnostics ``axb`` and ``axg`` (eval-only: no training split; they are scored from a
model trained on RTE-style data). Their input prefix (:attr:`GlueTask.prefix`) is ``rte``, as in T5.
:attr:`GlueTask.benchmark` tells the two benchmarks apart.

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
    super_glue_rte, axg  "rte hypothesis: {hypothesis} premise: {premise}"
    axb     "rte hypothesis: {sentence2} premise: {sentence1}"

(COPA's ``question`` is ``cause`` or ``effect``.) MultiRC, ReCoRD and WSC have nested records and formats of their
own (:mod:`.superglue`). Targets are the class names, in class-index order:

    cola  unacceptable acceptable          sst2  negative positive
    mrpc  not_equivalent equivalent        qqp   not_duplicate duplicate
    mnli  entailment neutral contradiction qnli, rte  entailment not_entailment
    wnli  not_entailment entailment        boolq, wic  False True
    cb    entailment contradiction neutral copa  choice1 choice2
    multirc  False True                    super_glue_rte, axb, axg  entailment not_entailment

These orders are those of the GLUE files and of the Hugging Face ``glue`` / ``super_glue`` data sets, so a label
integer there is the class index here. STS-B is a regression: its target is the score rounded to the nearest 0.2
as ``round(score * 5) / 5`` with Python's :func:`round`, which rounds halves to even like T5's ``tf.round``
(0.1 -> ``"0.0"``, 0.3 -> ``"0.4"``, 3.9 -> ``"4.0"``), formatted with one decimal (``"%.1f"``).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["GLUE_TASKS", "GlueTask", "TextToTextExample", "get_glue_task"]

#: How the label column of a GLUE TSV file is written.
_TSV_LABEL_KINDS = ("index", "name", "score")
#: How a task's predictions are scored (see :attr:`GlueTask.scoring`).
_SCORINGS = ("labels", "multirc", "record", "wsc", "axg")


@dataclass(frozen=True)
class GlueTask:
    """One GLUE or SuperGLUE task: where its data lie, how its examples read as text, and how it is scored.

    Attributes:
        name: the registry name and T5 prefix, e.g. ``"rte"``.
        benchmark: ``"glue"`` or ``"super_glue"`` (also the Hugging Face data set name).
        folder: the official folder name, e.g. ``"RTE"``, ``"SST-2"``, ``"BoolQ"``.
        labels: verbalized class names in class-index order; None for the regression task STS-B.
        metrics: metric names, as :mod:`.metrics` computes them: ``accuracy``, ``f1``
            (binary F1 of class 1), ``f1_macro``, ``matthews_corrcoef``, ``pearson``, ``spearman``.
        dev_splits: file stems of the dev split(s); the first one is what ``split="dev"`` reads.
        inputs: the input field names in T5's order (also the Hugging Face / SuperGLUE JSONL field names).
        tsv_columns: for each input field, the TSV column holding it: a header name, or a 0-based index when the
            file has no header (CoLA); then the label column last. Empty for SuperGLUE (JSONL files).
        tsv_label: how the TSV label is written: ``"index"`` (the class index, ``0``/``1``), ``"name"`` (the class
            name) or ``"score"`` (a float).
        header: whether the TSV files start with a header line.
        hub_name: the configuration name on the Hugging Face hub (``load_dataset(benchmark, hub_name)``).
        prefix: the first word of the input text (T5's benchmark name); the task name when empty.
        fields: for each input, the JSONL / Hugging Face field holding it (AX-b's ``sentence2`` for ``hypothesis``);
            the input names when empty.
        eval_only: a diagnostic with no training split (AX-b, AX-g): its one labelled file is its dev set.
        scoring: ``"labels"`` (the class or score of the target, :func:`.metrics.
            score_predictions`), or the task whose own scoring applies (``"multirc"``, ``"record"``, ``"wsc"``,
            ``"axg"``: :mod:`.superglue_metrics`), which needs more than the target text.
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
    prefix: str = ""
    fields: tuple[str, ...] = ()
    eval_only: bool = False
    scoring: str = "labels"

    def __post_init__(self) -> None:
        if self.tsv_label not in _TSV_LABEL_KINDS:
            raise ValueError(f"{self.name}: tsv_label must be one of {_TSV_LABEL_KINDS}, got {self.tsv_label!r}")
        if self.tsv_columns and len(self.tsv_columns) != len(self.inputs) + 1:
            raise ValueError(f"{self.name}: tsv_columns needs one column per input and the label column")
        if self.scoring not in _SCORINGS:
            raise ValueError(f"{self.name}: scoring must be one of {_SCORINGS}, got {self.scoring!r}")
        if self.fields and len(self.fields) != len(self.inputs):
            raise ValueError(f"{self.name}: fields needs one field name per input")
        for key, default in (("hub_name", self.name), ("prefix", self.name), ("fields", self.inputs)):
            if not getattr(self, key):
                object.__setattr__(self, key, default)

    @property
    def is_regression(self) -> bool:
        """True for STS-B, whose label is a float score rather than a class."""
        return self.labels is None and self.scoring == "labels"

    @property
    def target_strings(self) -> tuple[str, ...] | None:
        """Every target text the task can have, which a tokenizer must spell exactly: the labels, or STS-B's 26
        scores ``0.0 .. 5.0``; None where targets are text from the data (WSC's referents, ReCoRD's entities)."""
        if self.scoring in ("wsc", "record"):
            return None
        if self.labels is None:  # STS-B: every rounded score from 0.0 to 5.0 in steps of 0.2
            return tuple(f"{k / 5:.1f}" for k in range(26))
        return self.labels


    @property
    def scored_with_records(self) -> bool:
        """True when scoring needs more than the target text: MultiRC's question groups, AX-g's pairs, WSC's
        label, ReCoRD's gold answers."""
        return self.scoring != "labels"

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
        parts = [self.prefix]
        for key in self.inputs:
            if key not in fields:
                raise KeyError(f"{self.name}: missing input field {key!r} (needs {', '.join(self.inputs)})")
            parts.append(f"{key}: {fields[key]}")
        return " ".join(parts)


@dataclass(frozen=True)
class TextToTextExample:
    """One example as text in, text out.

    Attributes:
        task: the task name, e.g. ``"rte"``.
        source: the T5 input text, e.g. ``"rte sentence1: ... sentence2: ..."``.
        target: the verbalized label, e.g. ``"not_entailment"``, or ``"3.8"`` for STS-B.
        label: the gold label: the class index into the task's labels, or the float score (STS-B, not rounded).
        line: the 1-based line of the file; for Hugging Face rows, the 1-based row number.
        group: what the task scores together: MultiRC's ``"<paragraph>-<question>"`` (one example per answer
            option), ReCoRD's ``"<passage>-<query>"``, AX-g's ``"pair<k>"`` (a premise and its gender-swapped twin);
            None for the other tasks.
        answers: ReCoRD's gold answers (every one counts as correct); empty for the other tasks.
    """

    task: str
    source: str
    target: str
    label: int | float
    line: int | None
    group: str | None = None
    answers: tuple[str, ...] = ()


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
    # one example per answer option, scored per question group (F1 over all answers, exact match per question)
    GlueTask("multirc", "super_glue", "MultiRC", _BOOL, ("f1a", "exact_match"), ("val",),
             ("question", "answer", "paragraph"), scoring="multirc"),
    # the target is an entity (one example per gold answer in training), scored max over the gold answers
    GlueTask("record", "super_glue", "ReCoRD", None, ("f1", "exact_match"), ("val",),
             ("query", "entities", "passage"), scoring="record"),
    # T5's wsc_simple: the target is the referent's text; labels say whether the candidate is the referent
    GlueTask("wsc", "super_glue", "WSC", _BOOL, ("accuracy",), ("val",), ("text",), hub_name="wsc.fixed",
             prefix="wsc:", scoring="wsc"),
    GlueTask("super_glue_rte", "super_glue", "RTE", _ENTAIL2, ("accuracy",), ("val",), ("hypothesis", "premise"),
             hub_name="rte", prefix="rte"),
    GlueTask("axb", "super_glue", "AX-b", _ENTAIL2, ("matthews_corrcoef",), ("AX-b",), ("hypothesis", "premise"),
             prefix="rte", fields=("sentence2", "sentence1"), eval_only=True),
    GlueTask("axg", "super_glue", "AX-g", _ENTAIL2, ("accuracy", "gender_parity"), ("AX-g",),
             ("hypothesis", "premise"), prefix="rte", eval_only=True, scoring="axg"),
)

#: Every task by name (see the module docstring for the names and formats).
GLUE_TASKS: dict[str, GlueTask] = {task.name: task for task in _TASKS}


def get_glue_task(name: str | GlueTask) -> GlueTask:
    """The task called ``name`` (case-insensitive; a :class:`GlueTask` is returned as it is).

    Raises:
        ValueError: an unknown name; the message suggests the closest name and lists the valid ones. (The data
            layer cannot import ``ConfigError``; :func:`.metrics.glue_task_from_config`
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
