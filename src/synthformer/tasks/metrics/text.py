"""Corpus text metrics: BLEU and chrF (sacrebleu), ROUGE (rouge-score), for the task types and suites that decode.

BLEU and chrF return their score together with the exact configuration that produced it (sacrebleu's signature),
since a BLEU number without its signature cannot be compared with another one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MetricResult", "bleu", "chrf", "rouge"]


@dataclass(frozen=True)
class MetricResult:
    """A corpus-level score (0-100 for BLEU/chrF) and the signature that makes it reproducible."""

    score: float
    signature: str

    def __float__(self) -> float:
        return self.score

    def __str__(self) -> str:
        return f"{self.score:.2f} ({self.signature})"


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
