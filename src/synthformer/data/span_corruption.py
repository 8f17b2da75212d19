"""T5's span-corruption objective: lengths, noise masks, corrupting and restoring examples, the dataset.

Following Raffel et al. (2020, section 3.1.4 and Figure 2) and the T5 code's ``random_spans_helper`` /
``random_spans_noise_mask``:

* A stream of tokens (documents concatenated, the way T5 packs its inputs) is cut into pieces of
  ``tokens_length`` tokens, chosen by :func:`t5_lengths` so that the corrupted input is exactly
  ``inputs_length`` tokens including ``<eos>`` (512 -> 568 raw tokens, 114 target tokens).
* In each piece ``round(length * noise_density)`` tokens are noise, in ``round(noise / mean_span_length)``
  spans. The noise tokens and the other tokens are each cut into that many non-empty segments uniformly at
  random, and the segments interleave, a non-noise segment first (:func:`random_spans_noise_mask`). Masks are
  drawn when an example is read, from ``np.random.default_rng(noise_key(seed, salt, index, epoch))``:
  ``[seed, salt, index]`` in epoch 0 (the key every run before fresh noise used, so epoch 0 keeps its numbers) and
  ``[seed, salt, index, epoch]`` after it. So, as in T5, each pass over the data sees new noise, while an example
  gets the same spans in every run and after a resume (the trainer tells the dataset the epoch,
  :meth:`SpanCorruptionDataset.set_epoch`).
* The input keeps the non-noise tokens and replaces each noise span by one sentinel (``<extra_id_0>``,
  ``<extra_id_1>``, ... in order); the target is each sentinel followed by the span it hid, then a **closing
  sentinel**, as in the paper's Figure 2 (``<X> for inviting <Y> last <Z>``). T5's code leaves the closing
  sentinel out, so its 114 target tokens (spans + one sentinel per span + ``<eos>``) are 115 here; the decoder
  sees ``<bos>`` + target, and ``labels`` are target + ``<eos>``.

:func:`restore` inverts :func:`corrupt` exactly, which the tests use to check that no token is lost or moved.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset

from synthformer.data.batching import Seq2SeqCollator, item_index

__all__ = ["ArrayStream", "SpanCorruptionDataset", "SpanStats", "TokenSlices", "corrupt", "corrupt_arrays", "noise_key",
           "random_spans_noise_mask", "restore", "t5_lengths"]

logger = logging.getLogger(__name__)


def _counts(length: int, noise_density: float, mean_noise_span_length: float) -> tuple[int, int]:
    """(noise tokens, noise spans) of a piece of ``length`` tokens, as T5 rounds them, clamped as its mask code
    clamps them: at least one noise and one kept token, at least one span (the clamps bind only for pieces of
    fewer than about 10 tokens, where T5's length helper and its mask disagree; here both use these counts)."""
    num_noise = min(max(int(round(length * noise_density)), 1), length - 1)
    num_spans = min(max(int(round(num_noise / mean_noise_span_length)), 1), num_noise, length - num_noise)
    return num_noise, num_spans


def t5_lengths(inputs_length: int, noise_density: float = 0.15,
               mean_noise_span_length: float = 3.0) -> tuple[int, int]:
    """T5's ``random_spans_helper``: the raw piece length whose corruption fills ``inputs_length`` tokens
    (non-noise tokens + one sentinel per span + ``<eos>``), and the target length T5 computes for it (noise
    tokens + one sentinel per span + ``<eos>``; add one for our closing sentinel).

    >>> t5_lengths(512)
    (568, 114)
    """
    if inputs_length < 3:  # two raw tokens (one kept, one noise) become kept + sentinel + <eos>
        raise ValueError(f"inputs_length must be at least 3, got {inputs_length}")

    def lengths(tokens_length: int) -> tuple[int, int]:
        num_noise, num_spans = _counts(tokens_length, noise_density, mean_noise_span_length)
        return tokens_length - num_noise + num_spans + 1, num_noise + num_spans + 1

    tokens_length = inputs_length - 1
    while lengths(tokens_length + 1)[0] <= inputs_length:
        tokens_length += 1
    targets_length = lengths(tokens_length)[1]
    if noise_density == 0.5 and targets_length > inputs_length:  # T5's adjustment for the 50% setting
        tokens_length -= 1
        targets_length -= 1
    return tokens_length, targets_length


def _segment(num_items: int, num_segments: int, rng: np.random.Generator) -> np.ndarray:
    """Lengths of ``num_segments`` non-empty segments that add up to ``num_items``, uniformly at random."""
    # choose the num_segments - 1 cut points among the num_items - 1 gaps
    starts = np.zeros(num_items, dtype=bool)
    starts[1 + rng.choice(num_items - 1, num_segments - 1, replace=False)] = True
    starts[0] = True
    segment_id = np.cumsum(starts) - 1  # (num_items,) index of each item's segment
    return np.bincount(segment_id, minlength=num_segments)


def random_spans_noise_mask(length: int, noise_density: float, mean_noise_span_length: float,
                            rng: np.random.Generator) -> np.ndarray:
    """A boolean mask of ``length`` tokens, True on the noise (see the module docstring).

    At least one token is noise and at least one is not; there is at least one span.
    """
    if length < 2:
        raise ValueError(f"cannot corrupt a piece of {length} token(s): need at least 2")
    num_noise, num_spans = _counts(length, noise_density, mean_noise_span_length)
    noise_lengths = _segment(num_noise, num_spans, rng)
    keep_lengths = _segment(length - num_noise, num_spans, rng)
    interleaved = np.stack([keep_lengths, noise_lengths], axis=1).reshape(-1)  # (2 * spans,) keep, noise, ...
    is_noise = np.tile([False, True], num_spans)
    return np.repeat(is_noise, interleaved)


def corrupt(tokens: Sequence[int], mask: Sequence[bool] | np.ndarray,
            sentinel_ids: Sequence[int]) -> tuple[list[int], list[int]]:
    """(input, target) of one piece: noise spans -> one sentinel each in the input; the target is each sentinel
    followed by its span, then a closing sentinel. No ``<eos>`` is added here.

    Raises:
        ValueError: more spans than ``len(sentinel_ids) - 1``, or mismatched lengths.
    """
    if len(tokens) != len(mask):
        raise ValueError(f"tokens ({len(tokens)}) and mask ({len(mask)}) differ in length")
    inputs: list[int] = []
    targets: list[int] = []
    span = -1
    previous = False
    for token, noise in zip(tokens, mask, strict=True):
        if noise and not previous:
            span += 1
            if span + 1 >= len(sentinel_ids):
                raise ValueError(f"the piece has more than {len(sentinel_ids) - 1} noise spans; give the tokenizer "
                                 "more sentinels (task.options.num_sentinels)")
            inputs.append(sentinel_ids[span])
            targets.append(sentinel_ids[span])
        (targets if noise else inputs).append(int(token))
        previous = bool(noise)
    targets.append(sentinel_ids[span + 1])
    return inputs, targets


def corrupt_arrays(tokens: np.ndarray, mask: np.ndarray, sentinel_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`corrupt` on numpy arrays, without a Python loop over the tokens (what the datasets call for each
    example they read; the tests check it equals :func:`corrupt`). ``tokens`` (L,) int64, ``mask`` (L,) bool,
    ``sentinel_ids`` (S,) int64; returns int64 arrays."""
    starts = mask & ~np.concatenate([[False], mask[:-1]])  # (L,) the first token of each noise span
    num_spans = int(starts.sum())
    if num_spans + 1 > len(sentinel_ids):
        raise ValueError(f"the piece has more than {len(sentinel_ids) - 1} noise spans; give the tokenizer "
                         "more sentinels (task.options.num_sentinels)")
    span_of = np.cumsum(starts) - 1  # (L,) the span of each noise token
    keep = ~mask | starts  # in the input: kept tokens, and one sentinel where each span starts
    inputs = np.where(starts, sentinel_ids[span_of], tokens)[keep]
    noise = np.flatnonzero(mask)
    targets = np.insert(tokens[noise], np.flatnonzero(starts[noise]), sentinel_ids[:num_spans])
    return inputs.astype(np.int64), np.append(targets, sentinel_ids[num_spans]).astype(np.int64)


def restore(inputs: Sequence[int], targets: Sequence[int], sentinel_ids: Sequence[int]) -> list[int]:
    """The original piece from a :func:`corrupt` pair (each input sentinel replaced by the target's span)."""
    sentinels = set(sentinel_ids)
    spans: dict[int, list[int]] = {}
    current: int | None = None
    for token in targets:
        if token in sentinels:
            current = token
            spans[current] = []
        elif current is not None:
            spans[current].append(token)
    out: list[int] = []
    for token in inputs:
        out += spans.get(token, []) if token in sentinels else [token]
    return out


@dataclass
class SpanStats:
    """The corruption actually produced: counts over the examples of a dataset."""

    tokens: int = 0
    noise_tokens: int = 0
    spans: int = 0

    @property
    def noise_density(self) -> float:
        """Measured fraction of noise tokens (nominal: ``noise_density``)."""
        return self.noise_tokens / max(self.tokens, 1)

    @property
    def mean_span_length(self) -> float:
        """Measured mean length of a noise span (nominal: ``mean_noise_span_length``)."""
        return self.noise_tokens / max(self.spans, 1)


def noise_key(seed: int, salt: int, index: int, epoch: int = 0) -> list[int]:
    """The seed of example ``index``'s noise mask in ``epoch`` (see the module docstring)."""
    return [seed, salt, index] if epoch == 0 else [seed, salt, index, epoch]


class TokenSlices(Protocol):
    """A token stream read by position: the prepared corpus's ``TokenStream``, or :class:`ArrayStream`."""

    def __len__(self) -> int: ...

    def slice(self, start: int, stop: int) -> np.ndarray: ...


class ArrayStream:
    """A token stream held in memory, read as the prepared corpus's ``TokenStream`` is."""

    def __init__(self, tokens: np.ndarray) -> None:
        self.tokens = tokens

    def __len__(self) -> int:
        return len(self.tokens)

    def slice(self, start: int, stop: int) -> np.ndarray:
        return self.tokens[start:stop]


class SpanCorruptionDataset(Dataset[dict[str, Tensor]]):
    """Span-corrupted pieces of a token stream, for an encoder-decoder; each piece corrupted when it is read.

    Item shapes: ``src_ids`` (S,) = corrupted input + ``<eos>``, S <= ``inputs_length``; ``tgt_ids`` (T,) =
    ``<bos>`` + target; ``labels`` (T,) = target + ``<eos>``, T <= targets length + 1 (the closing sentinel).
    Every piece but the last has ``tokens_length`` raw tokens; the last, shorter one is kept when it has at
    least 2 tokens. The noise changes with the epoch (:meth:`set_epoch`); the lengths and :attr:`stats` do not
    (a piece's noise and span counts depend on its length only).

    Args:
        tokens: the split's token stream (documents concatenated): ids in memory, or a stream read by position
            (the prepared corpus's memory-mapped ``TokenStream``: then nothing is held per example, and
            ``lazy_order`` asks the trainer for its O(1)-memory order).
        inputs_length: the encoder length (T5: 512).
        sentinel_ids: the tokenizer's sentinel ids, sentinel 0 first.
        bos_id, eos_id, pad_id: the tokenizer's special ids.
        noise_density, mean_noise_span_length: T5's 0.15 and 3.
        seed: with ``salt`` (one per split), the example index and the epoch, seeds each example's mask.
    """

    def __init__(self, tokens: Sequence[int] | Tensor | np.ndarray | TokenSlices, inputs_length: int,
                 sentinel_ids: Sequence[int], *, bos_id: int, eos_id: int, pad_id: int, noise_density: float = 0.15,
                 mean_noise_span_length: float = 3.0, seed: int = 0, salt: int = 0) -> None:
        if not 0.0 < noise_density < 1.0:
            raise ValueError(f"noise_density must be in (0, 1), got {noise_density}")
        if mean_noise_span_length < 1.0:
            raise ValueError(f"mean_noise_span_length must be at least 1, got {mean_noise_span_length}")
        self.lazy_order = hasattr(tokens, "slice")
        if self.lazy_order:
            self.stream: Any = tokens
        else:
            ids = tokens.tolist() if isinstance(tokens, Tensor) else tokens
            self.stream = ArrayStream(np.asarray(ids, dtype=np.int64))
        self.tokens_length, targets_length = t5_lengths(inputs_length, noise_density, mean_noise_span_length)
        self.inputs_length = inputs_length
        self.targets_length = targets_length + 1  # + the closing sentinel
        self.sentinel_ids = list(sentinel_ids)
        self._sentinels = np.asarray(self.sentinel_ids, dtype=np.int64)
        self.bos_id, self.eos_id = bos_id, eos_id
        self.noise_density, self.mean_noise_span_length = noise_density, mean_noise_span_length
        self.seed, self.salt = seed, salt
        self.epoch = 0
        full, rest = divmod(len(self.stream), self.tokens_length)
        self._len = full + (rest >= 2)  # a last piece of one token cannot be corrupted
        self._last = rest if rest >= 2 else self.tokens_length
        self.stats = SpanStats()
        for length, count in ((self.tokens_length, self._len - 1), (self._last, 1)):
            if self._len and count:
                noise, spans = _counts(length, noise_density, mean_noise_span_length)
                self.stats.tokens += count * length
                self.stats.noise_tokens += count * noise
                self.stats.spans += count * spans
        if not self.lazy_order:  # for BucketBatchSampler; a streamed corpus is not bucketed
            self.lengths: list[int] = [self._item_length(i) for i in range(self._len)]
        self._collator = Seq2SeqCollator(pad_id, pad_id)

    def _piece_length(self, index: int) -> int:
        return self._last if index == self._len - 1 else self.tokens_length

    def _item_length(self, index: int) -> int:
        """max(input + eos, bos + target) of piece ``index``, from its counts alone."""
        length = self._piece_length(index)
        noise, spans = _counts(length, self.noise_density, self.mean_noise_span_length)
        return max(length - noise + spans + 1, noise + spans + 2)

    def set_epoch(self, epoch: int) -> None:
        """Draw the noise of ``epoch`` from now on (the trainer calls it before each epoch)."""
        self.epoch = epoch

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, index: int) -> dict[str, Tensor]:
        index = item_index(index, self._len, "piece")
        start = index * self.tokens_length
        piece = np.asarray(self.stream.slice(start, start + self._piece_length(index)), dtype=np.int64)
        rng = np.random.default_rng(noise_key(self.seed, self.salt, index, self.epoch))
        mask = random_spans_noise_mask(len(piece), self.noise_density, self.mean_noise_span_length, rng)
        inputs, targets = corrupt_arrays(piece, mask, self._sentinels)
        full = torch.from_numpy(np.concatenate([[self.bos_id], targets, [self.eos_id]]).astype(np.int64))
        src = torch.from_numpy(np.append(inputs, self.eos_id).astype(np.int64))
        return {"src_ids": src, "tgt_ids": full[:-1], "labels": full[1:]}

    def collate(self, batch: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
        """See :class:`~synthformer.data.batching.Seq2SeqCollator`."""
        return self._collator(batch)
