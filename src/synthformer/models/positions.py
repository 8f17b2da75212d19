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

__all__ = ["continue_positions", "extend_positions", "plain_positions", "positions_from_padding"]


def plain_positions(positions: Tensor, start: int, padding_mask: Tensor | None = None) -> bool:
    """True when ``positions`` (B or 1, T) are the columns ``start .. start+T-1`` at every real token (the
    padded ones, ``padding_mask`` (B, T) True, do not count)."""
    column = torch.arange(start, start + positions.shape[-1], device=positions.device)  # (T,)
    same = positions == column  # (B, T)
    if padding_mask is not None:
        same = same | padding_mask
    return bool(same.all())


def continue_positions(past: Tensor, t: int) -> Tensor:
    """The positions of ``t`` new tokens after the columns of ``past`` (B, S): each row continues from its last
    position, as ``transformers`` updates ``position_ids`` between generation steps. Returns (B, t)."""
    return past[:, -1:] + 1 + torch.arange(t, device=past.device)  # (B, 1) + (t,) -> (B, t)


def extend_positions(past: Tensor | None, new: Tensor | None, start: int, t: int, batch: int) -> Tensor | None:
    """The positions of every column after a decoding step of ``t`` tokens: ``past`` (B, start) of the cached
    columns and ``new`` (B, t) of the step's tokens, either None for the plain columns; None while both are plain.
    New tokens without positions after left-padded ones continue each row from its last position (as
    ``transformers`` does between generation steps)."""
    if new is None and past is None:
        return None
    if new is None:
        new = continue_positions(past, t)  # (B, t)
    if past is None:
        past = torch.arange(start, device=new.device).expand(batch, start)  # (B, start): the plain columns
    return torch.cat([past, new.long().expand(batch, -1)], dim=1)  # (B, start + T)
