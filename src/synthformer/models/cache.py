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

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from torch import Tensor

__all__ = ["DecoderCache", "LayerCache", "cache_nbytes", "select_batch"]


def select_batch(obj: Any, index: Tensor) -> Any:
    """``obj`` with every batch-first tensor replaced by ``tensor.index_select(0, index)``.

    Recurses into dataclasses, dicts, lists and tuples; other values (ints such as a cache's ``length``,
    None) are kept. An object with a ``reorder(index)`` method (e.g. the convolution mixers' cache) is asked to
    reorder itself. Returns new containers; the input is left unchanged.
    """
    if isinstance(obj, Tensor):
        return obj.index_select(0, index)
    reorder = getattr(obj, "reorder", None)
    if callable(reorder):
        return reorder(index)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {f.name: select_batch(getattr(obj, f.name), index) for f in dataclasses.fields(obj) if f.init}
        return dataclasses.replace(obj, **changes)
    if isinstance(obj, dict):
        return {k: select_batch(v, index) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(select_batch(v, index) for v in obj)
    return obj


def cache_nbytes(obj: Any) -> int:
    """Bytes held by the tensors of ``obj`` (recursing like :func:`select_batch`)."""
    if isinstance(obj, Tensor):
        return obj.numel() * obj.element_size()
    nbytes = getattr(obj, "nbytes", None)
    if callable(nbytes):
        return int(nbytes())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return sum(cache_nbytes(getattr(obj, f.name)) for f in dataclasses.fields(obj))
    if isinstance(obj, dict):
        return sum(cache_nbytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(cache_nbytes(v) for v in obj)
    return 0


@dataclass
class LayerCache:
    """Decoding state of one decoder layer.

    Attributes:
        self_attn: the self-attention mixer's cache (from its ``init_cache``).
        ffn: (B, kernel_size - 1, d_model) last inputs of a causal ``conv_relu`` FFN, or None for ``relu``.
        cross_k: (B, H, S, d_h) keys of the encoder memory (seq2seq with ``cross_kind="V"``), or None.
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
    """

    layers: list[LayerCache]
    length: int = 0
    memory_padding_mask: Tensor | None = field(default=None)

    @property
    def batch_size(self) -> int:
        """Number of sequences decoded in parallel (B)."""
        first = self.layers[0]
        for t in (first.ffn, first.cross_k, self.memory_padding_mask):
            if t is not None:
                return t.shape[0]
        leaves: list[Tensor] = []
        _collect(first.self_attn, leaves)
        if not leaves:
            raise ValueError("cannot tell the batch size of a cache without tensors")
        return leaves[0].shape[0]

    def select(self, index: Tensor) -> DecoderCache:
        """A cache whose sequence ``i`` is this cache's sequence ``index[i]`` (``index``: (N,) long).

        Reorders beams (``index`` a permutation within each batch element's beams) or expands a batch
        (``index = arange(B).repeat_interleave(k)``).
        """
        return select_batch(self, index)

    def nbytes(self) -> int:
        """Bytes held by the cache's tensors."""
        # field by field: cache_nbytes(self) would call this method again
        return cache_nbytes(self.layers) + cache_nbytes(self.memory_padding_mask)


def _collect(obj: Any, out: list[Tensor]) -> None:
    if isinstance(obj, Tensor):
        out.append(obj)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            _collect(getattr(obj, f.name), out)
    elif isinstance(obj, dict):
        for v in obj.values():
            _collect(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _collect(v, out)
