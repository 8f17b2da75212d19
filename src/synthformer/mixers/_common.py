"""Validation shared by the baseline token mixers.

Every mixer of :mod:`synthformer.mixers` follows the token-mixer contract of ``docs/CONTRACTS.md``. The checks
live here so that every mixer reports a bad option, a bad shape or a too-long input with the same wording.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

__all__ = [
    "check_core_args",
    "check_input",
    "check_probability",
    "resolve_options",
]


def resolve_options(owner: str, given: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Merge the user's ``**options`` into ``defaults``, refusing names that ``defaults`` does not have.

    We take ``**options`` (the contract's constructor signature) instead of plain keyword arguments so that a
    misspelled option is reported together with the list of valid ones; nothing is swallowed silently.

    Raises:
        TypeError: if ``given`` contains a name that is not in ``defaults``.
    """
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        names = ", ".join(repr(n) for n in unknown)
        valid = ", ".join(sorted(defaults))
        plural = "s" if len(unknown) > 1 else ""
        raise TypeError(f"{owner}: unknown option{plural} {names}; valid options are: {valid}")
    return {**defaults, **given}


def _is_int(value: Any) -> bool:
    # bool is an int subclass; True as a head count is always a mistake.
    return isinstance(value, int) and not isinstance(value, bool)


def check_probability(owner: str, name: str, value: Any) -> float:
    """Return ``value`` as a float after checking ``0 <= value < 1`` (a dropout rate)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) < 1.0:
        raise ValueError(f"{owner}: {name} must be a number in [0, 1), got {value!r}")
    return float(value)


def check_core_args(owner: str, d_model: Any, n_heads: Any, max_len: Any, dropout: Any) -> None:
    """Check the four constructor arguments every token mixer shares."""
    for name, value in (("d_model", d_model), ("n_heads", n_heads), ("max_len", max_len)):
        if not _is_int(value) or value < 1:
            raise ValueError(f"{owner}: {name} must be a positive int, got {value!r}")
    if d_model % n_heads != 0:
        raise ValueError(
            f"{owner}: d_model={d_model} must be divisible by n_heads={n_heads} "
            "(each head owns d_model // n_heads channels)"
        )
    check_probability(owner, "dropout", dropout)


def check_input(
    owner: str,
    x: Any,
    d_model: int,
    max_len: int,
    key_padding_mask: Tensor | None,
    past_len: int = 0,
) -> None:
    """Check the input of a mixer's ``forward``.

    Args:
        owner: class name used in the messages.
        x: (B, L, d_model) the new positions.
        d_model: the mixer's width.
        max_len: longest sequence the mixer accepts (``past_len + L`` must not exceed it).
        key_padding_mask: None or (B, past_len + L) bool, True marks padding.
        past_len: number of positions already consumed by an incremental-decoding cache.

    Raises:
        ValueError: wrong rank, width, length, or mask shape/dtype.
    """
    if not isinstance(x, Tensor):
        raise ValueError(f"{owner}: expected x to be a tensor of shape (B, L, d_model={d_model}), got {type(x)}")
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"{owner}: expected x of shape (B, L, d_model={d_model}), got {tuple(x.shape)}")
    batch, length = x.shape[0], x.shape[1]
    if length < 1:
        raise ValueError(f"{owner}: expected at least one position, got x of shape {tuple(x.shape)}")
    total = past_len + length
    if total > max_len:
        detail = f" ({past_len} cached + {length} new)" if past_len else ""
        raise ValueError(f"{owner}: sequence length {total}{detail} exceeds max_len={max_len}")
    if key_padding_mask is None:
        return
    expected = (batch, total)
    if not isinstance(key_padding_mask, Tensor) or tuple(key_padding_mask.shape) != expected:
        got = tuple(key_padding_mask.shape) if isinstance(key_padding_mask, Tensor) else type(key_padding_mask)
        what = "(B, S + T) covering the cached and the new positions" if past_len else "(B, L)"
        raise ValueError(f"{owner}: expected key_padding_mask of shape {what} = {expected}, got {got}")
    if key_padding_mask.dtype != torch.bool:
        raise ValueError(
            f"{owner}: key_padding_mask must be a bool tensor (True marks padding), got {key_padding_mask.dtype}"
        )
