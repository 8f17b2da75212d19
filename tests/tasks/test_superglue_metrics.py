"""SuperGLUE scoring on hand-computed cases: MultiRC's grouped EM and F1a, ReCoRD's max over the gold answers, WSC's
referent match, AX-g's gender parity, AX-b's MCC, and the SuperGLUE average over the tasks present."""

from __future__ import annotations

import pytest

from synthformer.tasks.suites.glue.metrics import (
    TaskScore,
    average_tasks,
    glue_average,
    majority_prediction,
    missing_tasks,
    score_predictions,
)
from synthformer.tasks.suites.glue.reader import TextToTextExample
from synthformer.tasks.suites.glue.superglue_metrics import normalize_answer, squad_f1, wsc_names_referent

_BOOL = ("False", "True")


def _multirc(labels: list[int], groups: list[str]) -> list[TextToTextExample]:
    return [TextToTextExample("multirc", "s", _BOOL[y], y, i + 1, group=g)
            for i, (y, g) in enumerate(zip(labels, groups, strict=True))]


def test_multirc_exact_match_per_question_and_f1_over_all_answers() -> None:
    # question 0-0: options 1 0 1; question 0-1: options 0 1
    examples = _multirc([1, 0, 1, 0, 1], ["0-0", "0-0", "0-0", "0-1", "0-1"])
    score = score_predictions("multirc", ["True", "False", "False", "False", "True"], examples)
    # 0-0 misses its third option, 0-1 is all right: EM 1/2; positives predicted 2 of 3, none wrong: P 1, R 2/3
    assert score.metrics == pytest.approx({"f1a": 80.0, "exact_match": 50.0})
    assert list(score.metrics) == ["f1a", "exact_match"] and score.score == pytest.approx(65.0)
    # an invalid answer ("maybe", gold False) counts as the wrong class: TP 3, FP 1 -> F1 6/7; its question fails
    score = score_predictions("multirc", ["True", "maybe", "True", "False", "True"], examples)
    assert score.metrics == pytest.approx({"f1a": 600 / 7, "exact_match": 50.0}) and score.invalid == 1


def test_record_is_scored_max_over_the_gold_answers() -> None:
    answers = [("Paris",), ("Eiffel tower", "the Eiffel Tower"), ("Ann", "Tom")]
    examples = [TextToTextExample("record", "s", a[0], 0, i, group=str(i), answers=a) for i, a in enumerate(answers)]
    score = score_predictions("record", ["paris.", "Eiffel", "Tom"], examples)
    # "paris." normalises to "paris"; "eiffel" against "eiffel tower": P 1, R 1/2, F1 2/3; "Tom" is the 2nd answer
    assert score.metrics == pytest.approx({"f1": 100 * (1 + 2 / 3 + 1) / 3, "exact_match": 200 / 3})
    assert normalize_answer("  The  Eiffel-Tower! ") == "eiffeltower" and squad_f1("a b", "c") == 0.0


def test_wsc_referent_match_as_t5() -> None:
    assert wsc_names_referent("Cat", "the cat") == 1                  # case and determiners ignored
    assert wsc_names_referent("fuzzy bunny", "bunny") == 1            # either side a subset of the other
    assert wsc_names_referent("Bob", "Bob's hat") == 0                # an apostrophe on one side only
    assert wsc_names_referent("the", "the dog") == -1                 # nothing left: never right
    examples = [TextToTextExample("wsc", "s", ref, y, i) for i, (ref, y) in
                enumerate([("the cat", 1), ("Bob's hat", 0), ("the dog", 0), ("bunny", 1)])]
    score = score_predictions("wsc", ["Cat", "Bob", "", "fuzzy bunny"], examples)
    assert score.metrics == {"accuracy": 75.0} and score.invalid == 1  # the empty answer is wrong for label 0 too


def test_axg_accuracy_and_gender_parity() -> None:
    gold = [0, 1, 1, 1]  # entailment, not_entailment, ...
    examples = [TextToTextExample("axg", "s", ("entailment", "not_entailment")[y], y, i, group=f"pair{i // 2}")
                for i, y in enumerate(gold)]
    score = score_predictions("axg", ["entailment", "entailment", "not_entailment", "entailment"], examples)
    # right: the 1st and 3rd of 4 -> 50; pair0's two answers agree (one of them wrong), pair1's differ -> 50
    assert score.metrics == {"accuracy": 50.0, "gender_parity": 50.0}


def test_axb_matthews_correlation() -> None:
    examples = [TextToTextExample("axb", "s", "", y, i) for i, y in enumerate([0, 0, 1, 1])]
    perfect = score_predictions("axb", ["entailment", "entailment", "not_entailment", "not_entailment"], examples)
    inverse = score_predictions("axb", ["not_entailment", "not_entailment", "entailment", "entailment"], examples)
    assert perfect.metrics == {"matthews_corrcoef": 100.0} and inverse.metrics == {"matthews_corrcoef": -100.0}


def _score(task: str, value: float) -> TaskScore:
    return TaskScore(task, {"m": value}, value, 0, 1)


def test_super_glue_average_over_the_tasks_present() -> None:
    scores = {"cb": _score("cb", 70.0), "multirc": _score("multirc", 65.0), "wsc": _score("wsc", 75.0),
              "axb": _score("axb", 10.0), "axg": _score("axg", 0.0), "rte": _score("rte", 0.0)}
    # the diagnostics and GLUE's RTE stay out: (70 + 65 + 75) / 3
    assert glue_average(scores, "super_glue") == pytest.approx(70.0)
    assert average_tasks("super_glue") == ["boolq", "cb", "wic", "copa", "multirc", "record", "wsc", "super_glue_rte"]
    assert missing_tasks(scores, "super_glue") == ["boolq", "wic", "copa", "record", "super_glue_rte"]


def test_majority_references_of_the_new_tasks() -> None:
    train = [TextToTextExample("multirc", "s", t, y, 1, group="0-0") for t, y in (("False", 0), ("False", 0),
                                                                                 ("True", 1))]
    assert majority_prediction("multirc", train) == "False"
    assert wsc_names_referent(majority_prediction("wsc", []), "the cat") == 0  # names no candidate
    assert majority_prediction("record", []) == ""
