"""The data of a run that trains from a prepared corpus (``task.prepared``, written by ``synthformer prepare``).

Nothing is tokenized: the corpus's manifest is checked (format, the sizes of its files, its task type against the
run's, its tokenizer against one the run already has), its token ids against its vocabulary (a scan of a corpus of
up to :data:`~synthformer.data.prepared.reader.ID_SCAN_BYTES`; a bigger one's batches as they are read), and each
split becomes a dataset over the memory-mapped shards (the dataset of the task type's
:class:`~.preparation.Preparation`). The tokenizer is the corpus's; the model config is sized for it as for any run.
The source files are not needed: the shards carry the tokens and their checksums, so sources gone or changed since
the prepare (moved, copied without their modification times, deleted to free the disk) are one logged note, found by
``stat`` alone. (Text-to-text dev sets scored on more than their targets read their source again, and check it
there.)
"""

from __future__ import annotations

import logging
from typing import Any

from synthformer.common import ConfigError
from synthformer.data import ID_SCAN_BYTES, DataError, PreparedCorpus, Tokenizer

from ..contract import RawData, TaskData
from ..run.config import RunConfig, resolve_model_config
from ..run.lengths import check_truncation, length_reports
from ..run.spelling import check_spelling
from .preparation import Preparation
from .tokenizer import ASKED_VOCAB_SIZE

__all__ = ["open_prepared", "prepared_data", "prepared_dataset"]

logger = logging.getLogger(__name__)


def open_prepared(run: RunConfig, tokenizer: Tokenizer | None = None, *, scan_ids: bool = True) -> PreparedCorpus:
    """Open and check ``run.task.prepared`` (see the module docstring); ``tokenizer``: one the run must keep (a
    resumed run's, a pretrained run's), which must be the corpus's. ``scan_ids=False`` (a dry run, which reads no
    token) leaves the ids to the run: every check but the scan is made, from the manifest and the files' sizes.

    Raises:
        DataError: a missing or damaged corpus.
        ConfigError: a corpus of another task type, or tokenized with another tokenizer.
    """
    task = run.task
    assert task.prepared is not None
    corpus = PreparedCorpus.open(task.prepared, tokenizer)
    made_for = corpus.manifest.get("task_type")
    if made_for != task.type:
        raise ConfigError(f"task.prepared: {corpus.path} was prepared for task.type {made_for!r}, this run trains "
                          f"{task.type!r}; prepare it again with this config (synthformer prepare CONFIG --out DIR)")
    note = corpus.sources_note()  # moved, copied without their times, deleted to free the disk: not needed here
    if note:
        logger.info("note: %s", note)
    ours = corpus.tokenizer()
    base = getattr(ours, "base", ours)  # span corruption's sentinels wrap the trained tokenizer
    if task.tokenizer is not None and task.tokenizer != base.kind:
        raise ConfigError(f"task.tokenizer: {task.tokenizer!r}, but the prepared corpus {corpus.path} was "
                          f"tokenized with a {base.kind!r} tokenizer; leave task.tokenizer unset (the corpus's is "
                          "used)")
    # the rule prepare applies (tokenizer.check_vocab_size): the size asked is the corpus's, or the size its
    # prepare was asked for and took a smaller vocabulary with --accept-smaller-vocab
    asked = corpus.manifest["tokenizer"].get(ASKED_VOCAB_SIZE)
    if task.vocab_size is not None and task.vocab_size not in (base.vocab_size, ours.vocab_size, asked):
        raise ConfigError(f"task.vocab_size: {task.vocab_size:,}, but the prepared corpus {corpus.path} has a "
                          f"vocabulary of {ours.vocab_size:,} ids; set task.vocab_size={ours.vocab_size} or leave it "
                          "unset (the corpus's is used)")
    # ids beyond the vocabulary (a byte flipped on disk keeps a shard's size): refused here, before the run
    # directory exists, when the scan is cheap; a bigger corpus is checked batch by batch as it is read
    if scan_ids and not corpus.check_ids(ID_SCAN_BYTES):
        logger.info("the prepared corpus %s holds %s of token ids: checked against its vocabulary as batches are "
                    "read, not scanned at start", corpus.path, f"{corpus.token_bytes() / 1e9:,.1f} GB")
    return corpus


def prepared_data(run: RunConfig, tokenizer: Tokenizer | None = None,
                  splits: tuple[str, ...] | None = None) -> TaskData:
    """The :class:`TaskData` of a run on a prepared corpus: its tokenizer, the model config sized for it, and a
    dataset per split of ``splits`` (default: all the corpus has) read from the shards."""
    corpus = open_prepared(run, tokenizer)
    tok = corpus.tokenizer()
    check_spelling(run, tok, None)
    _preparation(run)
    model_config = resolve_model_config(run, tok.vocab_size, None, (tok.pad_id, tok.bos_id, tok.eos_id))
    # the run's splits: a corpus stored per task ("train.rte", "valid.rte") serves the run's "train" and "valid"
    present = list(dict.fromkeys(name.split(".", 1)[0] for name in corpus.splits))
    names = [s for s in (splits or tuple(present)) if s in present]
    datasets, ratio = {}, {}
    for name in names:
        datasets[name] = prepared_dataset(run, corpus, name, tok)
        chars = corpus.manifest["splits"].get(name, {}).get("characters")  # recorded where prepare counts them
        if chars:  # an LM's bits per character from subword tokens
            ratio[name] = chars / max(corpus.split(name).num_tokens("text"), 1)
        logger.info("prepared %s split: %s examples (%s)", name, f"{len(datasets[name]):,}", corpus.path)
    # a raw split: the examples a dataset reads back for scoring (decoded references, GLUE labels), else the names
    # of the corpus splits it was built from (nothing is read into memory)
    raw = RawData(run.task.type, {name: getattr(datasets.get(name), "raw_examples", None)
                                  or [s for s in corpus.splits if s.split(".", 1)[0] == name] for name in present},
                  info={"prepared": str(corpus.path)})
    return TaskData(raw, tok, datasets, model_config, None, ratio)


def _preparation(run: RunConfig) -> Preparation:
    preparation = run.task.task_type.preparation()
    if preparation is None:
        raise ConfigError(f"task.prepared: task type {run.task.type!r} cannot train from a prepared corpus; give its "
                          "data files (task.train) instead")
    return preparation


def prepared_dataset(run: RunConfig, corpus: PreparedCorpus, name: str, tokenizer: Tokenizer) -> Any:
    """The dataset of the run's split ``name`` over ``corpus``'s shards (the task type's :class:`Preparation`),
    built as :func:`prepared_data` builds each split; a dry run builds the training split's to count its examples.
    No token is read; a ``pairs`` corpus's offsets are, to count the examples its lengths cut or skip, and most of
    the training examples cut is refused (:func:`~..run.lengths.check_truncation`), as for data read into memory.

    Raises:
        ConfigError: a type that cannot train from a prepared corpus, or most training examples cut.
        DataError: a split the run's lengths cannot read (named with the manifest).
    """
    try:
        dataset = _preparation(run).dataset(run, corpus, name, tokenizer)
    except (DataError, ConfigError):
        raise
    except ValueError as err:
        raise DataError(corpus.path / "manifest.json", None, f"{name} split: {err}") from None
    if name == "train" and "train" in (reports := length_reports({name: dataset})):
        check_truncation(run.task, reports["train"])
    return dataset
