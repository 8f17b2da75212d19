"""Sampling from a decoder-only language model: temperature, top-k, top-p (nucleus), a seeded generator.

Prompts may differ in length. By default every position is produced in lock-step over the batch: the shortest
prompt is fed in one chunk, then at each position a sequence still inside its prompt is *forced* to its prompt
token, the others get a sampled one, so positions are the columns. With ``left_pad=True`` the prompts are
left-padded instead (Hugging Face's batched generation): the whole padded prompt is fed in one chunk and every row
gets a new token at every step, each token at its position within its row (the model takes the padding and the
positions, see :mod:`synthformer.models.positions`), so a padded row draws from the distributions it has alone.
Either way a draw is made for every row at every step, so that a seed gives the same output with and without the
cache.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from .output import GenerationOutput
from .search import _EvalMode
from .steppers import LMStepper, resolve_use_cache

__all__ = ["filter_logits", "sample"]


def filter_logits(logits: Tensor, top_k: int | None = None, top_p: float | None = None) -> Tensor:
    """Set the logits outside the top-k / the top-p nucleus to -inf (the best token always stays).

    Args:
        logits: (N, V).
        top_k: keep the k largest logits per row (None or 0: no limit).
        top_p: keep the smallest set of most likely tokens whose probability reaches ``top_p`` (None or 1.0:
            no limit).
    """
    if top_k:
        k = min(top_k, logits.shape[-1])
        kth = logits.topk(k, dim=-1).values[:, -1:]  # (N, 1) the k-th largest logit
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, order = logits.sort(dim=-1, descending=True)  # (N, V)
        cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1)  # (N, V)
        # drop a token when the tokens ranked before it already reach top_p; the first one always stays
        drop_sorted = (cum - sorted_logits.softmax(dim=-1)) >= top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)  # back to vocabulary order
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def _prompt_tensor(prompts: Tensor | Sequence[Sequence[int]], pad_id: int, device, left: bool = False
                   ) -> tuple[Tensor, Tensor]:
    """(B, P) right-padded (``left``: left-padded) prompts and their lengths (B,)."""
    if isinstance(prompts, Tensor):
        if prompts.dim() != 2 or prompts.shape[1] < 1:
            raise ValueError(f"prompts must have shape (batch, length >= 1), got {tuple(prompts.shape)}")
        lengths = torch.full((prompts.shape[0],), prompts.shape[1], dtype=torch.long, device=prompts.device)
        return prompts.long(), lengths
    seqs = [list(p) for p in prompts]
    if not seqs or any(len(s) == 0 for s in seqs):
        raise ValueError("every prompt needs at least one token (e.g. <bos>)")
    width = max(len(s) for s in seqs)
    out = torch.full((len(seqs), width), pad_id, dtype=torch.long, device=device)
    for i, s in enumerate(seqs):
        columns = slice(width - len(s), width) if left else slice(0, len(s))
        out[i, columns] = torch.tensor(s, dtype=torch.long, device=device)
    return out, torch.tensor([len(s) for s in seqs], dtype=torch.long, device=device)


def sample(
    model: nn.Module,
    prompts: Tensor | Sequence[Sequence[int]],
    *,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    eos_id: int | None = None,
    pad_id: int | None = None,
    use_cache: bool | None = None,
    left_pad: bool = False,
) -> GenerationOutput:
    """Sample continuations of ``prompts`` from a :class:`~synthformer.models.TransformerLM`.

    Args:
        model: the language model (put in eval mode and no-grad for the call, then restored).
        prompts: (B, P) ids, or a list of B id lists of any lengths >= 1 (start them with ``<bos>`` if the
            model was trained that way).
        max_new_tokens: tokens generated per sequence at most (``<eos>`` included).
        temperature: divides the logits; 0 means greedy (argmax).
        top_k, top_p: see :func:`filter_logits`.
        generator: a seeded ``torch.Generator`` for reproducible draws (on the model's device).
        eos_id: stop a sequence at this token; default ``config.eos_id``; pass -1 to never stop early.
        pad_id: fills the output after a sequence ends; default ``config.pad_id``.
        use_cache: None: incremental decoding when the model supports it; True/False forces it.
        left_pad: left-pad prompts of different lengths and feed them in one chunk (see the module docstring)
            instead of forcing them in lock-step; the same distributions, fewer steps. The draws of the
            rows differ between the two modes (a row's k-th token is drawn at another step).

    Returns:
        :class:`GenerationOutput` with the new tokens only; scores are the summed log-probabilities of the
        generated tokens under the model (before temperature and filtering).
    """
    config = model.config
    eos_id = config.eos_id if eos_id is None else eos_id
    pad_id = config.pad_id if pad_id is None else pad_id
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature!r}")
    if top_k is not None and top_k < 0:
        raise ValueError(f"top_k must be a positive integer or None, got {top_k!r}")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    device = next(model.parameters()).device
    if left_pad:
        prompt_ids, prompt_len = _prompt_tensor(prompts, pad_id, device, left=True)
        return _sample_left_padded(model, prompt_ids, prompt_len, max_new_tokens, temperature, top_k, top_p,
                                   generator, eos_id, pad_id, use_cache)
    prompt_ids, prompt_len = _prompt_tensor(prompts, pad_id, device)
    batch, width = prompt_ids.shape
    total = _check_length(model, width, max_new_tokens)  # buffer length: the longest prompt plus its continuation
    buf = torch.full((batch, total), pad_id, dtype=torch.long, device=device)  # (B, P + N)
    buf[:, :width] = prompt_ids
    end = prompt_len + max_new_tokens  # (B,) first position past each sequence's budget
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    scores = torch.zeros(batch, dtype=torch.float32, device=device)
    with _EvalMode(model):
        stepper = LMStepper(model, batch, resolve_use_cache(model, use_cache))
        for pos in range(int(prompt_len.min()), total):
            logits = stepper.logits(buf[:, :pos])  # (B, V) scores for position pos
            logp = logits.log_softmax(dim=-1)
            drawn = _draw(logits, temperature, top_k, top_p, generator)  # (B,)
            forced = pos < prompt_len  # still inside the prompt
            active = ~forced & ~finished & (pos < end)
            token = torch.where(forced, buf[:, pos], torch.where(active, drawn, torch.full_like(drawn, pad_id)))
            buf[:, pos] = token
            scores += torch.where(active, logp.gather(1, token[:, None])[:, 0], torch.zeros_like(scores))
            finished |= active & (token == eos_id)
            if pos + 1 >= width and bool((finished | (pos + 1 >= end)).all()):
                break
    # gather each sequence's new tokens: buf[i, prompt_len[i] : prompt_len[i] + n_i]
    idx = prompt_len[:, None] + torch.arange(max_new_tokens, device=device)[None, :]  # (B, N)
    new = buf.gather(1, idx.clamp(max=total - 1))  # (B, N)
    is_eos = new == eos_id
    # length: up to and including the first <eos>, else the whole budget
    first_eos = torch.where(is_eos.any(1), is_eos.float().argmax(1) + 1, torch.full_like(prompt_len, max_new_tokens))
    valid = torch.arange(max_new_tokens, device=device)[None, :] < first_eos[:, None]
    new = new.masked_fill(~valid, pad_id)
    return GenerationOutput(tokens=new, lengths=first_eos, scores=scores)


def _check_length(model: nn.Module, width: int, max_new_tokens: int) -> int:
    """The buffer length, longest prompt + ``max_new_tokens``; refuses one that would read past ``max_len``."""
    total = width + max_new_tokens
    if total - 1 > model.config.max_len:
        raise ValueError(
            f"longest prompt ({width}) + max_new_tokens ({max_new_tokens}) - 1 = {total - 1} exceeds the model's "
            f"max_len {model.config.max_len}"
        )
    return total


def _draw(logits: Tensor, temperature: float, top_k: int | None, top_p: float | None,
          generator: torch.Generator | None) -> Tensor:
    """One token per row (N,) from the logits (N, V): argmax at temperature 0, else a filtered draw."""
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = filter_logits(logits / temperature, top_k, top_p).softmax(dim=-1)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]  # (N,)


def _sample_left_padded(model: nn.Module, prompt_ids: Tensor, prompt_len: Tensor, max_new_tokens: int,
                        temperature: float, top_k: int | None, top_p: float | None,
                        generator: torch.Generator | None, eos_id: int, pad_id: int,
                        use_cache: bool | None) -> GenerationOutput:
    """:func:`sample` over left-padded prompts (B, W) of lengths (B,): every row gets a token at every step."""
    batch, width = prompt_ids.shape
    device = prompt_ids.device
    total = _check_length(model, width, max_new_tokens)
    buf = torch.full((batch, total), pad_id, dtype=torch.long, device=device)  # (B, W + N)
    buf[:, :width] = prompt_ids
    padding = torch.arange(width, device=device)[None, :] < (width - prompt_len)[:, None]  # (B, W) left padding
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    scores = torch.zeros(batch, dtype=torch.float32, device=device)
    lengths = torch.full((batch,), max_new_tokens, dtype=torch.long, device=device)
    with _EvalMode(model):
        stepper = LMStepper(model, batch, resolve_use_cache(model, use_cache), padding_mask=padding)
        for step in range(max_new_tokens):
            logits = stepper.logits(buf[:, : width + step])  # (B, V) scores of the next token
            logp = logits.log_softmax(dim=-1)
            active = ~finished
            token = torch.where(active, _draw(logits, temperature, top_k, top_p, generator), pad_id)  # (B,)
            buf[:, width + step] = token
            scores += torch.where(active, logp.gather(1, token[:, None])[:, 0], torch.zeros_like(scores))
            ends = active & (token == eos_id)
            lengths = torch.where(ends, step + 1, lengths)
            finished |= ends
            if bool(finished.all()):
                break
    return GenerationOutput(tokens=buf[:, width:], lengths=lengths, scores=scores)
