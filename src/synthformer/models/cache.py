"""Decoding caches of the task models: one per decoder layer, gathered in a :class:`DecoderCache`.

A decoder layer's cache holds what its sublayers need to process only the new positions:

* ``self_attn``: the token mixer's own cache (``init_cache`` of the mixer: values and keys for ``V``, values only
  for ``R``/``D``, the last inputs of a convolution, ...);
* ``ffn``: the last ``kernel_size - 1`` inputs of a causal ``conv_relu`` feed-forward network;
* ``cross_k`` / ``cross_v``: the encoder memory's keys and values, computed once per source batch.

Beam search reorders and expands caches along the batch axis with :meth:`DecoderCache.select`, which works on any
mixer cache whose tensors are batch-first (a ``reorder(index)`` method, when the cache has one, takes precedence).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torch import Tensor

from synthformer.common import iter_tensors, map_tensors, sum_tensors, tensor_nbytes

__all__ = ["DecoderCache", "LayerCache", "cache_nbytes", "select_batch"]


def select_batch(obj: Any, index: Tensor) -> Any:
    """``obj`` with every batch-first tensor replaced by ``tensor.index_select(0, index)``.

    Recurses into dataclasses, dicts, lists and tuples; other values (ints such as a cache's ``length``,
    None) are kept. An object with a ``reorder(index)`` method (e.g. the convolution mixers' cache) is asked to
    reorder itself. Returns new containers; the input is left unchanged (see :func:`synthformer.common.map_tensors`).
    """
    return map_tensors(obj, lambda t: t.index_select(0, index), method="reorder", method_args=(index,))


def cache_nbytes(obj: Any) -> int:
    """Bytes held by the tensors of ``obj`` (recursing like :func:`select_batch`; an object with an ``nbytes()``
    method counts itself)."""
    return sum_tensors(obj, tensor_nbytes, method="nbytes")


@dataclass
class LayerCache:
    """Decoding state of one decoder layer.

    Attributes:
        self_attn: the self-attention mixer's cache (from its ``init_cache``).
        ffn: (B, kernel_size - 1, d_model) last inputs of a causal ``conv_relu`` FFN, or None for ``relu``.
        cross_k: (B, H, S, e) what the cross-attention kind needs from the encoder memory (its keys, for kinds
            with V), or None.
        cross_v: (B, H, S, d_h) values of the encoder memory (seq2seq), or None.
    """

    self_attn: Any
    ffn: Tensor | None = None
    cross_k: Tensor | None = None
    cross_v: Tensor | None = None


@dataclass
class DecoderCache:
    """Decoding state of a whole decoder.

    Attributes:
        layers: one :class:`LayerCache` per decoder layer.
        length: positions processed so far (the position of the next input token).
        memory_padding_mask: (B, S) bool, True at source padding (seq2seq), or None.
        positions: (B, length) long, the position of every column so far when the batch is left-padded (see
            :mod:`synthformer.models.positions`), or None while position = column.
    """

    layers: list[LayerCache]
    length: int = 0
    memory_padding_mask: Tensor | None = field(default=None)
    positions: Tensor | None = field(default=None)

    @property
    def batch_size(self) -> int:
        """Number of sequences decoded in parallel (B)."""
        first = self.layers[0]
        for t in (first.ffn, first.cross_k, self.memory_padding_mask):
            if t is not None:
                return t.shape[0]
        leaf = next(iter_tensors(first.self_attn), None)
        if leaf is None:
            raise ValueError("cannot tell the batch size of a cache without tensors")
        return leaf.shape[0]

    def select(self, index: Tensor) -> DecoderCache:
        """A cache whose sequence ``i`` is this cache's sequence ``index[i]`` (``index``: (N,) long).

        Reorders beams (``index`` a permutation within each batch element's beams) or expands a batch
        (``index = arange(B).repeat_interleave(k)``).
        """
        return select_batch(self, index)

    def nbytes(self) -> int:
        """Bytes held by the cache's tensors."""
        # field by field: cache_nbytes(self) would call this method again
        return cache_nbytes(self.layers) + cache_nbytes(self.memory_padding_mask) + cache_nbytes(self.positions)

