"""The positions of left-padded rows (Hugging Face's ``position_ids`` convention), for the models and the decoders.

Here, in the lowest layer, because both the models (:mod:`synthformer.models.positions`) and the native decoders
(:mod:`synthformer.generate`, which may import only this layer) derive positions from a padding mask.
"""

from __future__ import annotations

from torch import Tensor

__all__ = ["positions_from_padding"]


def positions_from_padding(padding_mask: Tensor) -> Tensor:
    """(B, L) bool, True at padding -> (B, L) long: the number of real tokens before each column (padding 0),
    ``cumsum(attention_mask) - 1`` as ``transformers`` computes ``position_ids``."""
    real = (~padding_mask).long()  # (B, L)
    return (real.cumsum(-1) - 1).clamp(min=0).masked_fill(padding_mask, 0)
