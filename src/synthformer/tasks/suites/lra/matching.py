"""Long Range Arena's Retrieval task (document matching on the ACL Anthology Network): its TSV files, and the
dataset of document pairs a dual encoder reads.

The files (``*.train.tsv``, ``*.eval.tsv``, ``*.test.tsv``; LRA's ``new_aan_pairs``) have no header and five
tab-separated columns: ``label`` (1: one paper cites the other; written as ``0``/``1`` or ``0.0``/``1.0``),
``id1``, ``id2``, ``text1``, ``text2``; fields are not quoted (LRA reads them with quoting off). LRA reads the
documents byte by byte and cuts each one at its ``max_length`` (4000 bytes).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, NamedTuple

import torch
from torch import Tensor
from torch.utils.data import Dataset

from synthformer.data import (
    DataError,
    LengthReport,
    Tokenizer,
    check_overflow,
    frame_ids,
    pad_sequences,
    padding_mask,
    read_utf8,
    split_lines,
)

__all__ = ["MatchingExample", "PairClassificationDataset", "read_matching_tsv"]

_COLUMNS = 5


class MatchingExample(NamedTuple):
    """One document pair; ``label`` is ``"0"`` or ``"1"``; ``line`` its 1-based line in the file."""

    text1: str
    text2: str
    label: str
    id1: str = ""
    id2: str = ""
    line: int | None = None


def _label(raw: str, path: str | os.PathLike[str], line: int) -> str:
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if value not in (0.0, 1.0):
        raise DataError(path, line, f"label must be 0 or 1 (LRA writes 0.0 / 1.0 too), got {raw!r}")
    return str(int(value))


def read_matching_tsv(path: str | os.PathLike[str]) -> list[MatchingExample]:
    """Read an LRA Retrieval TSV file (see the module docstring).

    Raises:
        DataError: invalid UTF-8, a line without exactly five columns, a label other than 0/1, an empty document,
            or no example at all; the message names file and line.
    """
    out: list[MatchingExample] = []
    for number, line in enumerate(split_lines(read_utf8(path)), start=1):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != _COLUMNS:
            raise DataError(path, number, f"expected {_COLUMNS} tab-separated columns (label, id1, id2, text1, "
                                          f"text2), found {len(cells)}")
        label, id1, id2, text1, text2 = cells
        if not text1 or not text2:
            raise DataError(path, number, f"empty text{1 if not text1 else 2}")
        out.append(MatchingExample(text1, text2, _label(label.strip(), path, number), id1, id2, number))
    if not out:
        raise DataError(path, None, "no examples")
    return out


class PairClassificationDataset(Dataset[dict[str, Tensor]]):
    """Tokenized text pairs with a label, for a dual encoder (each text encoded on its own).

    Item: ``input_ids_1`` (L1,), ``input_ids_2`` (L2,), ``labels`` () = the label's index in ``label_set``.
    Batch (``collate``): ``input_ids_1`` (B, L1), ``padding_mask_1`` (B, L1) bool True at padding, the same for
    ``_2``, ``labels`` (B,).

    Args:
        examples: ``(text1, text2, label)`` records (e.g. :class:`MatchingExample`).
        tokenizer: the tokenizer of both texts.
        label_set: the classes in index order.
        max_len: longest sequence of each text (special tokens included); ``None``: no limit.
        overflow: ``"truncate"`` (each text keeps its beginning, as LRA does), ``"skip"`` or ``"error"``.
        add_bos: put ``<bos>`` first in each text (the summary token of ``cls`` pooling).
    """

    def __init__(self, examples: Sequence[Any], tokenizer: Tokenizer, label_set: Sequence[str],
                 max_len: int | None = None, overflow: str | None = "truncate", add_bos: bool = False) -> None:
        overflow = check_overflow(overflow)
        self.label_set = [str(x) for x in label_set]
        index = {label: i for i, label in enumerate(self.label_set)}
        bos = tokenizer.bos_id if add_bos else None
        firsts = tokenizer.encode_batch([ex[0] for ex in examples])
        seconds = tokenizer.encode_batch([ex[1] for ex in examples])
        self.length_report = LengthReport(total=len(examples))
        self._items: list[tuple[Tensor, Tensor, int]] = []
        for i, (ex, a, b) in enumerate(zip(examples, firsts, seconds, strict=True)):
            label = str(ex[2])
            if label not in index:
                raise ValueError(f"example {i}: label {label!r} is not in the label set {self.label_set}")
            a_fit, a_cut = frame_ids(a, bos, None, max_len, overflow, f"pair {i} text1")
            b_fit, b_cut = frame_ids(b, bos, None, max_len, overflow, f"pair {i} text2")
            if a_fit is None or b_fit is None:
                self.length_report.skipped += 1
                continue
            self.length_report.truncated += a_cut or b_cut
            self._items.append((torch.tensor(a_fit, dtype=torch.long), torch.tensor(b_fit, dtype=torch.long),
                                index[label]))
        self.length_report.log("pair classification dataset")
        self.lengths: list[int] = [max(a.numel(), b.numel()) for a, b, _ in self._items]
        self.pad_id = tokenizer.pad_id

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int) -> dict[str, Tensor]:
        a, b, label = self._items[index]
        return {"input_ids_1": a, "input_ids_2": b, "labels": torch.tensor(label, dtype=torch.long)}

    def collate(self, batch: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
        """Pad each side to its longest text in the batch (see the class docstring)."""
        out: dict[str, Tensor] = {}
        for side in ("1", "2"):
            seqs = [b[f"input_ids_{side}"] for b in batch]
            ids = pad_sequences(seqs, self.pad_id)  # (B, L_side)
            out[f"input_ids_{side}"] = ids
            out[f"padding_mask_{side}"] = padding_mask(seqs, ids.shape[1])
        out["labels"] = torch.stack([b["labels"].reshape(()) for b in batch]).long()
        return out
