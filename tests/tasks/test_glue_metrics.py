"""GLUE / SuperGLUE metrics of predicted strings, checked against the documented examples of scikit-learn and SciPy."""

from __future__ import annotations

import logging

import pytest

from synthformer.common.config import ConfigError
from synthformer.tasks.suites.glue.metrics import (
    TaskScore,
    glue_average,
    glue_task_from_config,
    majority_prediction,
    score_predictions,
)
from synthformer.tasks.suites.glue.reader import TextToTextExample, get_glue_task


def _examples(task: str, labels: list[int] | list[float]) -> list[TextToTextExample]:
    spec = get_glue_task(task)
    return [TextToTextExample(task, f"{task} sentence: {i}", spec.verbalize(label), label, i + 1)
            for i, label in enumerate(labels)]


def _names(task: str, labels: list[int]) -> list[str]:
    return [get_glue_task(task).verbalize(label) for label in labels]


def test_cola_mcc_sklearn_doc_example() -> None:
    # sklearn: matthews_corrcoef([+1, +1, +1, -1], [+1, -1, +1, +1]) == -0.33...; here -1 is class 0
    result = score_predictions("cola", _names("cola", [1, 0, 1, 1]), _examples("cola", [1, 1, 1, 0]))
    assert result.metrics == {"matthews_corrcoef": pytest.approx(-100 / 3)}
    assert result.score == pytest.approx(-100 / 3)
    assert (result.task, result.invalid, result.count) == ("cola", 0, 4)


def test_cb_accuracy_and_macro_f1_sklearn_doc_example() -> None:
    # sklearn: f1_score([0, 1, 2, 0, 1, 2], [0, 2, 1, 0, 0, 1], average='macro') == 0.26666...
    gold, predicted = [0, 1, 2, 0, 1, 2], [0, 2, 1, 0, 0, 1]
    result = score_predictions("cb", _names("cb", predicted), _examples("cb", gold))
    assert list(result.metrics) == ["accuracy", "f1_macro"]
    assert result.metrics["f1_macro"] == pytest.approx(26.666666666666668)
    assert result.metrics["accuracy"] == pytest.approx(100 / 3)
    assert result.score == pytest.approx((26.666666666666668 + 100 / 3) / 2)


def test_rte_accuracy_half() -> None:
    # sklearn: accuracy_score([0, 2, 1, 3], [0, 1, 2, 3]) == 0.5: two of four right
    result = score_predictions("rte", ["entailment", "entailment", "not_entailment", "not_entailment"],
                               _examples("rte", [0, 1, 0, 1]))
    assert result.metrics == {"accuracy": 50.0} and result.score == 50.0


def test_mrpc_f1_of_positive_class_and_accuracy() -> None:
    gold, predicted = [1, 1, 0, 0, 1], [1, 0, 0, 1, 1]  # TP 2, FP 1, FN 1: F1 2/3; accuracy 3/5
    result = score_predictions("mrpc", _names("mrpc", predicted), _examples("mrpc", gold))
    assert result.metrics == {"f1": pytest.approx(200 / 3), "accuracy": pytest.approx(60.0)}
    assert result.score == pytest.approx((200 / 3 + 60) / 2)


def test_stsb_pearson_scipy_doc_example() -> None:
    # scipy: pearsonr([1, 2, 3, 4, 5], [10, 9, 2.5, 6, 4]).statistic == -0.7426106572325056
    result = score_predictions("stsb", ["10", "9", "2.5", "6", "4"], _examples("stsb", [1.0, 2.0, 3.0, 4.0, 5.0]))
    assert result.metrics["pearson"] == pytest.approx(-74.26106572325056)
    assert result.metrics["spearman"] == pytest.approx(-70.0)  # ranks 5 4 1 3 2 against 1 2 3 4 5
    # scipy: spearmanr([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]).statistic == 0.8207826816681233
    result = score_predictions("stsb", [" 5", "6", "7.0", "8", "7\n"], _examples("stsb", [1.0, 2.0, 3.0, 4.0, 5.0]))
    assert result.metrics["spearman"] == pytest.approx(82.07826816681233)
    assert result.invalid == 0


def test_predictions_are_stripped_and_case_sensitive() -> None:
    result = score_predictions("sst2", [" positive\n", "Negative", "negative "], _examples("sst2", [1, 0, 0]))
    assert (result.invalid, result.metrics["accuracy"]) == (1, pytest.approx(200 / 3))


