"""Dialogue metrics as nlg-eval computes them over the COCO caption evaluation code (``pycocoevalcap``): BLEU-1..4,
METEOR, ROUGE-L and CIDEr (CIDEr-D), plus distinct-1/2 (Li et al., 2016).

Conventions (nlg-eval's ``compute_metrics``): hypotheses and references are stripped and split on whitespace, with
no further tokenization or lower-casing (PersonaChat's and DailyDialog's text is already tokenized); each example
may have several references. BLEU is corpus BLEU with the "closest" reference length; ROUGE-L is the mean of the
per-example LCS F-measures with beta 1.2; METEOR 1.5 (``-l en -norm``) runs in a Java subprocess; all are reported
in percent (pycocoevalcap's 0-1 values times 100, CIDEr's 0-10 values times 100 too, as the paper's Table 3 does).

CIDEr-D weights n-grams by tf-idf, and the document frequencies come from the references of the scored set
itself (``pycocoevalcap``'s ``CiderScorer`` counts, for each n-gram, the examples whose references contain it, and
uses ``log(number of examples)`` as the idf ceiling). So a CIDEr value belongs to the whole set it was computed on:
the value on a small validation sample during training is not comparable with the value on the whole test split,
and a set of one example always scores 0 (every idf is ``log 1 = 0``). Score the split at once, never average
CIDEr over batches.

METEOR needs a Java runtime (``java`` on the PATH; Debian: ``apt-get install default-jre-headless``). Without one,
or when the Java process fails, METEOR is left out of the results and one warning per process says what to
install; the other metrics are still computed.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence

from ...metrics.baselines import most_frequent

__all__ = ["DIALOGUE_METRICS", "dialogue_scores", "distinct_n", "frequent_reply_scores", "java_available"]

logger = logging.getLogger(__name__)

#: The metric names a dialogue evaluation may ask for; ``bleu`` reports ``bleu_1`` .. ``bleu_4``, ``distinct``
#: reports ``distinct_1`` and ``distinct_2``.
DIALOGUE_METRICS: tuple[str, ...] = ("bleu", "meteor", "rouge_l", "cider", "distinct")
_warned: set[str] = set()


def java_available() -> bool:
    """Whether a ``java`` executable is on the PATH (pycocoevalcap's METEOR runs ``java -jar``)."""
    return shutil.which("java") is not None


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        logger.warning(message)


def distinct_n(hypotheses: Sequence[str], n: int) -> float:
    """Distinct-n: distinct n-grams over all n-grams of all hypotheses (whitespace tokens), in percent; 0 when
    there is no n-gram."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    grams = [tuple(tokens[i : i + n]) for h in hypotheses for tokens in [h.split()] for i in range(len(tokens) - n + 1)]
    return 100.0 * len(set(grams)) / len(grams) if grams else 0.0


def _as_reference_lists(references: Sequence[str] | Sequence[Sequence[str]]) -> list[list[str]]:
    return [[r.strip()] if isinstance(r, str) else [x.strip() for x in r] for r in references]


def _meteor(gts: dict[int, list[str]], res: dict[int, list[str]]) -> float | None:
    """pycocoevalcap's METEOR, or None (with one warning) when Java is missing or its process fails."""
    if not java_available():
        _warn_once("java", "METEOR skipped: no Java runtime found (install one, e.g. 'apt-get install "
                           "default-jre-headless', so that 'java' is on the PATH)")
        return None
    from pycocoevalcap.meteor.meteor import Meteor

    scorer = None
    try:
        scorer = Meteor()
        score, _ = scorer.compute_score(gts, res)
        return float(score)
    except (OSError, ValueError) as err:
        _warn_once("meteor", f"METEOR skipped: its Java process failed ({err}); check that 'java -version' works")
        return None
    finally:
        # a failure inside compute_score leaves the scorer's lock held, and its __del__ (which closes and reaps
        # the Java process) would wait for it forever
        if scorer is not None and scorer.lock.locked():
            scorer.lock.release()
        del scorer


def dialogue_scores(hypotheses: Sequence[str], references: Sequence[str] | Sequence[Sequence[str]],
                    names: Sequence[str] = DIALOGUE_METRICS) -> dict[str, float]:
    """The metrics ``names`` (of :data:`DIALOGUE_METRICS`) of ``hypotheses`` against ``references`` (one string or
    a list of strings per hypothesis), in percent.

    Keys: ``bleu_1`` .. ``bleu_4``, ``meteor`` (absent when it cannot run), ``rouge_l``, ``cider``,
    ``distinct_1``, ``distinct_2``.

    Raises:
        ValueError: different numbers of hypotheses and references, none at all, an example without a
            reference, or an unknown metric name.
    """
    unknown = sorted(set(names) - set(DIALOGUE_METRICS))
    if unknown:
        raise ValueError(f"unknown dialogue metric(s) {unknown}; valid: {', '.join(DIALOGUE_METRICS)}")
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        raise ValueError("dialogue metrics need at least one hypothesis")
    refs = _as_reference_lists(references)
    empty = [i for i, r in enumerate(refs) if not r]
    if empty:
        raise ValueError(f"example {empty[0]} has no reference")
    # pycocoevalcap's input: {id: [reference, ...]} and {id: [hypothesis]}
    gts = dict(enumerate(refs))
    res = {i: [h.strip()] for i, h in enumerate(hypotheses)}
    out: dict[str, float] = {}
    if "bleu" in names:
        from pycocoevalcap.bleu.bleu import Bleu

        bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
        out.update({f"bleu_{n}": 100.0 * float(b) for n, b in enumerate(bleu, start=1)})
    if "meteor" in names:
        meteor = _meteor(gts, res)
        if meteor is not None:
            out["meteor"] = 100.0 * meteor
    if "rouge_l" in names:
        from pycocoevalcap.rouge.rouge import Rouge

        out["rouge_l"] = 100.0 * float(Rouge().compute_score(gts, res)[0])
    if "cider" in names:
        from pycocoevalcap.cider.cider import Cider

        out["cider"] = 100.0 * float(Cider().compute_score(gts, res)[0])
    if "distinct" in names:
        out["distinct_1"], out["distinct_2"] = distinct_n(hypotheses, 1), distinct_n(hypotheses, 2)
    return out


def frequent_reply_scores(train_replies: Sequence[str], references: Sequence[str] | Sequence[Sequence[str]],
                          names: Sequence[str] | None = None) -> tuple[str, dict[str, float]]:
    """The training split's most frequent reply given to every one of ``references``' contexts, scored by the
    dialogue task's :func:`dialogue_scores` (``names``: its metric names; default all). Returns (the reply, the
    scores in percent): the baseline a dialogue model must beat."""
    reply, _ = most_frequent(train_replies)
    return reply, dialogue_scores([reply] * len(references), references, names or DIALOGUE_METRICS)
