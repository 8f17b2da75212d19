"""``text_to_text`` from a prepared corpus: the mixture drawn from its ``train.<task>`` splits, the dev sets from its
``valid.<group>`` splits (``synthformer prepare`` writes one split per task and dev set, the ``pairs`` layout).

The gold labels GLUE scoring needs come from the stored targets (the verbalized labels, decoded): the class index of
the label text, and for STS-B the target's score, which the verbalizer rounded to 0.2 (T5 scored STS-B against
these rounded targets too; the in-memory path scores against the unrounded gold scores). Only the dev sets get one
Python object per example (they are small); the training split holds nothing per example. MultiRC, ReCoRD, WSC and
AX-g are scored on more than their targets (groups, gold answers, labels): their dev sets are read again from the
task's source, which must still be there and hold what was prepared (checked by its sha256: the one source file a
prepared run reads).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from synthformer.common import ConfigError
from synthformer.data import DataError, MixtureDataset, MixtureSchedule, PairsDataset, sha256_file

from ...prepared.preparation import pairs_dataset
from .metrics import glue_task_from_config
from .table import TextToTextExample

if TYPE_CHECKING:
    from synthformer.data import Tokenizer

    from ...run.config import RunConfig

__all__ = ["prepared_dev_sets", "prepared_mixture"]


def prepared_mixture(run: RunConfig, corpus: Any, tasks: list[str], tokenizer: Tokenizer) -> MixtureDataset:
    """The training mixture over the corpus's ``train.<task>`` splits (T5's capped rates, drawn per epoch)."""
    base = pairs_dataset(run, [corpus.split(f"train.{name}") for name in tasks], tokenizer)
    # each task's examples are contiguous in ``base`` (kept positions are sorted): a range each, nothing per example
    kept = base.kept
    members = []
    for m in range(len(tasks)):
        lo, hi = int(base.starts[m]), int(base.starts[m + 1])
        if kept is not None:
            lo, hi = int(np.searchsorted(kept, lo)), int(np.searchsorted(kept, hi))
        members.append(range(lo, hi))
    empty = [name for name, m in zip(tasks, members, strict=True) if len(m) == 0]
    if empty:
        raise ConfigError(f"task.max_len: no training example of {', '.join(empty)} is left after the length limits "
                          "(task.overflow: skip); raise the limits or drop the task")
    schedule = MixtureSchedule([len(m) for m in members], int(run.task.task_options["mixing_cap"]),
                               seed=run.train.seed, lazy=True)
    return MixtureDataset(base, members, schedule)


def _check_record_source(corpus: Any, split: str, task: str) -> None:
    """The one place a prepared run reads a source: ``task``'s dev file, whose records (groups, answers, labels) its
    score needs. Gone: a one-line error naming it; another content than at the prepare (its sha256, read: dev files
    are small): an error too, since the gold records would not be those of the stored examples. A file copied
    without its modification time, with the same content, is fine."""
    entries = [e for e in corpus.manifest.get("sources", {}).get(split, []) if e.get("size") is not None]
    if not entries:
        return  # not prepared from files (a data set): the caller says so
    path, recorded = Path(entries[0]["path"]), entries[0].get("sha256")
    why = f"scoring {task} from the prepared corpus {corpus.path} reads its dev records (more than the stored targets)"
    if not path.is_file():
        raise DataError(path, None, f"gone since prepare: {why} from this file; put it back, or prepare the corpus "
                                    "again from where it is now")
    if recorded and sha256_file(path) != recorded:
        raise DataError(path, None, f"content changed since prepare (sha256): {why}, which would no longer be those "
                                    "of the stored examples; restore it, or prepare the corpus again")


def prepared_dev_sets(run: RunConfig, corpus: Any, split: str, groups: list[tuple[str, str]],
                      tokenizer: Tokenizer, records: Callable[[str, str], list[Any]]) -> PairsDataset:
    """The dev sets ``groups`` (``(group, task)``) of ``split``, with ``raw_examples`` and ``groups`` (one per stored
    example) for GLUE scoring. ``records(group, task)`` reads a dev set again from its source, for the tasks whose
    scoring needs more than the stored target (MultiRC's question groups, ReCoRD's answers, WSC's labels, AX-g's
    pairs); their sources must be the stored ones."""
    dataset = pairs_dataset(run, [corpus.split(f"{split}.{group}") for group, _ in groups], tokenizer)
    examples, names = [], []
    for k, (group, name) in enumerate(groups):
        glue_task = glue_task_from_config(name)
        start, stop = int(dataset.starts[k]), int(dataset.starts[k + 1])
        if glue_task.scored_with_records:
            _check_record_source(corpus, f"{split}.{group}", name)
            gold = records(group, name)
            if len(gold) != stop - start:
                raise ConfigError(f"task.prepared: {split}.{group} holds {stop - start} examples, its source "
                                  f"{len(gold)}: the data changed since it was prepared; prepare the corpus again")
            examples.extend(gold)
            names.extend([group] * len(gold))
            continue
        for position in range(start, stop):
            source, target = (tokenizer.decode(ids.tolist()).strip() for ids in dataset.texts(position))
            if glue_task.labels is None:
                label: int | float = float(target)
            elif target in glue_task.labels:
                label = glue_task.labels.index(target)
            else:
                raise ConfigError(f"task.prepared: {split}.{group} example {position - start}: "
                                  f"target {target!r} is no label of {name}; prepare the corpus again")
            examples.append(TextToTextExample(name, source, target, label, None))
            names.append(group)
    dataset.raw_examples = examples
    dataset.groups = names
    return dataset
