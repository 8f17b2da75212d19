"""``Preparation``: all a task type says about its prepared corpus, in one object (see the class).

It is built without a task section, since whether a type can be prepared belongs to the type, not to a config (the
error for one that cannot lists those that can); its parts receive the task when they run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from synthformer.data import LAYOUTS, PairsDataset

if TYPE_CHECKING:
    from synthformer.data import PreparedCorpus, PreparedSplit, Tokenizer

    from ..run.config import RunConfig
    from ..run.task_config import TaskConfig

__all__ = ["Preparation", "Record", "Sources", "encode_fields", "pairs_dataset", "text_field"]

#: One example's texts, one per layout field (or what the type's own ``encode`` reads: dialogue's exchange texts).
Record = tuple[str, ...]
#: Prepared split -> its sources, each ``(source key, the files it reads)``.
Sources = dict[str, list[tuple[str, list[str]]]]


def text_field(task: TaskConfig) -> tuple[str, ...]:
    """The default record field: ``task.text_field``."""
    return (str(task.text_field),)


def encode_fields(tokenizer: Tokenizer, records: Sequence[Record], layout: str) -> list[list[list[int]]]:
    """The default ids: each field's text, one ``encode_batch`` per field. A document ends with ``<eos>`` (T5's
    packing: documents are read back to back); a pair is stored plain, its datasets frame it when read."""
    add_eos = layout == "documents"
    columns = [tokenizer.encode_batch([r[i] for r in records], add_eos=add_eos) for i in range(len(LAYOUTS[layout]))]
    return [[column[row] for column in columns] for row in range(len(records))]


def pairs_dataset(run: RunConfig, splits: list[PreparedSplit], tokenizer: Tokenizer) -> PairsDataset:
    """The stored pairs of ``splits``, framed when read as ``Seq2SeqDataset`` frames them, at the run's lengths."""
    task = run.task
    return PairsDataset(splits, bos_id=tokenizer.bos_id, eos_id=tokenizer.eos_id, pad_id=tokenizer.pad_id,
                        max_src_len=task.max_len, max_tgt_len=task.target_len, overflow=task.overflow)


@dataclass(frozen=True)
class Preparation:
    """How ``synthformer prepare`` stores a task type's examples and how a run reads them back.

    * ``layout``: ``"documents"`` (one text each) or ``"pairs"`` (a source and a target each): a key of
      :data:`synthformer.data.prepared.LAYOUTS`.
    * ``dataset(run, corpus, split, tokenizer)``: the dataset of ``split`` (with ``collate``), read from the
      memory-mapped shards without tokenizing, holding nothing per training example.
    * ``fields(task)``: the record fields prepare reads from JSON / CSV / parquet files and data sets, one per
      layout field.
    * ``sources(task)``: prepared split -> its sources, where they are no plain glob of ``task.train`` / ``valid`` /
      ``test`` (text_to_text: a split per task and dev set; ``parallel`` files: two files a source); None, or None
      returned: the glob per split.
    * ``examples(task, source)``: ``(position, record)`` of each example of one source (a file, or a key of
      ``sources``): the texts the in-memory path builds for it; the position (its line) decides the held-out split.
      Prepare reads documents itself; pairs and a type's own sources come from here.
    * ``encode(tokenizer, records, layout)``: the ids stored for each record, one list per layout field; a type
      whose stored ids are not one text each builds them here (dialogue: the speaker separators' ids inline).
    """

    layout: str
    dataset: Callable[[RunConfig, PreparedCorpus, str, Tokenizer], Any]
    fields: Callable[[TaskConfig], tuple[str, ...]] = text_field
    sources: Callable[[TaskConfig], Sources | None] | None = None
    examples: Callable[[TaskConfig, str], Iterable[tuple[int, Record]]] | None = None
    encode: Callable[[Tokenizer, Sequence[Record], str], list[list[list[int]]]] = encode_fields