def test_invalid_prediction_counts_wrong_like_the_flipped_class() -> None:
    gold = [1, 1, 0, 0, 1, 0]
    with_invalid = ["equivalent", "maybe", "not_equivalent", "", "equivalent", "yes"]
    flipped = ["equivalent", "not_equivalent", "not_equivalent", "equivalent", "equivalent", "equivalent"]
    invalid = score_predictions("mrpc", with_invalid, _examples("mrpc", gold))
    reference = score_predictions("mrpc", flipped, _examples("mrpc", gold))
    assert invalid.invalid == 3 and reference.invalid == 0
    assert invalid.metrics == pytest.approx(reference.metrics)
    assert invalid.metrics["accuracy"] == pytest.approx(50.0)  # the three invalid ones are all wrong
    # three classes: an invalid prediction still differs from the gold class
    mnli = score_predictions("mnli", ["none", "none", "none"], _examples("mnli", [0, 1, 2]))
    assert (mnli.invalid, mnli.metrics["accuracy"]) == (3, 0.0)


def test_stsb_invalid_prediction_is_minus_one() -> None:
    gold = [0.4, 1.6, 2.0, 3.8, 4.6]
    invalid = score_predictions("stsb", ["0.5", "n/a", "2.2", "nan", "4.4"], _examples("stsb", gold))
    reference = score_predictions("stsb", ["0.5", "-1.0", "2.2", "-1", "4.4"], _examples("stsb", gold))
    assert invalid.invalid == 2 and reference.invalid == 0
    assert invalid.metrics == pytest.approx(reference.metrics)


def test_constant_predictions_give_zero_correlation(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="synthformer.tasks.suites.glue.metrics"):
        result = score_predictions("stsb", ["3.0"] * 4, _examples("stsb", [1.0, 2.0, 3.0, 4.0]))
    assert result.metrics == {"pearson": 0.0, "spearman": 0.0} and result.score == 0.0
    assert "stsb pearson is undefined" in caplog.text and "stsb spearman is undefined" in caplog.text


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="no examples"):
        score_predictions("rte", [], [])
    with pytest.raises(ValueError, match="1 predictions for 2 examples"):
        score_predictions("rte", ["entailment"], _examples("rte", [0, 1]))
    with pytest.raises(ValueError, match="examples of other tasks among those scored: qnli"):
        score_predictions("rte", ["entailment"], _examples("qnli", [0]))


def test_glue_task_from_config_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"^task\.options\.tasks: unknown GLUE task 'rtee' \(did you mean 'rte'\?\)"):
        glue_task_from_config("rtee")
    with pytest.raises(ConfigError, match=r"^eval\.task: unknown GLUE task 'sts-b' \(did you mean 'stsb'\?\)"):
        glue_task_from_config("sts-b", key="eval.task")
    assert glue_task_from_config("mnli").name == "mnli"


def _score(task: str, value: float) -> TaskScore:
    return TaskScore(task, {"m": value}, value, 0, 10)


def test_glue_average_counts_mnli_once() -> None:
    scores = {"cola": _score("cola", 50.0), "mrpc": _score("mrpc", 80.0), "mnli_matched": _score("mnli", 84.0),
              "mnli_mismatched": _score("mnli", 86.0), "boolq": _score("boolq", 70.0), "wnli": _score("wnli", 10.0)}
    # boolq is SuperGLUE and WNLI is left out as in T5's average
    assert glue_average(scores) == pytest.approx((50.0 + 80.0 + 85.0) / 3)
    assert glue_average(scores, benchmark="super_glue") == pytest.approx(70.0)
    with pytest.raises(ValueError, match="no scores of glue tasks"):
        glue_average({"boolq": _score("boolq", 70.0)})


def test_majority_prediction() -> None:
    def ex(task: str, label, target: str) -> TextToTextExample:
        return TextToTextExample(task, "x", target, label, 1)

    train = [ex("rte", 1, "not_entailment")] * 3 + [ex("rte", 0, "entailment")] * 2
    assert majority_prediction("rte", train) == "not_entailment"
    assert majority_prediction("rte", train[3:] + train[:2]) == "entailment"  # a tie goes to class 0
    assert majority_prediction("stsb", [ex("stsb", 1.0, "1.0"), ex("stsb", 2.3, "2.4")]) == "1.6"  # mean 1.65
    with pytest.raises(ValueError, match="no training examples"):
        majority_prediction("cola", [])
