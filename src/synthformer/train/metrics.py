"""Task metrics: perplexity, bits per character/byte, accuracy, BLEU and chrF (sacrebleu), ROUGE.

Text metrics are corpus-level and return their score together with the exact configuration that produced
it (sacrebleu's signature), since a BLEU number without its signature cannot be compared with another one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

__all__ = [
    "MetricResult",
    "accuracy",
    "bits_per_byte",
    "bits_per_character",
    "bleu",
    "chrf",
    "perplexity",
    "rouge",
]


@dataclass(frozen=True)
class MetricResult:
    """A corpus-level score (0-100 for BLEU/chrF) and the signature that makes it reproducible."""

    score: float
    signature: str

    def __float__(self) -> float:
        return self.score

    def __str__(self) -> str:
        return f"{self.score:.2f} ({self.signature})"


def perplexity(mean_nats: float) -> float:
    """``exp(mean cross-entropy in nats per token)``; ``inf`` instead of an overflow error."""
    try:
        return math.exp(mean_nats)
    except OverflowError:
        return math.inf


def _bits_per_unit(mean_nats: float, num_tokens: int | None, num_units: int | None) -> float:
    if (num_tokens is None) != (num_units is None):
        raise ValueError("give both num_tokens and the number of characters/bytes, or neither")
    total_nats = mean_nats * (num_tokens if num_tokens is not None else 1)
    units = num_units if num_units is not None else 1
    if units <= 0:
        raise ValueError(f"the number of characters/bytes must be > 0, got {units}")
    return total_nats / units / math.log(2)


def bits_per_character(mean_nats: float, num_tokens: int | None = None, num_chars: int | None = None) -> float:
    """Bits per character from a mean loss in nats per token.

    For a character-level model (one token per character) pass only ``mean_nats``. For a subword model pass
    the number of tokens scored and the number of characters of the same text, so the total information
    ``mean_nats * num_tokens`` is spread over the characters.
    """
    return _bits_per_unit(mean_nats, num_tokens, num_chars)


def bits_per_byte(mean_nats: float, num_tokens: int | None = None, num_bytes: int | None = None) -> float:
    """Bits per byte (UTF-8) from a mean loss in nats per token; see :func:`bits_per_character`."""
    return _bits_per_unit(mean_nats, num_tokens, num_bytes)


def accuracy(predictions: Any, targets: Any, ignore_index: int | None = -100) -> float:
    """Fraction of correct predictions, ignoring targets equal to ``ignore_index``.

    ``predictions`` may be class ids with the shape of ``targets``, or scores/logits with one more (last)
    dimension, in which case the arg-max is taken.
    """
    pred = torch.as_tensor(predictions)
    tgt = torch.as_tensor(targets)
    if pred.ndim == tgt.ndim + 1:
        pred = pred.argmax(dim=-1)
    if pred.shape != tgt.shape:
        raise ValueError(f"predictions {tuple(pred.shape)} and targets {tuple(tgt.shape)} do not match")
    keep = tgt != ignore_index if ignore_index is not None else torch.ones_like(tgt, dtype=torch.bool)
    n = int(keep.sum())
    if n == 0:
        return math.nan
    return float(((pred == tgt) & keep).sum()) / n


def _reference_streams(references: Sequence[str] | Sequence[Sequence[str]], n_hyp: int) -> list[list[str]]:
    """sacrebleu wants one list per reference *set*; accept one reference per hypothesis or a list of them."""
    if len(references) != n_hyp:
        raise ValueError(f"{n_hyp} hypotheses but {len(references)} references")
    if all(isinstance(r, str) for r in references):
        return [list(references)]  # type: ignore[arg-type]
    n_refs = {len(r) for r in references}
    if len(n_refs) != 1:
        raise ValueError("every hypothesis needs the same number of references")
    return [[refs[j] for refs in references] for j in range(n_refs.pop())]  # type: ignore[index]


def bleu(
    hypotheses: Sequence[str], references: Sequence[str] | Sequence[Sequence[str]], **options: Any
) -> MetricResult:
    """Corpus BLEU with sacrebleu (default: 13a tokenisation, exp smoothing, as in WMT reporting).

    ``references``: one string per hypothesis, or a list of reference strings per hypothesis.
    ``options`` go to ``sacrebleu.metrics.BLEU`` (e.g. ``tokenize="intl"``, ``lowercase=True``).
    """
    from sacrebleu.metrics import BLEU

    metric = BLEU(**options)
    score = metric.corpus_score(list(hypotheses), _reference_streams(references, len(hypotheses)))
    return MetricResult(float(score.score), str(metric.get_signature()))


def chrf(
    hypotheses: Sequence[str],
    references: Sequence[str] | Sequence[Sequence[str]],
    word_order: int = 0,
    **options: Any,
) -> MetricResult:
    """Corpus chrF with sacrebleu (``word_order=2`` gives chrF++)."""
    from sacrebleu.metrics import CHRF

    metric = CHRF(word_order=word_order, **options)
    score = metric.corpus_score(list(hypotheses), _reference_streams(references, len(hypotheses)))
    return MetricResult(float(score.score), str(metric.get_signature()))


def rouge(
    hypotheses: Sequence[str],
    references: Sequence[str],
    types: Sequence[str] = ("rouge1", "rouge2", "rougeL"),
    use_stemmer: bool = True,
) -> dict[str, float]:
    """Mean ROUGE F1 over the corpus, 0-100, per type (``rouge1``, ``rouge2``, ``rougeL``, ``rougeLsum``).

    Corpus ROUGE is the mean of per-pair F-measures, as in ``rouge_score``'s own scorer and the CNN/DailyMail
    literature. For ``rougeLsum`` separate sentences with newlines.
    """
    from rouge_score import rouge_scorer

    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        raise ValueError("rouge needs at least one hypothesis")
    scorer = rouge_scorer.RougeScorer(list(types), use_stemmer=use_stemmer)
    totals = dict.fromkeys(types, 0.0)
    for hyp, ref in zip(hypotheses, references, strict=True):
        scores = scorer.score(ref, hyp)  # rouge_score's order is (target, prediction)
        for t in types:
            totals[t] += scores[t].fmeasure
    return {t: 100.0 * totals[t] / len(hypotheses) for t in types}
