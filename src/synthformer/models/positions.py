"""Positions of left-padded rows: Hugging Face's ``position_ids`` convention for the decoder-only models.

A batch of prompts of different lengths is left-padded for generation, so that every row's next token sits in
the same (last) column. A row's tokens then sit further right than their positions: a token's position is the
number of real tokens before it in its row (``cumsum(attention_mask) - 1``, padding at 0), which is what
``transformers`` passes as ``position_ids``. The embeddings and every kind whose logits read positions (R, Fix,
FR, the length axis of D, FD and the appendix kinds, their mixtures) index by these positions, so a padded row
computes exactly what it computes alone.

When the positions equal the columns at every real token (no left padding), the models drop them (None) and
keep the fast paths, which assume position = column.

The encoders (a classifier's, a dual encoder's, an encoder-decoder's) take another route to the same rule: they
move each row's real tokens to the front (:func:`real_first`), so that every token's column *is* its position and
the row is exactly the right-padded one; they then run unchanged, fast paths included, whatever reads the columns
(R's table, D's columns, the convolutions' windows, Linformer's length projection, a mixer of one's own).
"""

from __future__ import annotations

import torch
from torch import Tensor

from synthformer.common import positions_from_padding

__all__ = ["extend_positions", "plain_positions", "positions_from_padding", "put_columns", "real_first",
           "step_positions", "take_columns"]


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
    None; ``padding_mask`` (B, start + t): every column so far. Missing positions come from the padding mask when
    given (the real tokens before each column), else, after left-padded steps, continue each row's last position
    (as ``transformers`` updates ``position_ids`` between generation steps). Positions equal to the columns of a
    plain cache are dropped.
    """
    if positions is None and past is None and padding_mask is not None and padding_mask.device.type != "meta":
        positions = positions_from_padding(padding_mask)[:, start:]  # (B, t): dropped below when plain
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


def real_first(padding_mask: Tensor | None) -> Tensor | None:
    """The column order that moves each row's real tokens to its front, in their order, padding after them.

    ``padding_mask`` (B, L) bool, True at padding -> ``order`` (B, L) long, row b's column ``k`` taken from
    ``order[b, k]``; or None when no row has a real token after a padded one (right padding, or none: nothing
    to move), and on the ``meta`` device (shape-only runs, whose tensors hold no values to sort). The moved row is
    the right-padded row exactly, so every token's column is then its position (:func:`positions_from_padding`).
    """
    if padding_mask is None or padding_mask.device.type == "meta":
        return None
    if bool((~padding_mask[:, :-1] | padding_mask[:, 1:]).all()):  # padding is never followed by a real token
        return None
    # a stable sort of 0 (real) before 1 (padding) keeps the real tokens' order
    return torch.sort(padding_mask.to(torch.uint8), dim=1, stable=True).indices  # (B, L)


def take_columns(x: Tensor, order: Tensor) -> Tensor:
    """``x`` (B, L) or (B, L, d) with its columns in ``order`` (B, L) (from :func:`real_first`): same shape."""
    index = order if x.dim() == 2 else order[..., None].expand(-1, -1, x.shape[-1])  # (B, L) or (B, L, d)
    return x.gather(1, index)


def put_columns(x: Tensor, order: Tensor) -> Tensor:
    """The inverse of :func:`take_columns`: column k of ``x`` (B, L, d) goes back to column ``order[b, k]``."""
    index = order[..., None].expand(-1, -1, x.shape[-1])  # (B, L, d)
    return torch.zeros_like(x).scatter(1, index, x)  # out-of-place: the gradient reaches x
