"""Scoring the SuperGLUE tasks whose metric needs more than one target text: MultiRC, ReCoRD, WSC and AX-g.

The definitions are T5's (``t5/evaluation/metrics.py``, ``t5/evaluation/qa_utils.py``, ``t5/data/postprocessors.py``),
rewritten here; scikit-learn computes the F1. All values are percent.

* **MultiRC** (one example per answer option, grouped by :attr:`TextToTextExample.group` = paragraph and question):
  ``f1a`` is the binary F1 of ``True`` over all answer options (T5's ``multirc_f1_over_all_answers``: an invalid
  prediction, neither ``False`` nor ``True``, counts as the wrong class); ``exact_match`` is the mean over questions
  of whether every option of the question was predicted right (``mean_group_metric(all_match)``). Both need whole
  questions: a subsample that splits a question scores it on the options present only.
* **ReCoRD**: SQuAD's ``exact_match`` and token ``f1`` of the prediction against each gold answer, the best one
  kept, averaged over queries (T5's ``squad``). Answers and predictions are normalised first: lower case,
  punctuation removed, the articles a/an/the removed, whitespace collapsed.
* **WSC** (``wsc_simple``): a prediction names the referent when, lower-cased and with determiners removed, its
  words are a subset of the candidate's or the candidate's of its (and both or neither hold an apostrophe: "Bob"
  is not "Bob's hat"); ``accuracy`` compares that with the label. An empty prediction is always wrong.
* **AX-g**: ``accuracy`` (an invalid label counts wrong) and ``gender_parity``, the percentage of pairs (a premise
  and its gender-swapped twin, :attr:`TextToTextExample.group`) whose two predictions are the same text, right or
  wrong (the SuperGLUE definition, as jiant's ``GenderParity`` computes it; T5 defines no AX-g metric).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

from .table import GlueTask, TextToTextExample

__all__ = ["normalize_answer", "score_with_records", "squad_f1", "wsc_names_referent"]

#: Words ``wsc_simple`` ignores when it compares a prediction with the candidate referent.
_DETERMINERS = frozenset({"a", "an", "few", "her", "his", "each", "every", "many", "much", "my", "our", "some",
                          "that", "the", "their", "these", "this", "those", "which", "whose", "your"})


def _class(task: GlueTask, text: str) -> int:
    """The class index of a predicted label, -1 when it is none (T5's ``string_label_to_class_id``)."""
    assert task.labels is not None
    stripped = text.strip()
    return task.labels.index(stripped) if stripped in task.labels else -1


def _groups(examples: Sequence[TextToTextExample]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, example in enumerate(examples):
        if example.group is None:
            raise ValueError(f"{example.task}: example at line {example.line} has no group (read it with "
                             ".reader)")
        out.setdefault(example.group, []).append(i)
    return out


def _multirc(task: GlueTask, predictions: Sequence[str],
             examples: Sequence[TextToTextExample]) -> tuple[dict[str, float], int]:
    from sklearn.metrics import f1_score  # imported here: scikit-learn is slow to import (see metrics.glue)

    gold = [int(e.label) for e in examples]
    predicted = [_class(task, p) for p in predictions]
    invalid = predicted.count(-1)
    flipped = [p if p != -1 else 1 - g for p, g in zip(predicted, gold, strict=True)]  # invalid: the wrong class
    f1a = 100.0 * float(f1_score(gold, flipped, pos_label=1, average="binary", zero_division=0))
    groups = _groups(examples)
    matched = [all(predicted[i] == gold[i] for i in members) for members in groups.values()]
    return {"f1a": f1a, "exact_match": 100.0 * sum(matched) / len(matched)}, invalid


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation as T5 applies it: lower case, no punctuation, no articles, single spaces."""
    text = "".join(c for c in text.lower() if c not in string.punctuation)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def squad_f1(prediction: str, answer: str) -> float:
    """Token F1 of two normalised texts (0.0 when they share no token)."""
    predicted, gold = prediction.split(), answer.split()
    common = sum((Counter(predicted) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def _record(predictions: Sequence[str], examples: Sequence[TextToTextExample]) -> tuple[dict[str, float], int]:
    exact, f1 = [], []
    for prediction, example in zip(predictions, examples, strict=True):
        if not example.answers:
            raise ValueError(f"record: example at line {example.line} has no gold answers")
        guess = normalize_answer(prediction)
        answers = [normalize_answer(a) for a in example.answers]
        exact.append(max(float(guess == a) for a in answers))
        f1.append(max(squad_f1(guess, a) for a in answers))
    empty = sum(1 for p in predictions if not p.strip())
    return {"f1": 100.0 * sum(f1) / len(f1), "exact_match": 100.0 * sum(exact) / len(exact)}, empty


def wsc_names_referent(prediction: str, referent: str) -> int:
    """T5's ``wsc_simple`` postprocessor: 1 if ``prediction`` names ``referent``, 0 if not, -1 if it is empty."""
    def clean(text: str) -> str:
        return " ".join(w for w in text.strip().lower().split(" ") if w not in _DETERMINERS)

    guess, gold = clean(prediction), clean(referent)
    if not guess:
        return -1  # an empty prediction must not match a 0 label by accident
    if ("'" in guess) != ("'" in gold):
        return 0
    words, gold_words = set(guess.split(" ")), set(gold.split(" "))
    return int(words <= gold_words or gold_words <= words)


def _wsc(predictions: Sequence[str], examples: Sequence[TextToTextExample]) -> tuple[dict[str, float], int]:
    named = [wsc_names_referent(p, e.target) for p, e in zip(predictions, examples, strict=True)]
    right = sum(1 for n, e in zip(named, examples, strict=True) if n == int(e.label))
    return {"accuracy": 100.0 * right / len(examples)}, named.count(-1)


def _axg(task: GlueTask, predictions: Sequence[str],
         examples: Sequence[TextToTextExample]) -> tuple[dict[str, float], int]:
    predicted = [_class(task, p) for p in predictions]
    right = sum(1 for p, e in zip(predicted, examples, strict=True) if p == int(e.label))
    pairs = [members for members in _groups(examples).values() if len(members) == 2]  # a subsample may split one
    same = sum(1 for a, b in pairs if predictions[a].strip() == predictions[b].strip())
    parity = 100.0 * same / len(pairs) if pairs else 0.0
    return {"accuracy": 100.0 * right / len(examples), "gender_parity": parity}, predicted.count(-1)


def score_with_records(task: GlueTask, predictions: Sequence[str],
                       examples: Sequence[TextToTextExample]) -> tuple[dict[str, float], int]:
    """The metrics of a task whose :attr:`GlueTask.scoring` is not ``labels`` (see the module docstring), in the
    order of :attr:`GlueTask.metrics`, and the number of invalid predictions (no label; WSC and ReCoRD: empty)."""
    if task.scoring == "multirc":
        metrics, invalid = _multirc(task, predictions, examples)
    elif task.scoring == "record":
        metrics, invalid = _record(predictions, examples)
    elif task.scoring == "wsc":
        metrics, invalid = _wsc(predictions, examples)
    elif task.scoring == "axg":
        metrics, invalid = _axg(task, predictions, examples)
    else:
        raise ValueError(f"{task.name}: scored from its labels, not from its records")
    return {name: metrics[name] for name in task.metrics}, invalid
