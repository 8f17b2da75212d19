"""Trivial baselines: what a model that ignores its input (or knows only the task's format) scores, computed from
the data with the same metric code the models are scored with, so that a results table can show how far above
"no model" each row is.

* :func:`majority_class`: always answer the training split's most frequent label (classification, LRA, the
  probes; the accuracy itself is :func:`~synthformer.tasks.types.classification.majority_baseline`'s), with the
  chance level of a uniform guess beside it.
* :func:`unigram_nats` and :func:`span_corruption_baselines`: the loss of a unigram model of the target tokens,
  and of one that also knows where T5's sentinels and ``</s>`` go ("predict the sentinels").
* :func:`most_frequent`: the training split's most frequent text (the dialogue suite scores it as every reply).
* :func:`copy_source_bleu`: the source sentence as its own translation, scored with sacrebleu's BLEU.

Ties (two labels or replies equally frequent) go to the one seen first in the training split, the rule of
:class:`collections.Counter` that :func:`~synthformer.tasks.types.classification.majority_baseline` uses; the
majority result lists every tied label so that a table can say the choice was arbitrary.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ..types.classification import majority_baseline
from ..types.lm import unigram_bits_per_token

__all__ = ["MajorityClass", "SpanCorruptionBaselines", "copy_source_bleu", "majority_class", "most_frequent",
           "span_corruption_baselines", "target_tokens", "unigram_nats"]


# --------------------------------------------------------------------------- classification


@dataclass(frozen=True)
class MajorityClass:
    """The majority-class baseline of one task.

    Attributes:
        label: the label it answers (the most frequent training label; of tied ones, the first seen).
        tied: every label with the top training count, in first-seen order (``(label,)`` without a tie).
        accuracy: split -> the fraction (0-1) of that split's labels equal to ``label``.
        examples: split -> how many labels were scored.
        chance: the accuracy of a uniform guess over ``classes`` classes, ``1 / classes``.
    """

    label: str
    tied: tuple[str, ...]
    accuracy: dict[str, float]
    examples: dict[str, int]
    chance: float


def majority_class(train_labels: Sequence[str], splits: Mapping[str, Sequence[str]],
                   classes: int | None = None) -> MajorityClass:
    """The majority-class baseline: ``train_labels``' most frequent label, scored on each of ``splits``
    (name -> labels) by :func:`~synthformer.tasks.types.classification.majority_baseline`.

    Args:
        train_labels: the training split's labels (strings, compared exactly).
        splits: the labels to score, by split name; an empty split scores NaN.
        classes: the number of classes for ``chance``; default the distinct training labels.

    Raises:
        ValueError: no training label.
    """
    if not train_labels:
        raise ValueError("the majority class needs at least one training label")
    counts = Counter(train_labels)
    label, top = counts.most_common(1)[0]
    tied = tuple(lab for lab, n in counts.items() if n == top)  # a Counter keeps first-seen order
    n_classes = classes if classes is not None else len(counts)
    return MajorityClass(label, tied, {name: majority_baseline(list(train_labels), list(labels))
                                       for name, labels in splits.items()},
                         {name: len(labels) for name, labels in splits.items()}, 1.0 / n_classes)


# --------------------------------------------------------------------------- unigram losses


def unigram_nats(train_ids: Tensor, eval_ids: Tensor, vocab_size: int, excluded: Iterable[int] = ()) -> float:
    """Cross-entropy (nats per token) of ``eval_ids`` under the unigram frequencies of ``train_ids``, add-one
    smoothed over the ``vocab_size`` ids less ``excluded``.

    With nothing excluded this is :func:`~synthformer.tasks.types.lm.unigram_bits_per_token` in nats: each id's
    probability is ``(count + 1) / (N + V)`` for ``N`` training tokens and ``V`` ids. Excluded ids get probability
    0 and their training occurrences are dropped, so the rest is the smoothed unigram over ``V - len(excluded)``
    ids; an excluded id in ``eval_ids`` is an error (its loss would be infinite).

    Args:
        train_ids: training tokens, any shape (flattened), ids in ``[0, vocab_size)``.
        eval_ids: the tokens scored, any shape (flattened).
        vocab_size: the number of ids.
        excluded: ids the model knows never occur where it is asked.

    Raises:
        ValueError: an id (or an excluded one) out of range, an excluded id among ``eval_ids``, or no id left.
    """
    train, scored = train_ids.flatten().long(), eval_ids.flatten().long()
    for name, ids in (("train_ids", train), ("eval_ids", scored)):
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
            raise ValueError(f"{name}: ids must be in [0, {vocab_size}), found {int(ids.min())}..{int(ids.max())}")
    dropped = sorted(set(excluded))
    if dropped and (dropped[0] < 0 or dropped[-1] >= vocab_size):
        raise ValueError(f"excluded: ids must be in [0, {vocab_size}), got {dropped}")
    keep = torch.ones(vocab_size, dtype=torch.bool)
    keep[torch.tensor(dropped, dtype=torch.long)] = False
    if not bool(keep.any()):
        raise ValueError("every id is excluded: no unigram is left")
    if not bool(keep[scored].all()):
        raise ValueError("eval_ids holds an excluded id: its probability is 0")
    # renumber the kept ids 0..K-1 so the smoothing runs over them alone, through the LM baseline's own function
    compact = torch.cumsum(keep.long(), 0) - 1  # (V,) id -> its index among the kept ids
    bits = unigram_bits_per_token(compact[train[keep[train]]], compact[scored], int(keep.sum()))
    return bits * math.log(2)


def target_tokens(dataset: Any, limit: int | None = None) -> Tensor:
    """Every target token a seq2seq dataset's items ask the decoder for (their ``labels``, concatenated in item
    order; at most ``limit`` items): the tokens a model's loss is averaged over. Shape ``(N,)``, int64."""
    n = len(dataset) if limit is None else min(limit, len(dataset))
    parts = [dataset[i]["labels"].flatten() for i in range(n)]
    return torch.cat(parts).long() if parts else torch.zeros(0, dtype=torch.long)


