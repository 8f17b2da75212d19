"""Scoring text-to-text predictions of GLUE and SuperGLUE tasks (T5's metrics), with scikit-learn and SciPy.

:func:`score_predictions` turns the predicted strings of one task into that task's metrics, in percent (x100,
correlations too) as the tables of the T5 and Synthesizer papers report them:

* ``accuracy``: :func:`sklearn.metrics.accuracy_score`;
* ``f1``: :func:`sklearn.metrics.f1_score` of the positive class, index 1 (MRPC ``equivalent``, QQP ``duplicate``);
* ``f1_macro``: :func:`sklearn.metrics.f1_score` with ``average="macro"`` over all classes (CB);
* ``matthews_corrcoef``: :func:`sklearn.metrics.matthews_corrcoef` (CoLA);
* ``pearson`` / ``spearman``: :func:`scipy.stats.pearsonr` / :func:`scipy.stats.spearmanr` (STS-B).

Predictions are stripped of surrounding whitespace, then compared with the class names exactly (case matters).
A prediction that is no class name is *invalid* and counts as wrong for every metric: it is replaced by the
class ``(gold + 1) % n_classes``, which differs from the gold one, before the metric is computed (T5's
``f1_score_with_invalid`` does the same for binary F1). For STS-B a prediction is parsed with :func:`float`; one
that does not parse, or is not finite, is invalid and becomes ``-1.0`` (T5's ``string_to_float`` default).

A correlation is undefined when either side is constant (SciPy returns NaN): that metric is then 0.0 and a
warning is logged. MultiRC, ReCoRD, WSC and AX-g are scored by :mod:`.superglue_metrics` (grouped
exact match and F1 over all answers, SQuAD EM/F1 max over the gold answers, T5's referent match, gender parity);
AX-b by its Matthews correlation as above. Each task's single number (:attr:`TaskScore.score`) is the mean of its
metrics: CoLA its MCC, MRPC and QQP mean(F1, accuracy), STS-B mean(Pearson, Spearman), CB mean(accuracy, macro
F1), MultiRC mean(F1a, EM), ReCoRD mean(F1, EM), the others accuracy.

:func:`glue_average` follows the GLUE and SuperGLUE leaderboards (and T5): the mean over tasks of the task scores,
where the scores of one task given under several keys (MNLI matched and mismatched) are first averaged into one, so
MNLI counts once. WNLI and the diagnostics AX-b and AX-g are not part of it; :func:`missing_tasks` names the
benchmark's tasks that had no score.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from synthformer.common import ConfigError

from .superglue_metrics import score_with_records
from .table import GLUE_TASKS, GlueTask, TextToTextExample, get_glue_task

__all__ = ["INVALID_SCORE", "TaskScore", "average_tasks", "glue_average", "glue_task_from_config", "missing_tasks",
           "score_predictions"]

logger = logging.getLogger(__name__)

#: The value an STS-B prediction that is no number stands for (T5's ``string_to_float`` default).
INVALID_SCORE = -1.0


@dataclass
class TaskScore:
    """The metrics of one task's predictions.

    Attributes:
        task: the task name, e.g. ``"mrpc"``.
        metrics: metric name -> value in percent (x100), in the order of :attr:`GlueTask.metrics`.
        score: the task's single number for the benchmark average: the mean of :attr:`metrics`.
        invalid: predictions that are no class name (STS-B: no number); they were counted as wrong.
        count: the number of predictions scored.
    """

    task: str
    metrics: dict[str, float]
    score: float
    invalid: int
    count: int


def glue_task_from_config(name: str | GlueTask, key: str = "task.options.tasks") -> GlueTask:
    """:func:`.reader.get_glue_task` for config values: an unknown name raises
    :class:`~synthformer.common.config.ConfigError` whose message starts with ``key`` and suggests the closest name.
    """
    try:
        return get_glue_task(name)
    except ValueError as exc:
        raise ConfigError(f"{key}: {exc}") from None


def _class_predictions(task: GlueTask, predictions: Sequence[str], gold: list[int]) -> tuple[list[int], int]:
    assert task.labels is not None
    index = {name: i for i, name in enumerate(task.labels)}
    n = len(task.labels)
    predicted, invalid = [], 0
    for text, truth in zip(predictions, gold, strict=True):
        found = index.get(text.strip())
        if found is None:
            invalid += 1
            found = (truth + 1) % n
        predicted.append(found)
    return predicted, invalid


def _score_predictions(predictions: Sequence[str]) -> tuple[list[float], int]:
    values, invalid = [], 0
    for text in predictions:
        try:
            value = float(text.strip())
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            invalid += 1
            value = INVALID_SCORE
        values.append(value)
    return values, invalid


def _correlation(name: str, fn: Callable[..., object], gold: list[float], predicted: list[float]) -> float:
    """``fn(gold, predicted)``'s statistic; 0.0 (with a warning) where it is undefined (constant input)."""
    if len(gold) < 2:
        logger.warning("%s is undefined for %d example(s); reporting 0.0", name, len(gold))
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SciPy's ConstantInputWarning; logged below instead
        value = float(fn(gold, predicted).statistic)  # type: ignore[attr-defined]
    if math.isnan(value):
        logger.warning("%s is undefined (the predictions or the gold scores are constant); reporting 0.0", name)
        return 0.0
    return value


