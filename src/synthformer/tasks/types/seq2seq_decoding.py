"""Decoding and decoded-output metrics of encoder-decoder task types (BLEU, chrF, ROUGE, exact match)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from synthformer.train.metrics import bleu, chrf, rouge

from ..evaluation import device_of, likelihood_metrics

__all__ = ["DECODED_METRICS", "decode_seq2seq", "seq2seq_metrics"]

#: Metrics that need decoded output (the others are computed with teacher forcing).
DECODED_METRICS: tuple[str, ...] = ("bleu", "chrf", "rouge", "exact_match")


@torch.no_grad()
def decode_seq2seq(model: nn.Module, src: list[Tensor], *, beam: int, length_penalty: float, max_new_tokens: int,
                   batch_size: int, pad_id: int, eos_id: int) -> list[list[int]]:
    """Greedy (``beam`` 1) or beam-search token ids for each source (tokenized, with framing), in input order.

    Sources are decoded in batches of similar length (less padding); ``<eos>`` is stripped from the output.
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
        if beam == 1:
            result = greedy_search(model, src_ids, mask, max_new_tokens=max_new_tokens)
        else:
            result = beam_search(model, src_ids, mask, beam_size=beam, alpha=length_penalty,
                                 max_new_tokens=max_new_tokens)
        for i, ids in zip(idx, result.to_lists(strip_eos=eos_id), strict=True):
            out[i] = ids
    return out


def seq2seq_metrics(model: nn.Module, dataset: Any, references: list[str], tokenizer: Any, names: list[str], *,
                    batch_size: int, max_batches: int = 0, beam: int = 1, length_penalty: float = 0.6,
                    max_new_tokens: int, max_examples: int | None = None) -> tuple[dict[str, Any], list[str]]:
    """Loss / perplexity (teacher forcing) and BLEU, chrF, ROUGE, exact match of decoded output against
    ``references`` (the raw target text of every dataset item). Returns the metrics and the hypotheses."""
    out = likelihood_metrics(model, dataset, names, batch_size, max_batches)
    out.pop("tokens", None)  # the seq2seq reports never listed it
    hypotheses: list[str] = []
    if any(n in names for n in DECODED_METRICS):
        n = len(dataset) if max_examples is None else min(max_examples, len(dataset))
        if n == 0:
            return out, hypotheses
        src = [dataset[i]["src_ids"] for i in range(n)]
        config = model.config
        ids = decode_seq2seq(model, src, beam=beam, length_penalty=length_penalty, max_new_tokens=max_new_tokens,
                             batch_size=batch_size, pad_id=config.pad_id, eos_id=config.eos_id)
        hypotheses = [tokenizer.decode(seq).strip() for seq in ids]
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
        out["beam"] = beam
    return out, hypotheses
