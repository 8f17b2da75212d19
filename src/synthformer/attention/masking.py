"""Masks and the masked softmax shared by every attention kind.

Every kind goes through the same functions here, so causal and padding masks are applied the same way
whatever synthesizes the logits (a bug of public implementations was to mask only when dot-product attention
was on).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


def check_padding_mask(key_padding_mask: Any, batch: int, keys: int, owner: str = "") -> Tensor | None:
    """Validate a key padding mask of shape (B, S), bool, True at padding; return it or None.

    Used by every token mixer (the attention shell and the baselines), so the same fault raises the same
    exception everywhere: ``TypeError`` when the mask is not a bool tensor (a fault of its type), then
    ``ValueError`` when its shape is not ``(batch, keys)``. In incremental decoding ``keys`` counts the cached
    positions and the new ones.

    Args:
        key_padding_mask: the mask to check, or None.
        batch: B, the batch size of the input.
        keys: S, the number of key positions the mask must cover.
        owner: the mixer's name, prefixed to the messages when given.
    """
    if key_padding_mask is None:
        return None
    prefix = f"{owner}: " if owner else ""
    if not isinstance(key_padding_mask, Tensor) or key_padding_mask.dtype != torch.bool:
        got = f"dtype {key_padding_mask.dtype}" if isinstance(key_padding_mask, Tensor) else type(key_padding_mask)
        raise TypeError(f"{prefix}key_padding_mask must be a bool tensor (True marks padding), got {got}")
    if tuple(key_padding_mask.shape) != (batch, keys):
        raise ValueError(
            f"{prefix}key_padding_mask must have shape (batch, keys) = ({batch}, {keys}) (keys: every position so "
            f"far, cached ones included), got {tuple(key_padding_mask.shape)}"
        )
    return key_padding_mask


def check_positions(positions: Any, key_padding_mask: Tensor | None, batch: int, keys: int) -> Tensor | None:
    """Validate the key positions of a left-padded batch; return them with padded keys at position 0, or None.

    ``positions`` (B, S) integer: the position of every key column so far (Hugging Face's ``position_ids``
    convention: a token's position counts the real tokens before it in its row). Padded keys are masked out, so
    their positions do not matter and are set to 0; every other position must satisfy ``0 <= positions[b, j] <=
    j``: left padding shifts a row's positions left of its columns, never right (so the ``j + 1`` columns a
    kind computes always cover them). ``TypeError`` for a non-integer tensor, ``ValueError`` for a wrong shape
    or an out-of-range position.
    """
    if positions is None:
        return None
    if not isinstance(positions, Tensor) or positions.dtype.is_floating_point or positions.dtype == torch.bool:
        got = f"dtype {positions.dtype}" if isinstance(positions, Tensor) else type(positions)
        raise TypeError(f"positions must be an integer tensor (batch, keys), got {got}")
    if tuple(positions.shape) != (batch, keys):
        raise ValueError(f"positions must have shape (batch, keys) = ({batch}, {keys}) (keys: every position so "
                         f"far, cached ones included), got {tuple(positions.shape)}")
    positions = positions.long()
    if key_padding_mask is not None:
        positions = positions.masked_fill(key_padding_mask, 0)  # padded keys are masked: any position will do
    column = torch.arange(keys, device=positions.device)  # (S,)
    bad = (positions < 0) | (positions > column)  # (B, S)
    if positions.device.type != "meta" and bool(bad.any()):  # meta tensors hold no values to check
        b, j = (int(i) for i in bad.nonzero()[0])
        raise ValueError(f"positions[{b}, {j}] = {int(positions[b, j])}: expected 0 <= position <= {j} (left "
                         f"padding moves a row's positions left of its columns)")
    return positions


def disallowed(
    queries: int,
    keys: int,
    start: int,
    causal: bool,
    key_padding_mask: Tensor | None,
    device: torch.device,
) -> Tensor | None:
    """Boolean mask of the (query, key) pairs that may not attend, or None when every pair may.

    Queries are the positions ``start .. start + queries - 1``; keys are ``0 .. keys - 1``.

    Returns:
        (B or 1, 1, queries, keys) bool, True where attention is not allowed.
    """
    mask = None
    if causal:
        q_pos = torch.arange(start, start + queries, device=device)
        k_pos = torch.arange(keys, device=device)
        mask = (k_pos[None, :] > q_pos[:, None])[None, None]  # (1, 1, T, S)
    if key_padding_mask is not None:
        pad = key_padding_mask[:, None, None, :]  # (B, 1, 1, S)
        mask = pad if mask is None else (mask | pad)
    return mask


def any_true(t: Tensor) -> bool:
    """``bool(t.any())`` for a bool tensor; True on the ``meta`` device, whose tensors hold no values.

    Used to skip optional work (a fill that changes nothing); on ``meta`` the work is then done, which is
    correct either way and keeps shape-only runs (the device tests) free of data-dependent reads.
    """
    return True if t.device.type == "meta" else bool(t.any())


def masked_softmax(logits: Tensor, mask: Tensor | None) -> Tensor:
    """Softmax over the last (key) axis with disallowed pairs removed.

    A query row whose keys are all disallowed gets zeros, never NaN: the fill value is the dtype's most
    negative finite number (so the softmax of such a row is finite, uniform) and the row is then zeroed;
    ``-inf`` would give NaN in the forward pass and in the gradient.

    Args:
        logits: (..., T, S).
        mask: bool, broadcastable to ``logits``, True where disallowed; or None.
    """
    if mask is None:
        return torch.softmax(logits, dim=-1)
    logits = logits.masked_fill(mask, torch.finfo(logits.dtype).min)
    probs = torch.softmax(logits, dim=-1)
    fully_masked = mask.all(dim=-1, keepdim=True)
    # the mask is small (B|1, 1, T, S); skipping the fill when no row is fully masked (causal layers without
    # padding) saves a pass over the L x L probabilities
    return probs.masked_fill(fully_masked, 0.0) if any_true(fully_masked) else probs
