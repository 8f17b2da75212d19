"""Decoding and decoded-output metrics of encoder-decoder task types (BLEU, chrF, ROUGE, exact match).

:class:`Decoding` gathers the decoder settings of a run (``eval.beam``, ``eval.length_penalty``,
``eval.max_decode_len``, ``eval.min_length``, ``eval.no_repeat_ngram_size``); :func:`decoding_for` reads them from
a run config (``synthformer eval``'s options are applied to it by ``evaluate_run``), with the overrides of the
caller (``synthformer generate`` options).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from synthformer.tasks.metrics.text import bleu, chrf, rouge

from ..metrics.likelihood import device_of, likelihood_metrics

if TYPE_CHECKING:
    from synthformer.train import EvalShard

    from ..contract import TaskData
    from ..run.config import RunConfig

__all__ = ["DECODED_METRICS", "Decoding", "decode_dataset", "decode_seq2seq", "decoding_for",
           "evaluate_decoded", "length_summary", "seq2seq_metrics"]

logger = logging.getLogger(__name__)

#: Metrics that need decoded output (the others are computed with teacher forcing).
DECODED_METRICS: tuple[str, ...] = ("bleu", "chrf", "rouge", "exact_match")
@dataclass(frozen=True)
class Decoding:
    """How an encoder-decoder's outputs are decoded: beam size (1: greedy), GNMT length penalty, the most
    tokens per output (``<eos>`` included), the fewest before ``<eos>``, and the n-gram size never repeated (0:
    none); see :func:`synthformer.generate.beam_search`."""

    beam: int
    length_penalty: float
    max_new_tokens: int
    min_length: int = 0
    no_repeat_ngram_size: int = 0


def decoding_for(run: RunConfig, model_max_len: int, beam: int | None = None, max_new_tokens: int | None = None,
                 **changes: Any) -> Decoding:
    """The decoding settings of ``run`` (its ``eval`` section, then ``changes`` that are not None), ``beam`` and
    ``max_new_tokens`` when given; the length limit is capped by the model's ``max_len``, and a ``min_length``
    that leaves no room for ``<eos>`` is lowered (with a warning)."""
    settings = {k: v for k, v in changes.items() if v is not None}
    ev = dataclasses.replace(run.eval, **settings) if settings else run.eval  # re-checked by EvalConfig
    limit = min(max_new_tokens or ev.max_decode_len or run.task.target_len, model_max_len)
    min_length = ev.min_length
    if min_length >= limit:
        logger.warning("min_length %d lowered to %d: outputs have at most %d tokens, <eos> included",
                       min_length, limit - 1, limit)
        min_length = limit - 1
    return Decoding(beam=beam if beam is not None else ev.beam, length_penalty=ev.length_penalty,
                    max_new_tokens=limit, min_length=min_length, no_repeat_ngram_size=ev.no_repeat_ngram_size)


@torch.no_grad()
def decode_seq2seq(model: nn.Module, src: list[Tensor], *, beam: int, length_penalty: float, max_new_tokens: int,
                   batch_size: int, pad_id: int, eos_id: int, min_length: int = 0,
                   no_repeat_ngram_size: int = 0) -> list[list[int]]:
    """Greedy (``beam`` 1) or beam-search token ids for each source (tokenized, with framing), in input order.

    Sources are decoded in batches of similar length (less padding); ``<eos>`` is stripped from the output.
    ``min_length`` and ``no_repeat_ngram_size`` are the constraints of :mod:`synthformer.generate.constraints`.
    """
    from synthformer.generate import beam_search, greedy_search

    device = device_of(model)
    order = sorted(range(len(src)), key=lambda i: src[i].numel())
    out: list[list[int]] = [[] for _ in src]
    # beam search runs batch * beam rows: keep the work per call about the same as greedy's
    step = max(1, batch_size // beam) if beam > 1 else batch_size
    for start in range(0, len(order), step):
        idx = order[start : start + step]
        seqs = [src[i] for i in idx]
        width = max(s.numel() for s in seqs)
        src_ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
        for row, s in enumerate(seqs):
            src_ids[row, : s.numel()] = s
        src_ids = src_ids.to(device)
        mask = src_ids == pad_id  # (B, S) True at padding
        constraints = {"min_length": min_length, "no_repeat_ngram_size": no_repeat_ngram_size}
        if beam == 1:
            result = greedy_search(model, src_ids, mask, max_new_tokens=max_new_tokens, **constraints)
        else:
            result = beam_search(model, src_ids, mask, beam_size=beam, alpha=length_penalty,
                                 max_new_tokens=max_new_tokens, **constraints)
        for i, ids in zip(idx, result.to_lists(strip_eos=eos_id), strict=True):
            out[i] = ids
    return out


def decode_dataset(model: nn.Module, dataset: Any, tokenizer: Any, decoding: Decoding, *, batch_size: int,
                   max_examples: int | None = None, shard: EvalShard | None = None) -> list[str]:
    """The decoded text of the first ``max_examples`` items of a seq2seq dataset (all when None).

    With a ``shard`` of several processes each decodes its contiguous part of those items and the texts are
    gathered (collective): every process returns all of them, in item order."""
    n = len(dataset) if max_examples is None else min(max_examples, len(dataset))
    items = range(n) if shard is None else shard.part(range(n))
    src = [dataset[i]["src_ids"] for i in items]
    config = model.config
    ids = decode_seq2seq(model, src, beam=decoding.beam, length_penalty=decoding.length_penalty,
                         max_new_tokens=decoding.max_new_tokens, batch_size=batch_size, pad_id=config.pad_id,
                         eos_id=config.eos_id, min_length=decoding.min_length,
                         no_repeat_ngram_size=decoding.no_repeat_ngram_size)
    texts = [tokenizer.decode(seq).strip() for seq in ids]
    return texts if shard is None else shard.concat(texts)


def seq2seq_metrics(model: nn.Module, dataset: Any, references: list[str], tokenizer: Any, names: list[str], *,
                    batch_size: int, decoding: Decoding, max_batches: int = 0,
                    max_examples: int | None = None,
                    shard: EvalShard | None = None) -> tuple[dict[str, Any], list[str]]:
    """Loss / perplexity (teacher forcing) and BLEU, chrF, ROUGE, exact match of decoded output against
    ``references`` (the raw target text of every dataset item). Returns the metrics and the hypotheses.
    ``shard``: each process scores and decodes its part; the sums and hypotheses are gathered."""
    out = likelihood_metrics(model, dataset, names, batch_size, max_batches, shard)
    out.pop("tokens", None)  # the seq2seq reports never listed it
    hypotheses: list[str] = []
    if any(n in names for n in DECODED_METRICS):
        hypotheses = decode_dataset(model, dataset, tokenizer, decoding, batch_size=batch_size,
                                    max_examples=max_examples, shard=shard)
        n = len(hypotheses)
        if n == 0:
            return out, hypotheses
        refs = references[:n]
        if "bleu" in names:
            score = bleu(hypotheses, refs)
            out["bleu"], out["bleu_signature"] = score.score, score.signature
        if "chrf" in names:
            score = chrf(hypotheses, refs)
            out["chrf"], out["chrf_signature"] = score.score, score.signature
        if "rouge" in names:
            out.update(rouge(hypotheses, refs))
        if "exact_match" in names:
            out["exact_match"] = sum(h == r.strip() for h, r in zip(hypotheses, refs, strict=True)) / n
        out["decoded"] = n
        out["beam"] = decoding.beam
    return out, hypotheses


def length_summary(dataset: Any) -> dict[str, Any]:
    """How many examples of a dataset were truncated (and skipped) for length, for the evaluation report."""
    report = dataset.length_report
    out: dict[str, Any] = {"truncated_examples": report.truncated,
                           "truncated_percent": 100.0 * report.truncated / max(report.total, 1)}
    if report.skipped:
        out["skipped_examples"] = report.skipped
    return out


def evaluate_decoded(run: RunConfig, data: TaskData, model: nn.Module, split: str, names: list[str], *,
                     references: Callable[[], Sequence[str]],
                     score: Callable[[list[str], list[str]], dict[str, Any]], decode: bool, batch_size: int,
                     max_batches: int, beam: int | None, max_examples: int | None,
                     shard: EvalShard | None = None) -> tuple[dict[str, Any], list[str]]:
    """The evaluation of a task type scored on decoded text (summarization, dialogue): the teacher-forced metrics
    of ``names``, the split's truncation counts, and, when ``decode``, ``score(hypotheses, references)`` of the
    first ``max_examples`` dataset items decoded with the run's settings (``references()``: the reference text of
    every dataset item, in item order). ``shard``: each process scores and decodes its part; gathered."""
    dataset = data.datasets[split]
    out = likelihood_metrics(model, dataset, names, batch_size, max_batches, shard)
    out.pop("tokens", None)
    out.update(length_summary(dataset))
    hypotheses: list[str] = []
    if decode and max_examples != 0:
        decoding = decoding_for(run, model.config.max_len, beam)
        hypotheses = decode_dataset(model, dataset, data.tokenizer, decoding, batch_size=batch_size,
                                    max_examples=max_examples, shard=shard)
        if hypotheses:
            out.update(score(hypotheses, list(references()[: len(hypotheses)])))
        out["decoded"], out["beam"] = len(hypotheses), decoding.beam
    return out, hypotheses
