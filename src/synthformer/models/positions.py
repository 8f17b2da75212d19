"""Positions of left-padded rows: Hugging Face's ``position_ids`` convention for the decoder-only models.

A batch of prompts of different lengths is left-padded for generation, so that every row's next token sits in
the same (last) column. A row's tokens then sit further right than their positions: a token's position is the
number of real tokens before it in its row (``cumsum(attention_mask) - 1``, padding at 0), which is what
``transformers`` passes as ``position_ids``. The embeddings and every kind whose logits read positions (R, Fix,
FR, the length axis of D, FD and the appendix kinds, their mixtures) index by these positions, so a padded row
computes exactly what it computes alone.

When the positions equal the columns at every real token (no left padding), the models drop them (None) and
keep the fast paths, which assume position = column.
"""

from __future__ import annotations

import torch
from torch import Tensor

from synthformer.common.padding import positions_from_padding

__all__ = ["extend_positions", "plain_positions", "positions_from_padding", "step_positions"]


def plain_positions(positions: Tensor, start: int, padding_mask: Tensor | None = None) -> bool:
    """True when ``positions`` (B or 1, T) are the columns ``start .. start+T-1`` at every real token (the
    padded ones, ``padding_mask`` (B, T) True, do not count)."""
    column = torch.arange(start, start + positions.shape[-1], device=positions.device)  # (T,)
    same = positions == column  # (B, T)
    if padding_mask is not None:
        same = same | padding_mask
    return bool(same.all())


def step_positions(past: Tensor | None, positions: Tensor | None, padding_mask: Tensor | None, start: int, t: int,
                   batch: int) -> Tensor | None:
    """The positions (B, t) of a decoding step's ``t`` tokens at columns ``start ..``, or None for their columns.

    ``past`` (B, start): the cached columns' positions (None: plain); ``positions``: the caller's (B or 1, t) or
    None; ``padding_mask`` (B, start + t): every column so far. Given positions equal to the columns of a plain
    cache are dropped. After left-padded steps, missing positions come from the padding mask when given (the real
    tokens before each column), else continue each row's last position (as ``transformers`` updates
    ``position_ids`` between generation steps).
    """
    if positions is None and past is not None:
        if padding_mask is not None:
            return positions_from_padding(padding_mask)[:, start:]  # (B, t)
        return past[:, -1:] + 1 + torch.arange(t, device=past.device)  # (B, 1) + (t,) -> (B, t)
    if positions is None:
        return None
    if past is None and plain_positions(positions, start, None if padding_mask is None else padding_mask[:, start:]):
        return None
    return positions.long().expand(batch, -1)  # (1|B, t) -> (B, t)


def extend_positions(past: Tensor | None, new: Tensor | None, start: int, batch: int) -> Tensor | None:
    """The positions of every column after a decoding step: ``past`` (B, start) of the cached columns and ``new``
    (B, t) of the step's tokens (from :func:`step_positions`), either None for the plain columns; None while both
    are plain."""
    if new is None:
        return past
    if past is None:
        past = torch.arange(start, device=new.device).expand(batch, start)  # (B, start): the plain columns
    return torch.cat([past, new], dim=1)  # (B, start + t)
