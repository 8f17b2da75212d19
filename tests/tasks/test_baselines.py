"""The trivial baselines of :mod:`synthformer.tasks.metrics.baselines` on tiny hand-made data, each against a value
computed by hand: majority class (ties included), unigram and "predict the sentinels" losses, lead-N summaries,
the most frequent reply and the copied source."""

from __future__ import annotations

import math

import pytest
import torch

from synthformer.tasks.metrics.baselines import (
    copy_source_bleu,
    majority_class,
    most_frequent,
    span_corruption_baselines,
    target_tokens,
    unigram_nats,
)
from synthformer.tasks.suites.dialogue import frequent_reply_scores
from synthformer.tasks.suites.summarization import lead_scores, lead_summaries
from synthformer.tasks.types.lm import unigram_bits_per_token


def test_majority_class_scores_the_most_frequent_training_label_on_each_split() -> None:
    found = majority_class(["a", "b", "a", "c"], {"valid": ["a", "b", "b", "a"], "test": ["c", "a", "c"]})
    assert (found.label, found.tied) == ("a", ("a",))
    assert found.accuracy == {"valid": 0.5, "test": pytest.approx(1 / 3)}
    assert found.examples == {"valid": 4, "test": 3}
    assert found.chance == pytest.approx(1 / 3)  # three distinct training labels


def test_a_tie_goes_to_the_label_seen_first_and_every_tied_label_is_listed() -> None:
    found = majority_class(["b", "a", "a", "b", "c"], {"valid": ["a", "a", "b"]}, classes=4)
    assert (found.label, found.tied) == ("b", ("b", "a"))
    assert found.accuracy["valid"] == pytest.approx(1 / 3)
    assert found.chance == 0.25  # the classes given, not the labels seen


def test_majority_class_of_an_empty_split_is_nan_and_no_training_label_is_an_error() -> None:
    assert math.isnan(majority_class(["x"], {"test": []}).accuracy["test"])
    with pytest.raises(ValueError, match="at least one training label"):
        majority_class([], {"valid": ["x"]})


def test_unigram_nats_is_add_one_smoothed_and_equals_the_lm_baseline_in_nats() -> None:
    train, scored = torch.tensor([0, 0, 1]), torch.tensor([0, 2])
    # counts + 1 = [3, 2, 1] of 6: p(0) = 1/2, p(2) = 1/6
    expected = (math.log(2) + math.log(6)) / 2
    assert unigram_nats(train, scored, 3) == pytest.approx(expected)
    assert unigram_nats(train, scored, 3) == pytest.approx(unigram_bits_per_token(train, scored, 3) * math.log(2))


def test_excluded_ids_leave_the_support_and_the_counts() -> None:
    # ids 2 and 3 excluded: the training 2 is dropped, kept ids 0, 1 with counts + 1 = [3, 2] of 5
    got = unigram_nats(torch.tensor([0, 0, 1, 2]), torch.tensor([1]), 4, excluded=[2, 3])
    assert got == pytest.approx(-math.log(2 / 5))
    with pytest.raises(ValueError, match="excluded id"):
        unigram_nats(torch.tensor([0, 1]), torch.tensor([3]), 4, excluded=[3])
    with pytest.raises(ValueError, match=r"ids must be in \[0, 4\)"):
        unigram_nats(torch.tensor([0, 4]), torch.tensor([0]), 4)
    with pytest.raises(ValueError, match=r"excluded: ids must be in \[0, 4\)"):
        unigram_nats(torch.tensor([0, 1]), torch.tensor([0]), 4, excluded=[7])
    with pytest.raises(ValueError, match="every id is excluded"):
        unigram_nats(torch.tensor([0]), torch.tensor([], dtype=torch.long), 2, excluded=[0, 1])


def test_span_corruption_baselines_by_hand() -> None:
    # ids: 0 pad, 1 </s>, 2 and 3 words, 5 = <extra_id_0> and 4 = <extra_id_1> (T5 counts sentinels down)
    train = torch.tensor([5, 2, 4, 1, 5, 2, 3, 4, 1])
    valid = torch.tensor([5, 3, 4, 1])  # <extra_id_0> word <extra_id_1> </s>
    found = span_corruption_baselines(train, valid, 6, sentinel_ids=[5, 4], eos_id=1)
    # unigram: counts [0, 2, 2, 1, 2, 2] + 1 = [1, 3, 3, 2, 3, 3] of 15
    unigram = -(3 * math.log(3 / 15) + math.log(2 / 15)) / 4
    assert found.unigram == pytest.approx(unigram)
    # sentinels and </s> free; the span token 3 under the unigram of ids {0, 2, 3}: [0, 2, 1] + 1 of 6 -> 2/6
    assert found.sentinels == pytest.approx(math.log(3) / 4)
    assert (found.tokens, found.sentinel_share) == (4, 0.75)


def test_target_tokens_concatenate_the_items_labels_in_order() -> None:
    items = [{"labels": torch.tensor([5, 2, 1])}, {"labels": torch.tensor([5, 3, 4, 1])}]
    assert target_tokens(items).tolist() == [5, 2, 1, 5, 3, 4, 1]
    assert target_tokens(items, limit=1).tolist() == [5, 2, 1]


def test_lead_takes_a_dialogues_first_turns_or_a_texts_first_sentences() -> None:
    dialogue = "Amanda: hi there\nTom: hello\nAmanda: bye now\nTom: see you"
    assert lead_summaries([dialogue], 2) == ["Amanda: hi there\nTom: hello"]
    assert lead_summaries(["The cat sat. It was warm. Then it left."], 2) == ["The cat sat.\nIt was warm."]
    with pytest.raises(ValueError, match="n must be >= 1"):
        lead_summaries([dialogue], 0)


def test_lead_scores_are_the_summary_metrics_rouge() -> None:
    # lead-1 "the cat sat." against "the cat ran": unigrams 2 of 3 each way, bigrams 1 of 2
    scores = lead_scores(["the cat sat.\nthe dog barked."], ["the cat ran"], n=1)
    assert scores["rouge1"] == pytest.approx(200 / 3)
    assert scores["rouge2"] == pytest.approx(50.0)
    assert scores["rougeL"] == pytest.approx(200 / 3)


def test_most_frequent_text_and_its_count_with_ties_to_the_first_seen() -> None:
    assert most_frequent(["x", "y", "y", "x", "z"]) == ("x", 2)
    with pytest.raises(ValueError, match="no text"):
        most_frequent([])


def test_frequent_reply_is_given_to_every_context_and_scored_by_the_dialogue_metrics() -> None:
    reply, scores = frequent_reply_scores(["hi .", "ok .", "hi ."], ["hi .", "no ."], ["rouge_l", "distinct"])
    assert reply == "hi ."
    # distinct-1: {hi, .} of 4 unigrams; distinct-2: {"hi ."} of 2 bigrams
    assert scores["distinct_1"] == 50.0 and scores["distinct_2"] == 50.0
    # ROUGE-L (beta 1.2): 1 for the exact reply; LCS 1 of 2 each way for "no .": F = 2.44 * .25 / 1.22 = 0.5
    assert scores["rouge_l"] == pytest.approx(75.0)


def test_copy_source_bleu_is_100_for_identical_text_and_0_for_disjoint() -> None:
    sentences = ["a man is riding a red bicycle down the street .", "two dogs play in the snow together ."]
    assert copy_source_bleu(sentences, sentences) == pytest.approx(100.0)
    assert copy_source_bleu(["ein Mann fährt Fahrrad", "zwei Hunde spielen"], ["one two three four five",
                                                                          "six seven eight nine"]) == 0.0