def score_predictions(task: str | GlueTask, predictions: Sequence[str],
                      examples: Sequence[TextToTextExample]) -> TaskScore:
    """Score the predicted strings of one task against the gold labels of ``examples`` (see the module docstring).

    Args:
        task: the task name or :class:`GlueTask`.
        predictions: one predicted string per example, in the same order.
        examples: the examples predicted for, as :mod:`.reader` reads them.

    Raises:
        ValueError: an unknown task, no examples, a different number of predictions and examples, or an
            example of another task.
    """
    task = get_glue_task(task)
    if not examples:
        raise ValueError(f"{task.name}: no examples to score")
    if len(predictions) != len(examples):
        raise ValueError(f"{task.name}: {len(predictions)} predictions for {len(examples)} examples")
    others = {e.task for e in examples} - {task.name}
    if others:
        raise ValueError(f"{task.name}: examples of other tasks among those scored: {', '.join(sorted(others))}")

    # Imported here, not at the top: SciPy and scikit-learn take about 2 s to import, which every command (a
    # one-line error included) would otherwise pay at start, although only GLUE scoring needs them.
    from scipy.stats import pearsonr, spearmanr
    from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

    metrics: dict[str, float] = {}
    if task.scored_with_records:
        metrics, invalid = score_with_records(task, predictions, examples)
    elif task.labels is None:
        gold_scores = [float(e.label) for e in examples]
        values, invalid = _score_predictions(predictions)
        functions = {"pearson": pearsonr, "spearman": spearmanr}
        for name in task.metrics:
            metrics[name] = 100.0 * _correlation(f"{task.name} {name}", functions[name], gold_scores, values)
    else:
        gold = [int(e.label) for e in examples]
        predicted, invalid = _class_predictions(task, predictions, gold)
        classes = list(range(len(task.labels)))
        found = {
            "accuracy": lambda: accuracy_score(gold, predicted),
            "f1": lambda: f1_score(gold, predicted, pos_label=1, average="binary", zero_division=0),
            "f1_macro": lambda: f1_score(gold, predicted, labels=classes, average="macro", zero_division=0),
            "matthews_corrcoef": lambda: matthews_corrcoef(gold, predicted),
        }
        for name in task.metrics:
            metrics[name] = 100.0 * float(found[name]())
    if invalid:
        logger.warning("%s: %d of %d predictions are no valid answer; counted as wrong", task.name, invalid,
                       len(examples))
    score = sum(metrics.values()) / len(metrics)
    return TaskScore(task.name, metrics, score, invalid, len(examples))


def glue_average(scores: Mapping[str, TaskScore], benchmark: str = "glue") -> float:
    """The benchmark average: the mean over tasks of :attr:`TaskScore.score`, MNLI matched/mismatched as one task.

    Scores are grouped by :attr:`TaskScore.task`; several scores of one task (e.g. keys ``"mnli_matched"`` and
    ``"mnli_mismatched"``, both with task ``"mnli"``) are averaged first. Scores of tasks of another benchmark
    (SuperGLUE ones for ``benchmark="glue"``) and WNLI (as in T5's average) are left out, with a log message.

    Args:
        scores: any keys -> the task scores.
        benchmark: ``"glue"`` or ``"super_glue"``.

    Raises:
        ValueError: no score of a task of ``benchmark``, or an unknown task name.
    """
    by_task: dict[str, list[float]] = {}
    for key, score in scores.items():
        task = get_glue_task(score.task)
        if task.name == "wnli":  # T5 leaves WNLI out of its GLUE average (its dev set is adversarial)
            logger.info("%s average: leaving out %s (WNLI, as T5 does)", benchmark, key)
            continue
        if task.eval_only:  # the diagnostics are reported beside the SuperGLUE score, not in it
            logger.info("%s average: leaving out the diagnostic %s", benchmark, key)
            continue
        if task.benchmark != benchmark:
            logger.info("%s average: leaving out %s (task %s of %s)", benchmark, key, task.name, task.benchmark)
            continue
        by_task.setdefault(task.name, []).append(score.score)
    if not by_task:
        raise ValueError(f"no scores of {benchmark} tasks to average (given: {', '.join(scores) or 'none'})")
    per_task = [sum(values) / len(values) for values in by_task.values()]
    return sum(per_task) / len(per_task)


def average_tasks(benchmark: str) -> list[str]:
    """The tasks of ``benchmark``'s average: GLUE without WNLI; SuperGLUE's eight (BoolQ, CB, COPA, MultiRC,
    ReCoRD, RTE, WiC, WSC) without the diagnostics."""
    return [t.name for t in GLUE_TASKS.values()
            if t.benchmark == benchmark and t.name != "wnli" and not t.eval_only]


def missing_tasks(scores: Mapping[str, TaskScore], benchmark: str) -> list[str]:
    """The tasks of ``benchmark``'s average (:func:`average_tasks`) that have no score in ``scores``."""
    present = {score.task for score in scores.values()}
    return [name for name in average_tasks(benchmark) if name not in present]


def majority_prediction(task: str | GlueTask, train: Sequence[TextToTextExample]) -> str:
    """The model-free reference answer of a task: its most frequent training target (ties: the first label in
    class order), or for a regression task (STS-B) the mean training score, verbalized. WSC's is an answer that
    names no candidate (every example judged "not the referent"); ReCoRD has none (the empty answer, scored 0)."""
    task = get_glue_task(task)
    if task.scoring == "wsc":
        return "<none>"
    if task.scoring == "record":
        return ""
    if not train:
        raise ValueError(f"{task.name}: no training examples for a majority prediction")
    if task.labels is None:
        return task.verbalize(sum(float(e.label) for e in train) / len(train))
    counts = Counter(int(e.label) for e in train)
    return task.labels[max(range(len(task.labels)), key=lambda i: (counts[i], -i))]