@dataclass(frozen=True)
class SpanCorruptionBaselines:
    """The two span-corruption baselines, in nats per target token (every target token counted, sentinels and
    ``</s>`` included, as the models' validation log perplexity counts them).

    Attributes:
        unigram: the add-one unigram of all training target tokens, on every valid target token.
        sentinels: 0 on each sentinel and ``</s>``, the add-one unigram of the other training target tokens
            (sentinels and ``</s>`` excluded) on the others; summed and divided by all valid target tokens.
        tokens: valid target tokens scored.
        sentinel_share: the fraction of them that are sentinels or ``</s>``.
    """

    unigram: float
    sentinels: float
    tokens: int
    sentinel_share: float


def span_corruption_baselines(train_targets: Tensor, valid_targets: Tensor, vocab_size: int,
                              sentinel_ids: Iterable[int], eos_id: int) -> SpanCorruptionBaselines:
    """The unigram and "predict the sentinels" losses of T5's span-corruption targets.

    A target is ``<extra_id_0> span <extra_id_1> span ... <extra_id_k> </s>``: its sentinels stand at known places
    (before each span, one to close) and ``</s>`` ends it. The "predict the sentinels" model knows those places
    exactly: it puts probability 1 on the right sentinel or ``</s>`` there (loss 0), and elsewhere, knowing that no
    sentinel or ``</s>`` comes, the add-one unigram of the training targets' span tokens over the ids that are
    neither (:func:`unigram_nats` with them excluded). Its loss is that sum over the span tokens divided by all
    valid target tokens. Both baselines are estimated on ``train_targets`` and scored on ``valid_targets``.

    Args:
        train_targets: ``(N,)`` the training targets' tokens (e.g. :func:`target_tokens` of the training set).
        valid_targets: ``(M,)`` the validation targets' tokens.
        vocab_size: the tokenizer's number of ids.
        sentinel_ids: the tokenizer's sentinel ids.
        eos_id: its ``</s>`` id.

    Raises:
        ValueError: no validation token, or an id out of range.
    """
    if valid_targets.numel() == 0:
        raise ValueError("no validation target token to score")
    special = sorted({*sentinel_ids, eos_id})
    is_special = torch.isin(valid_targets.flatten(), torch.tensor(special, dtype=torch.long))
    spans = valid_targets.flatten()[~is_special]
    total = valid_targets.numel()
    span_nats = unigram_nats(train_targets, spans, vocab_size, special) * spans.numel() if spans.numel() else 0.0
    return SpanCorruptionBaselines(unigram=unigram_nats(train_targets, valid_targets, vocab_size),
                                   sentinels=span_nats / total, tokens=total,
                                   sentinel_share=float(is_special.sum()) / total)


# --------------------------------------------------------------------------- replies, translations


def most_frequent(texts: Iterable[str]) -> tuple[str, int]:
    """The most frequent text (compared exactly; of tied ones, the first seen) and its count.

    Raises:
        ValueError: no text.
    """
    counts = Counter(texts)
    if not counts:
        raise ValueError("no text to count")
    return counts.most_common(1)[0]


def copy_source_bleu(sources: Sequence[str], references: Sequence[str]) -> float:
    """Corpus BLEU (sacrebleu's defaults, the translation task's) of the source sentences taken as their own
    translations: what names, numbers and shared words alone score."""
    from .text import bleu

    return bleu(list(sources), list(references)).score
