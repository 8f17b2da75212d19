"""``SynthesizerCache``: the native decoding cache behind ``transformers``' ``Cache`` interface.

``generate()`` keeps one cache object for the whole call and asks it for its length, to reorder its rows (beam
search) and to expand them (``num_return_sequences``, beams). The native :class:`~synthformer.models.DecoderCache`
already does all of this, and holds for each layer only what the layer's kind needs: values and keys for ``V``,
values only for ``R``, ``Fix``, ``FR``, ``D``, ``FD`` (the half-size cache), the last inputs of a convolution. This
class wraps it rather than storing keys and values in ``transformers``' per-layer key/value slots, which would
force keys on the kinds that have none.

The native cache is created by the model on its first forward of a ``generate()`` call (only then are the batch
size and, for an encoder-decoder, the encoder memory known); before that the cache is empty (length 0).
"""

from __future__ import annotations

import torch
from torch import Tensor
from transformers.cache_utils import Cache
from transformers.modeling_outputs import CausalLMOutputWithPast

from synthformer.models import DecoderCache

__all__ = ["CACHE_NAME", "SynthesizerCache"]

#: The name ``transformers`` gives the cache in a model's inputs, outputs and ``generate()`` kwargs: ``cache`` from
#: 5.24 on, ``past_key_values`` before. The models accept both and return the cache under this name, so that
#: ``generate()`` hands the same cache back at every step whichever version is installed.
CACHE_NAME = "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"


class SynthesizerCache(Cache):
    """A ``transformers`` ``Cache`` holding a native :class:`~synthformer.models.DecoderCache`.

    Args:
        max_len: the model's longest sequence (the native cache is preallocated to it).
        native: an existing native cache, or None to let the model create one on its first forward.
    """

    def __init__(self, max_len: int, native: DecoderCache | None = None) -> None:
        # no transformers layer objects: the native cache holds every layer's state in its own layout
        super().__init__(layers=[])
        self.max_len = max_len
        self.native = native

    # ------------------------------------------------------------------ what the model calls
    @property
    def started(self) -> bool:
        """True once the model has created the native cache (its first forward)."""
        return self.native is not None

    def start(self, native: DecoderCache) -> None:
        """Take the empty native cache the model built for this batch."""
        if self.native is not None:
            raise ValueError("this SynthesizerCache already holds a native cache; start() is called once per "
                             "generation")
        self.native = native

    # ------------------------------------------------------------------ transformers' Cache interface
    def __len__(self) -> int:
        return 0 if self.native is None else len(self.native.layers)

    def __repr__(self) -> str:
        return f"SynthesizerCache(length={self.get_seq_length()}, layers={len(self)}, bytes={self.nbytes()})"

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Positions processed so far (every layer holds the same number)."""
        return 0 if self.native is None else self.native.length

    def get_max_length(self, layer_idx: int | None = None) -> int:
        """The longest sequence the cache can hold (the model's ``max_len``)."""
        return self.max_len

    def get_mask_sizes(self, query_length: int, layer_idx: int = 0) -> tuple[int, int]:
        """(keys length, offset) as ``transformers`` defines them: every position so far plus the new ones."""
        return self.get_seq_length() + query_length, 0

    def reorder_cache(self, beam_idx: Tensor) -> None:
        """Row i continues what row ``beam_idx[i]`` was (beam search); ``beam_idx``: (N,) long."""
        if self.native is not None:
            self.native = self.native.select(beam_idx.to(self._device()))

    def batch_select_indices(self, indices: Tensor) -> None:
        """Keep the rows ``indices`` (N,) long, in that order."""
        self.reorder_cache(indices)

    def batch_repeat_interleave(self, repeats: int) -> None:
        """Repeat each row ``repeats`` times, the copies adjacent (row b*repeats + r is row b)."""
        if self.native is not None:
            index = torch.arange(self.batch_size, device=self._device()).repeat_interleave(repeats)
            self.native = self.native.select(index)

    def reset(self) -> None:
        """Forget everything: the next forward starts a new native cache."""
        self.native = None

    def crop(self, tokens_to_remove: int) -> None:
        """Not supported: the convolution kinds keep only their last inputs, so positions cannot be taken back."""
        raise NotImplementedError(
            f"SynthesizerCache cannot crop {tokens_to_remove} tokens: synthformer caches only move forward "
            f"(assisted generation and prompt-lookup decoding need a croppable cache)"
        )

    @property
    def batch_size(self) -> int:
        """Rows of the cache, or -1 before the first forward."""
        return -1 if self.native is None else self.native.batch_size

    @property
    def is_compileable(self) -> bool:
        return False

    @property
    def is_croppable(self) -> bool:
        return False

    @property
    def is_initialized(self) -> bool:
        return self.native is not None

    # ------------------------------------------------------------------ size
    def nbytes(self) -> int:
        """Bytes held by the cache's tensors (0 before the first forward)."""
        return 0 if self.native is None else self.native.nbytes()

    def bytes_per_token(self) -> float:
        """Bytes per sequence and position the cache can hold: ``nbytes / (batch * max_len)`` (the native cache is
        preallocated to ``max_len`` positions)."""
        if self.native is None:
            return 0.0
        return self.nbytes() / (self.batch_size * self.max_len)

    def _device(self) -> torch.device:
        from synthformer.common import iter_tensors

        leaf = next(iter_tensors(self.native), None)
        return leaf.device if leaf is not None else torch.device("cpu")
