"""Summarization metrics: ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum through Google's ``rouge-score`` with its Porter
stemmer (``use_stemmer=True``, as CNN/DailyMail results are usually reported).

ROUGE-Lsum is the summary-level LCS of ``rouge-score``: it needs each summary's sentences on lines of their own.
:func:`split_sentences` puts them there with nltk's Punkt sentence splitter: the trained English model when nltk
finds its ``punkt_tab`` data locally (nothing is ever downloaded), else Punkt's untrained default, which splits at
``.``, ``!`` and ``?`` followed by a space and an upper- or lower-case word (it also splits after an abbreviation
such as "Mr."; the trained model knows those). Text that already has newlines is kept as it is split.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any

from synthformer.tasks.metrics.text import rouge

__all__ = ["ROUGE_TYPES", "lead_scores", "lead_summaries", "rouge_scores", "split_sentences"]

logger = logging.getLogger(__name__)

#: The ROUGE variants reported for summarization (``rouge_score``'s names).
ROUGE_TYPES: tuple[str, ...] = ("rouge1", "rouge2", "rougeL", "rougeLsum")


@functools.cache
def _sentence_splitter() -> Any:
    import nltk
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
        from nltk.tokenize import PunktTokenizer

        return PunktTokenizer("english")
    except (LookupError, ImportError, OSError):
        logger.debug("nltk's punkt_tab data not found: untrained Punkt sentence splitting")
        return PunktSentenceTokenizer()


def split_sentences(text: str) -> str:
    """``text`` with one sentence per line (for ROUGE-Lsum); text with newlines already keeps its own lines."""
    text = text.strip()
    if "\n" in text:
        return "\n".join(line.strip() for line in text.splitlines() if line.strip())
    return "\n".join(_sentence_splitter().tokenize(text))


def rouge_scores(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Corpus ROUGE-1/2/L/Lsum F1 (mean over pairs, 0-100) with the stemmer, sentences split for ROUGE-Lsum.

    Keys: ``rouge1``, ``rouge2``, ``rougeL``, ``rougeLsum``. ROUGE-1/2/L ignore line breaks, so splitting both
    sides once serves every type.

    Raises:
        ValueError: different numbers of hypotheses and references, or none.
    """
    return rouge([split_sentences(h) for h in hypotheses], [split_sentences(r) for r in references],
                 types=ROUGE_TYPES, use_stemmer=True)


def lead_summaries(documents: Sequence[str], n: int = 3) -> list[str]:
    """Each document's first ``n`` sentences, one per line: its lines when it has line breaks (a dialogue's
    turns), else the sentences of :func:`split_sentences`."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return ["\n".join(split_sentences(d).splitlines()[:n]) for d in documents]


def lead_scores(documents: Sequence[str], references: Sequence[str], n: int = 3) -> dict[str, float]:
    """ROUGE-1/2/L/Lsum F1 (0-100) of the lead-``n`` summaries against ``references``, by the summarization task's
    own :func:`rouge_scores`."""
    return rouge_scores(lead_summaries(documents, n), references)
