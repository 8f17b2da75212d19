"""Torch datasets and collate functions producing the batch keys of ``docs/CONTRACTS.md``.

=====================  =====================================================================
model                  batch (B = batch, L/S/T = longest sequence of the batch)
=====================  =====================================================================
language model         ``input_ids`` (B, L) long, ``labels`` (B, L) long: the next token, -100 at
                       padding
sequence-to-sequence   ``src_ids`` (B, S) long, ``src_padding_mask`` (B, S) bool (True at padding),
                       ``tgt_ids`` (B, T) long: ``<bos> y1 .. yn`` (decoder input),
                       ``labels`` (B, T) long: ``y1 .. yn <eos>``, -100 at padding
classifier             ``input_ids`` (B, L) long, ``padding_mask`` (B, L) bool (True at padding),
                       ``labels`` (B,) long: class index in the label set
=====================  =====================================================================

Token ids are padded with the tokenizer's ``pad_id``; every collate pads to the longest sequence in
the batch. Each dataset has a ``collate`` method to pass as ``collate_fn``, and the seq2seq and
classification datasets a ``lengths`` list for :class:`BucketBatchSampler`.

Sequences longer than the model allows follow ``overflow``:

* ``"truncate"`` (default; ``None`` means the same): cut, keeping ``<bos>``/``<eos>`` framing (the text is
  shortened, the special tokens stay);
* ``"skip"``: drop the example;
* ``"error"``: raise ``ValueError`` naming the example.

Truncated and skipped examples are counted in the dataset's ``length_report`` and logged as a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset

from synthformer.common import IGNORE_INDEX
from synthformer.data.sampling import BucketBatchSampler
from synthformer.data.tokenization import Tokenizer

__all__ = [
    "IGNORE_INDEX",
    "OVERFLOW_POLICIES",
    "BucketBatchSampler",
    "ClassificationCollator",
    "ClassificationDataset",
    "LMBlockDataset",
    "LengthReport",
    "Seq2SeqCollator",
    "Seq2SeqDataset",
    "build_dataloader",
    "collate_lm",
    "encode_corpus",
    "pad_sequences",
]

logger = logging.getLogger(__name__)

#: Values of the ``overflow`` argument.
OVERFLOW_POLICIES: tuple[str, ...] = ("truncate", "skip", "error")


def pad_sequences(seqs: Sequence[Tensor | Sequence[int]], pad_value: int) -> Tensor:
    """Stack 1-D sequences into a (B, L_max) long tensor, right-padded with ``pad_value``."""
    if not seqs:
        raise ValueError("cannot pad an empty batch")
    tensors = [s if isinstance(s, Tensor) else torch.tensor(s, dtype=torch.long) for s in seqs]
    longest = max(t.numel() for t in tensors)
    out = torch.full((len(tensors), longest), pad_value, dtype=torch.long)
    for i, t in enumerate(tensors):
        out[i, : t.numel()] = t
    return out


def padding_mask(seqs: Sequence[Tensor], width: int) -> Tensor:
    """(B, width) bool, True where position >= the sequence's length."""
    lengths = torch.tensor([s.numel() for s in seqs])
    return torch.arange(width).unsqueeze(0) >= lengths.unsqueeze(1)


@dataclass
class LengthReport:
    """How many examples a dataset truncated or skipped for length, of how many."""

    total: int = 0
    truncated: int = 0
    skipped: int = 0

    def log(self, what: str) -> None:
        """Warn once if anything was truncated or skipped."""
        if self.truncated or self.skipped:
            logger.warning("%s: %d of %d example(s) too long: %d truncated, %d skipped",
                           what, self.truncated + self.skipped, self.total, self.truncated, self.skipped)


def check_overflow(overflow: str | None) -> str:
    """The policy to apply (``None``: ``"truncate"``; a run config's default, see ``TaskConfig.overflow``)."""
    if overflow is None:
        return "truncate"
    if overflow not in OVERFLOW_POLICIES:
        raise ValueError(f"overflow must be one of {OVERFLOW_POLICIES}, got {overflow!r}")
    return overflow


def frame_ids(ids: list[int], bos: int | None, eos: int | None, max_len: int | None, overflow: str,
           where: str) -> tuple[list[int] | None, bool]:
    """``[bos] + ids + [eos]`` (each optional) fitted to ``max_len``.

    Returns ``(ids, truncated)``; ids is ``None`` when the example is to be skipped.
    """
    n_special = (bos is not None) + (eos is not None)
    truncated = False
    if max_len is not None and len(ids) + n_special > max_len:
        if overflow == "error":
            raise ValueError(f"{where}: {len(ids) + n_special} tokens exceed the maximum length {max_len} "
                             f"(pass overflow='truncate' or 'skip')")
        if overflow == "skip":
            return None, False
        if max_len <= n_special:
            raise ValueError(f"max length {max_len} leaves no room for text next to the special tokens")
        ids, truncated = ids[: max_len - n_special], True
    return ([bos] if bos is not None else []) + ids + ([eos] if eos is not None else []), truncated


