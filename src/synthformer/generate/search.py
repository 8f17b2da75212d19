"""Greedy and beam search for encoder-decoder models.

The paper decodes MT with beam size 4 and length penalty alpha 0.6 (Tensor2Tensor defaults, GNMT's penalty
``lp(n) = ((5 + n) / 6) ** alpha``; a finished hypothesis of n tokens, ``<eos>`` included, is ranked by its
log-probability divided by ``lp(n)``).

Beam search details (chosen so that ``beam_size=1`` is exactly greedy search):

* Each step scores every continuation of every live beam and keeps the ``2 K`` best candidates in rank order.
  An ``<eos>`` candidate among the first K finishes its hypothesis; the K best candidates that are not ``<eos>``
  become the new live beams (so K beams stay alive while the sentence is open).
* A sentence is done once it has K finished hypotheses (fairseq's criterion). When ``max_new_tokens`` is
  reached, the live beams are finished as they are, without ``<eos>``.
* The result is the finished hypothesis with the best length-normalized score.

Both loops take a minimum output length and n-gram repetition blocking (``min_length``, ``no_repeat_ngram_size``;
see :mod:`synthformer.generate.constraints`), applied to each step's log-probabilities before the choice.

Both loops run on the model's incremental cache when every token mixer has one (one new token per step) and
recompute the whole prefix otherwise; ``use_cache`` forces either.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

import torch
from torch import Tensor, nn

from .constraints import apply_constraints, check_constraints
from .output import GenerationOutput
from .steppers import Seq2SeqStepper, resolve_use_cache

__all__ = ["Stepper", "beam_search", "beam_search_loop", "gnmt_length_penalty", "greedy_search"]

logger = logging.getLogger(__name__)


class Stepper(Protocol):
    """What the search loops need from a model (see :mod:`synthformer.generate.steppers`)."""

    def __call__(self, tokens: Tensor) -> Tensor:
        """Log-probabilities (N, V) of the next token after the prefixes ``tokens`` (N, t)."""

    def select(self, index: Tensor) -> None:
        """Make row i continue what row ``index[i]`` was (index: (N',) long)."""


def gnmt_length_penalty(length: int | float | Tensor, alpha: float) -> float | Tensor:
    """``((5 + length) / 6) ** alpha`` (Wu et al., 2016); 1 for alpha = 0."""
    return ((5.0 + length) / 6.0) ** alpha


def _generation_setup(model: nn.Module, src_ids: Tensor, max_new_tokens: int | None) -> int:
    max_len = model.config.max_len
    if max_new_tokens is None:
        max_new_tokens = max_len
    if not 1 <= max_new_tokens <= max_len:
        raise ValueError(
            f"max_new_tokens must be in [1, {max_len}] (the decoder reads <bos> plus up to max_len - 1 generated "
            f"tokens), got {max_new_tokens}"
        )
    if src_ids.dim() != 2:
        raise ValueError(f"src_ids must have shape (batch, source length), got {tuple(src_ids.shape)}")
    return max_new_tokens


def _ids(model: nn.Module, bos_id: int | None, eos_id: int | None, pad_id: int | None) -> tuple[int, int, int]:
    config = model.config
    return (
        config.bos_id if bos_id is None else bos_id,
        config.eos_id if eos_id is None else eos_id,
        config.pad_id if pad_id is None else pad_id,
    )


class _EvalMode:
    """Inference mode for the duration of a generation call, restoring the model's training flag after."""

    def __init__(self, model: nn.Module) -> None:
        self.model, self.was_training = model, model.training
        self.no_grad = torch.no_grad()

    def __enter__(self) -> None:
        self.model.eval()
        self.no_grad.__enter__()

    def __exit__(self, *exc) -> None:
        self.no_grad.__exit__(*exc)
        self.model.train(self.was_training)


def greedy_search(
    model: nn.Module,
    src_ids: Tensor,
    src_padding_mask: Tensor | None = None,
    *,
    max_new_tokens: int | None = None,
    bos_id: int | None = None,
    eos_id: int | None = None,
    pad_id: int | None = None,
    use_cache: bool | None = None,
    min_length: int = 0,
    no_repeat_ngram_size: int = 0,
) -> GenerationOutput:
    """Greedy decoding of a :class:`~synthformer.models.Seq2SeqTransformer`: the most likely token each step.

    Args:
        model: the encoder-decoder (put in eval mode and no-grad for the call, then restored).
        src_ids: (B, S) source ids.
        src_padding_mask: (B, S) bool, True at padding; None derives it from ``config.pad_id``.
        max_new_tokens: most tokens generated per sequence (``<eos>`` included); default ``config.max_len``.
        bos_id, eos_id, pad_id: default to the model config's.
        use_cache: None: incremental decoding when the model supports it; True/False forces it.
        min_length: fewest tokens before ``<eos>`` (0: no minimum); must be < ``max_new_tokens``.
        no_repeat_ngram_size: no n-gram of this size occurs twice in an output (0: no blocking).

    Returns:
        :class:`GenerationOutput`; scores are summed log-probabilities.
    """
    max_new_tokens = _generation_setup(model, src_ids, max_new_tokens)
    check_constraints(min_length, no_repeat_ngram_size, max_new_tokens)
    bos_id, eos_id, pad_id = _ids(model, bos_id, eos_id, pad_id)
    with _EvalMode(model):
        memory, mask = model.encode(src_ids, src_padding_mask)
        stepper = Seq2SeqStepper(model, memory, mask, resolve_use_cache(model, use_cache))
        return greedy_loop(stepper, src_ids.shape[0], bos_id, eos_id, pad_id, max_new_tokens, src_ids.device,
                           min_length=min_length, no_repeat_ngram_size=no_repeat_ngram_size)


def greedy_loop(
    stepper: Callable[[Tensor], Tensor],
    batch_size: int,
    bos_id: int,
    eos_id: int,
    pad_id: int,
    max_new_tokens: int,
    device: torch.device | str = "cpu",
    *,
    min_length: int = 0,
    no_repeat_ngram_size: int = 0,
) -> GenerationOutput:
    """Greedy decoding over any stepper (prefix (N, t) -> next-token log-probs (N, V)), with the constraints of
    :func:`~synthformer.generate.constraints.apply_constraints`."""
    tokens = torch.full((batch_size, 1), bos_id, dtype=torch.long, device=device)  # (B, 1): <bos>
    finished = torch.zeros(batch_size, dtype=torch.bool, device=device)
    lengths = torch.zeros(batch_size, dtype=torch.long, device=device)
    scores = torch.zeros(batch_size, dtype=torch.float32, device=device)
    for step in range(max_new_tokens):
        logp = apply_constraints(stepper(tokens), tokens, step, eos_id, min_length, no_repeat_ngram_size)  # (B, V)
        best_logp, best = logp.max(dim=-1)  # (B,), (B,)
        nxt = best.masked_fill(finished, pad_id)  # finished rows keep emitting padding
        scores += best_logp.masked_fill(finished, 0.0)
        lengths += (~finished).long()
        tokens = torch.cat([tokens, nxt[:, None]], dim=1)  # (B, t + 1)
        finished |= nxt == eos_id
        if bool(finished.all()):
            break
    return GenerationOutput(tokens=tokens[:, 1:], lengths=lengths, scores=scores)


def beam_search(
    model: nn.Module,
    src_ids: Tensor,
    src_padding_mask: Tensor | None = None,
    *,
    beam_size: int = 4,
    alpha: float = 0.6,
    max_new_tokens: int | None = None,
    bos_id: int | None = None,
    eos_id: int | None = None,
    pad_id: int | None = None,
    use_cache: bool | None = None,
    min_length: int = 0,
    no_repeat_ngram_size: int = 0,
) -> GenerationOutput:
    """Batched beam search of a :class:`~synthformer.models.Seq2SeqTransformer` with the GNMT length penalty.

    Defaults are the paper's: ``beam_size=4``, ``alpha=0.6``. See the module docstring for the algorithm;
    ``beam_size=1`` returns exactly what :func:`greedy_search` returns.

    Args:
        model: the encoder-decoder (put in eval mode and no-grad for the call, then restored).
        src_ids: (B, S) source ids.
        src_padding_mask: (B, S) bool, True at padding; None derives it from ``config.pad_id``.
        beam_size: K >= 1.
        alpha: length-penalty exponent >= 0 (0: rank by log-probability alone).
        max_new_tokens: most tokens per hypothesis (``<eos>`` included); default ``config.max_len``.
        bos_id, eos_id, pad_id: default to the model config's.
        use_cache: None: incremental decoding when the model supports it; True/False forces it.
        min_length: fewest tokens before ``<eos>`` (0: no minimum); must be < ``max_new_tokens``.
        no_repeat_ngram_size: no n-gram of this size occurs twice in a hypothesis (0: no blocking).

    Returns:
        :class:`GenerationOutput` with the best hypothesis per source; scores are length-normalized.
    """
    if not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"beam_size must be a positive integer, got {beam_size!r}")
    if alpha < 0:
        raise ValueError(f"alpha (length penalty exponent) must be >= 0, got {alpha!r}")
    max_new_tokens = _generation_setup(model, src_ids, max_new_tokens)
    check_constraints(min_length, no_repeat_ngram_size, max_new_tokens)
    bos_id, eos_id, pad_id = _ids(model, bos_id, eos_id, pad_id)
    batch = src_ids.shape[0]
    with _EvalMode(model):
        memory, mask = model.encode(src_ids, src_padding_mask)
        stepper = Seq2SeqStepper(model, memory, mask, resolve_use_cache(model, use_cache))
        # K copies of each source, beams of a sentence adjacent: row b*K + k
        stepper.select(torch.arange(batch, device=src_ids.device).repeat_interleave(beam_size))
        return beam_search_loop(
            stepper, batch, bos_id, eos_id, pad_id, beam_size, alpha, max_new_tokens, src_ids.device,
            min_length=min_length, no_repeat_ngram_size=no_repeat_ngram_size,
        )


def beam_search_loop(
    stepper: Stepper,
    batch_size: int,
    bos_id: int,
    eos_id: int,
    pad_id: int,
    beam_size: int,
    alpha: float,
    max_new_tokens: int,
    device: torch.device | str = "cpu",
    *,
    min_length: int = 0,
    no_repeat_ngram_size: int = 0,
) -> GenerationOutput:
    """Beam search over any stepper whose rows are already laid out as ``batch_size * beam_size`` beams
    (row ``b * K + k`` is beam k of sentence b). See the module docstring for the algorithm."""
    B, K = batch_size, beam_size
    tokens = torch.full((B * K, 1), bos_id, dtype=torch.long, device=device)  # (B*K, 1): <bos>
    # all beams start identical: only beam 0 may expand at the first step, or the K beams would be copies
    scores = torch.full((B, K), float("-inf"), device=device)
    scores[:, 0] = 0.0
    finished: list[list[tuple[float, float, list[int]]]] = [[] for _ in range(B)]  # (normalized, logp, tokens)
    done = [False] * B
    rank = torch.arange(2 * K, device=device)
    for step in range(max_new_tokens):
        logp = apply_constraints(stepper(tokens), tokens, step, eos_id, min_length, no_repeat_ngram_size)  # (B*K, V)
        vocab = logp.shape[-1]
        cand = (scores[:, :, None] + logp.view(B, K, vocab)).view(B, K * vocab)  # (B, K*V) cumulative log-probs
        n_cand = min(2 * K, K * vocab)
        top_scores, top_idx = cand.topk(n_cand, dim=1)  # (B, 2K), best first
        top_beam, top_tok = top_idx // vocab, top_idx % vocab  # (B, 2K) each
        is_eos = top_tok == eos_id
        length = step + 1
        penalty = float(gnmt_length_penalty(length, alpha))
        # finish the <eos> candidates that rank among the first K (Python lists: a handful per step)
        for b, r in (is_eos[:, :K] & torch.isfinite(top_scores[:, :K])).nonzero().tolist():
            if done[b]:
                continue
            prefix = tokens[b * K + int(top_beam[b, r]), 1:].tolist()
            s = float(top_scores[b, r])
            finished[b].append((s / penalty, s, prefix + [eos_id]))
        # the K best candidates that are not <eos> continue, in rank order
        order = (is_eos.long() * n_cand + rank[:n_cand]).argsort(dim=1)[:, :K]  # (B, K): non-eos first
        scores = top_scores.gather(1, order)  # (B, K)
        beam = top_beam.gather(1, order)  # (B, K) parent beam within the sentence
        tok = top_tok.gather(1, order)  # (B, K)
        rows = (torch.arange(B, device=device)[:, None] * K + beam).view(-1)  # (B*K,) parent rows
        tokens = torch.cat([tokens.index_select(0, rows), tok.view(-1, 1)], dim=1)  # (B*K, t + 1)
        for b in range(B):
            done[b] = done[b] or len(finished[b]) >= K
        if all(done):
            break
        stepper.select(rows)
    else:
        # max_new_tokens reached: the live beams of open sentences end here, without <eos>
        penalty = float(gnmt_length_penalty(max_new_tokens, alpha))
        for b in range(B):
            if done[b]:
                continue
            for k in range(K):
                s = float(scores[b, k])
                if s > float("-inf"):
                    finished[b].append((s / penalty, s, tokens[b * K + k, 1:].tolist()))
    best = [max(hyps, key=lambda h: h[0]) for hyps in finished]
    width = max(len(h[2]) for h in best)
    out = torch.full((B, width), pad_id, dtype=torch.long, device=device)
    for b, (_, _, seq) in enumerate(best):
        out[b, : len(seq)] = torch.tensor(seq, dtype=torch.long, device=device)
    return GenerationOutput(
        tokens=out,
        lengths=torch.tensor([len(h[2]) for h in best], dtype=torch.long, device=device),
        scores=torch.tensor([h[0] for h in best], dtype=torch.float32, device=device),
    )
