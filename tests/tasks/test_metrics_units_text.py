"""Metrics against known values."""

from __future__ import annotations

import math

import pytest
import torch

from synthformer.tasks.metrics.text import bleu, chrf, rouge
from synthformer.tasks.metrics.units import accuracy, bits_per_byte, bits_per_character, perplexity


def test_perplexity_and_bits():
    assert perplexity(math.log(10)) == pytest.approx(10.0)
    assert perplexity(1e6) == math.inf
    assert bits_per_character(math.log(2)) == pytest.approx(1.0)  # char-level: nats/token -> bits/char
    # 10 subword tokens at 2 ln 2 nats each carry 20 bits, spread over 40 bytes: 0.5 bit/byte.
    assert bits_per_byte(2 * math.log(2), num_tokens=10, num_bytes=40) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="both"):
        bits_per_character(1.0, num_tokens=3)


def test_accuracy_known_cases():
    assert accuracy([1, 0, 1, 1], [1, 1, 1, 0]) == 0.5
    logits = torch.tensor([[[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]])  # argmax: 1, 0, 1
    assert accuracy(logits, torch.tensor([[1, 1, -100]])) == 0.5  # the ignored position does not count
    assert math.isnan(accuracy([1], [-100]))
    with pytest.raises(ValueError, match="do not match"):
        accuracy([1, 2], [1])


def test_bleu_and_chrf():
    refs = ["the cat sat on the mat", "a quick brown fox jumps over the lazy dog"]
    result = bleu(refs, refs)
    assert result.score == pytest.approx(100.0)
    assert "nrefs:1" in result.signature and "tok:13a" in result.signature
    partial = bleu(["the cat sat on a mat", "a quick brown fox jumps over the lazy dog"], refs)
    assert 0 < partial.score < 100
    multi = bleu(["the cat sat on the mat"], [["a cat sat on a mat", "the cat sat on the mat"]])
    assert multi.score == pytest.approx(100.0) and "nrefs:2" in multi.signature
    assert chrf(refs, refs).score == pytest.approx(100.0)
    assert "nc:6" in chrf(refs, refs).signature and "nw:2" in chrf(refs, refs, word_order=2).signature
    assert bleu(["x y z w"], ["a b c d"]).score == 0.0
    with pytest.raises(ValueError, match="references"):
        bleu(["a"], ["a", "b"])


def test_rouge_known_values():
    same = rouge(["the cat sat"], ["the cat sat"])
    assert same == pytest.approx({"rouge1": 100.0, "rouge2": 100.0, "rougeL": 100.0})
    # hypothesis "the cat" vs reference "the cat sat": P = 1, R = 2/3, F1 = 0.8; bigrams: P = 1, R = 1/2.
    got = rouge(["the cat"], ["the cat sat"])
    assert got["rouge1"] == pytest.approx(80.0) and got["rouge2"] == pytest.approx(200 / 3)
    # The corpus score is the mean over pairs.
    assert rouge(["the cat", "dog"], ["the cat sat", "bird"])["rouge1"] == pytest.approx(40.0)