def item_index(index: int, length: int, what: str) -> int:
    """``index`` of a dataset of ``length`` items as a position in ``[0, length)`` (negative counts from the end);
    ``IndexError`` naming ``what`` (block, piece) outside it."""
    if index < 0:
        index += length
    if not 0 <= index < length:
        raise IndexError(f"{what} {index} out of range [0, {length})")
    return index


# -- language modelling --------------------------------------------------------------------------
def encode_corpus(tokenizer: Tokenizer, text: str | bytes) -> Tensor:
    """The whole corpus as one 1-D long tensor of ids (no special tokens)."""
    return torch.tensor(tokenizer.encode(text), dtype=torch.long)  # type: ignore[arg-type]


class LMBlockDataset(Dataset[dict[str, Tensor]]):
    """Contiguous blocks of a token stream for next-token prediction.

    Block ``i`` is ``tokens[i * stride : i * stride + block_size + 1]``; its item is
    ``input_ids = block[:-1]`` and ``labels = block[1:]``, both of shape (block_size,). With the
    default ``stride = block_size`` consecutive blocks share one boundary token, so every token but the
    first is predicted exactly once; the tail shorter than a block is not used (its size is logged).

    Args:
        tokens: 1-D tensor or sequence of token ids (e.g. from :func:`encode_corpus`).
        block_size: model context length L.
        stride: step between block starts (default ``block_size``; smaller values overlap).
    """

    def __init__(self, tokens: Tensor | Sequence[int], block_size: int, stride: int | None = None) -> None:
        data = tokens if isinstance(tokens, Tensor) else torch.tensor(list(tokens), dtype=torch.long)
        if data.dim() != 1:
            raise ValueError(f"tokens must be 1-D, got shape {tuple(data.shape)}")
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
        self.stride = block_size if stride is None else stride
        if self.stride < 1:
            raise ValueError(f"stride must be >= 1, got {self.stride}")
        if data.numel() < block_size + 1:
            raise ValueError(f"{data.numel()} tokens are fewer than block_size + 1 = {block_size + 1}")
        self.tokens = data.long()
        self.block_size = block_size
        self._len = (data.numel() - block_size - 1) // self.stride + 1
        unused = data.numel() - ((self._len - 1) * self.stride + block_size + 1)
        if unused:
            logger.info("LM blocks: %d of %d tokens at the end do not fill a block and are unused",
                        unused, data.numel())

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, index: int) -> dict[str, Tensor]:
        index = item_index(index, self._len, "block")
        start = index * self.stride
        block = self.tokens[start : start + self.block_size + 1]
        return {"input_ids": block[:-1].clone(), "labels": block[1:].clone()}

    @staticmethod
    def collate(batch: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
        """See :func:`collate_lm`."""
        return collate_lm(batch)


def collate_lm(batch: Sequence[dict[str, Tensor]], pad_id: int = 0) -> dict[str, Tensor]:
    """Batch LM items: ``input_ids`` (B, L) padded with ``pad_id``, ``labels`` (B, L) padded with -100."""
    return {
        "input_ids": pad_sequences([b["input_ids"] for b in batch], pad_id),
        "labels": pad_sequences([b["labels"] for b in batch], IGNORE_INDEX),
    }


# -- sequence to sequence ------------------------------------------------------------------------
class Seq2SeqItems(Dataset[dict[str, Tensor]]):
    """Base of the encoder-decoder datasets: items stored as (source ids, ``<bos>`` + target + ``<eos>``).

    Subclasses fill ``_items`` and ``lengths`` and set ``_collator``. Item shapes: ``src_ids`` (S,);
    ``tgt_ids`` (T,) = ``<bos> y1 .. yn``; ``labels`` (T,) = ``y1 .. yn <eos>``.
    """

    _items: list[tuple[Tensor, Tensor]]
    _collator: Seq2SeqCollator

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int) -> dict[str, Tensor]:
        src, full = self._items[index]
        return {"src_ids": src, "tgt_ids": full[:-1], "labels": full[1:]}

    def collate(self, batch: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
        """See :class:`Seq2SeqCollator`."""
        return self._collator(batch)


class Seq2SeqDataset(Seq2SeqItems):
    """Tokenized (source, target) pairs for an encoder-decoder.

    Item shapes: ``src_ids`` (S,) = source ids (+ ``<eos>``, and ``<bos>`` first if ``src_add_bos``);
    ``tgt_ids`` (T,) = ``<bos> y1 .. yn``; ``labels`` (T,) = ``y1 .. yn <eos>``.

    Args:
        pairs: (source, target) text pairs (e.g. :class:`~synthformer.data.readers.TranslationPair`).
        src_tokenizer: tokenizer of the source side.
        tgt_tokenizer: of the target side (default: the source's, for a shared vocabulary).
        max_src_len: maximum S (special tokens included); ``None`` for no limit.
        max_tgt_len: maximum T (= target tokens + 1); ``None`` for no limit.
        overflow: ``"truncate"``, ``"skip"`` or ``"error"`` (see the module doc); a pair is skipped
            when either side is too long.
        src_add_bos, src_add_eos: framing of the source (default: ``<eos>`` only).
    """

    def __init__(
        self,
        pairs: Sequence[tuple[str, str]] | Sequence[Any],
        src_tokenizer: Tokenizer,
        tgt_tokenizer: Tokenizer | None = None,
        max_src_len: int | None = None,
        max_tgt_len: int | None = None,
        overflow: str | None = "truncate",
        src_add_bos: bool = False,
        src_add_eos: bool = True,
    ) -> None:
        overflow = check_overflow(overflow)
        self.src_tokenizer = src_tokenizer
        self.tgt_tokenizer = tgt_tokenizer if tgt_tokenizer is not None else src_tokenizer
        tgt_tok = self.tgt_tokenizer
        src_texts = [p[0] for p in pairs]
        tgt_texts = [p[1] for p in pairs]
        src_ids = src_tokenizer.encode_batch(src_texts)
        tgt_ids = tgt_tok.encode_batch(tgt_texts)
        self.length_report = LengthReport(total=len(src_ids))
        self._items: list[tuple[Tensor, Tensor]] = []  # (source with framing, bos + target + eos)
        self.indices: list[int] = []  # index into ``pairs`` of each kept item
        src_bos = src_tokenizer.bos_id if src_add_bos else None
        src_eos = src_tokenizer.eos_id if src_add_eos else None
        # the decoder sees T = len(y) + 1 positions; frame once as bos + y + eos and slice in __getitem__
        max_full = None if max_tgt_len is None else max_tgt_len + 1
        for i, (s, t) in enumerate(zip(src_ids, tgt_ids, strict=True)):
            s_fit, s_cut = frame_ids(s, src_bos, src_eos, max_src_len, overflow, f"pair {i} source")
            t_fit, t_cut = frame_ids(t, tgt_tok.bos_id, tgt_tok.eos_id, max_full, overflow, f"pair {i} target")
            if s_fit is None or t_fit is None:
                self.length_report.skipped += 1
                continue
            self.length_report.truncated += s_cut or t_cut
            self._items.append((torch.tensor(s_fit, dtype=torch.long), torch.tensor(t_fit, dtype=torch.long)))
            self.indices.append(i)
        self.length_report.log("seq2seq dataset")
        self.lengths: list[int] = [max(s.numel(), t.numel() - 1) for s, t in self._items]
        self._collator = Seq2SeqCollator(src_tokenizer.pad_id, tgt_tok.pad_id)


class Seq2SeqCollator:
    """Pad seq2seq items to the longest in the batch.

    Returns ``src_ids`` (B, S) padded with ``src_pad_id``; ``src_padding_mask`` (B, S) bool, True at
    padding; ``tgt_ids`` (B, T) padded with ``tgt_pad_id``; ``labels`` (B, T) padded with -100.
    """

    def __init__(self, src_pad_id: int = 0, tgt_pad_id: int = 0) -> None:
        self.src_pad_id, self.tgt_pad_id = src_pad_id, tgt_pad_id

    def __call__(self, batch: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
        src = [b["src_ids"] for b in batch]
        src_ids = pad_sequences(src, self.src_pad_id)
        return {
            "src_ids": src_ids,
            "src_padding_mask": padding_mask(src, src_ids.shape[1]),
            "tgt_ids": pad_sequences([b["tgt_ids"] for b in batch], self.tgt_pad_id),
            "labels": pad_sequences([b["labels"] for b in batch], IGNORE_INDEX),
        }


# -- classification ------------------------------------------------------------------------------
class ClassificationDataset(Dataset[dict[str, Tensor]]):
    """Tokenized labelled texts for an encoder classifier.

    Item: ``input_ids`` (L,), ``labels`` () = the label's index in ``label_set``.

    Args:
        examples: (text, label) records, e.g. :class:`~synthformer.data.readers.ClassificationExample`
            or a suite's (LRA's ListOps records); labels are compared as strings.
        tokenizer: the tokenizer.
        label_set: the classes in index order (e.g. from
            :func:`~synthformer.data.readers.build_label_set` on the training data).
        max_len: maximum L (special tokens included); ``None`` for no limit.
        overflow: ``"truncate"`` (keeps the beginning, as LRA does), ``"skip"`` or ``"error"``.
        add_bos, add_eos: frame each text with ``<bos>`` / ``<eos>``.

    Raises:
        ValueError: a label not in ``label_set`` (the message names the example index and label).
    """

    def __init__(
        self,
        examples: Sequence[tuple[str, Any]] | Sequence[Any],
        tokenizer: Tokenizer,
        label_set: Sequence[str],
        max_len: int | None = None,
        overflow: str | None = "truncate",
        add_bos: bool = False,
        add_eos: bool = False,
    ) -> None:
        overflow = check_overflow(overflow)
        self.tokenizer = tokenizer
        self.label_set = [str(x) for x in label_set]
        label_to_id = {label: i for i, label in enumerate(self.label_set)}
        if len(label_to_id) != len(self.label_set):
            raise ValueError(f"duplicate labels in label_set {self.label_set}")
        texts = [ex[0] for ex in examples]
        labels = [str(ex[1]) for ex in examples]
        for i, label in enumerate(labels):
            if label not in label_to_id:
                raise ValueError(f"example {i}: label {label!r} is not in the label set {self.label_set}")
        ids = tokenizer.encode_batch(texts)
        self.length_report = LengthReport(total=len(ids))
        self._items: list[tuple[Tensor, int]] = []
        self.indices: list[int] = []
        bos = tokenizer.bos_id if add_bos else None
        eos = tokenizer.eos_id if add_eos else None
        for i, (seq, label) in enumerate(zip(ids, labels, strict=True)):
            fitted, cut = frame_ids(seq, bos, eos, max_len, overflow, f"example {i}")
            if fitted is None:
                self.length_report.skipped += 1
                continue
            self.length_report.truncated += cut
            self._items.append((torch.tensor(fitted, dtype=torch.long), label_to_id[label]))
            self.indices.append(i)
        self.length_report.log("classification dataset")
        self.lengths: list[int] = [t.numel() for t, _ in self._items]
        self._collator = ClassificationCollator(tokenizer.pad_id)

    @property
    def num_classes(self) -> int:
        """Size of the label set."""
        return len(self.label_set)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int) -> dict[str, Tensor]:
        ids, label = self._items[index]
        return {"input_ids": ids, "labels": torch.tensor(label, dtype=torch.long)}

    def collate(self, batch: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
        """See :class:`ClassificationCollator`."""
        return self._collator(batch)


class ClassificationCollator:
    """Pad classification items: ``input_ids`` (B, L) padded with ``pad_id``, ``padding_mask`` (B, L)
    bool True at padding, ``labels`` (B,) long."""

    def __init__(self, pad_id: int = 0) -> None:
        self.pad_id = pad_id

    def __call__(self, batch: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
        seqs = [b["input_ids"] for b in batch]
        input_ids = pad_sequences(seqs, self.pad_id)
        return {
            "input_ids": input_ids,
            "padding_mask": padding_mask(seqs, input_ids.shape[1]),
            "labels": torch.stack([b["labels"].reshape(()) for b in batch]).long(),
        }


# -- batching ------------------------------------------------------------------------------------
def build_dataloader(dataset: Dataset[Any], batch_size: int, *, shuffle: bool = False, seed: int = 0,
                     bucketing: bool = False, drop_last: bool = False, num_workers: int = 0) -> DataLoader:
    """A ``DataLoader`` using the dataset's ``collate``; with ``bucketing`` (needs ``dataset.lengths``)
    batches come from a :class:`BucketBatchSampler`, otherwise from a seeded (optional) shuffle."""
    collate = getattr(dataset, "collate", None)
    if bucketing:
        lengths = getattr(dataset, "lengths", None)
        if lengths is None:
            raise ValueError(f"{type(dataset).__name__} has no 'lengths'; bucketing needs them")
        sampler = BucketBatchSampler(lengths, batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last)
        return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate, num_workers=num_workers)
    gen = torch.Generator().manual_seed(seed) if shuffle else None
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, generator=gen, drop_last=drop_last,
                      collate_fn=collate, num_workers=num_workers)
