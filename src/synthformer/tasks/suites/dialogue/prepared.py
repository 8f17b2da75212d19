"""``dialogue`` and ``synthformer prepare``: each exchange stored as a ``pairs`` example whose ``source`` holds the
speaker separators inline, and the dataset that reads it back.

Stored: ``source`` = the ids :func:`.dataset.encode_source` builds with no length limit
(persona and history segments, each opened by its separator's sentinel id) without the final ``<eos>``;
``target`` = the response's ids. The fitting to ``task.max_len`` (which drops persona and history ids in its own
order) happens when an example is read, so ``max_len`` stays a training setting; the history window
(``task.options.history``) decides which turns are stored, so a run must use the corpus's.

An exchange's position (what decides the held-out split when no ``task.valid`` file is given) is its dialogue's
first line: the exchanges of one dialogue go to the same split, as the in-memory path holds out whole dialogues
(but not the same dialogues: prepare holds out by a hash, the in-memory path by a seeded draw).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from synthformer.common import ConfigError
from synthformer.data import SentinelTokenizer

from .dataset import SPEAKER_TOKENS, PreparedDialogueDataset, encode_source
from .reader import Exchange, dialogue_exchanges, read_dialogues

if TYPE_CHECKING:
    from synthformer.data import Tokenizer

    from ...run.config import RunConfig
    from ...run.task_config import TaskConfig

__all__ = ["ExchangeTexts", "encode_exchanges", "prepared_dialogue_dataset", "prepared_exchanges"]


class ExchangeTexts(tuple[str, ...]):
    """One exchange as a prepare record: its texts (persona lines, history turns, response) as a tuple of strings,
    which is all prepare's generic steps read (the tokenizer's sample, character counts), and the
    :class:`.reader.Exchange` itself for :func:`encode_exchanges`."""

    exchange: Exchange

    def __new__(cls, exchange: Exchange) -> ExchangeTexts:
        record = super().__new__(cls, (*exchange.persona, *exchange.history, exchange.response))
        record.exchange = exchange
        return record


def prepared_exchanges(task: TaskConfig, source: str, history: int | None) -> Iterator[tuple[int, ExchangeTexts]]:
    """``(position, record)`` of each exchange of the dialogue file ``source`` (read in the training file's format,
    as the in-memory path reads every split); the position is the dialogue's first line."""
    dialogues = read_dialogues(source, str(task.file_format), empty_lines=task.empty_lines)
    for i, exchange in enumerate(dialogue_exchanges(dialogues, history), start=1):
        yield (exchange.line or i), ExchangeTexts(exchange)


def encode_exchanges(tokenizer: Tokenizer, records: Sequence[tuple[str, ...]], layout: str) -> list[list[list[int]]]:
    """``[source, target]`` ids of each record (an :class:`ExchangeTexts` of :func:`prepared_exchanges`; see the
    module docstring): every segment and response of the batch encoded in two ``encode_batch`` calls."""
    if not isinstance(tokenizer, SentinelTokenizer) or tokenizer.num_sentinels < SPEAKER_TOKENS:
        raise ConfigError(f"the dialogue type needs a tokenizer with {SPEAKER_TOKENS} speaker separators "
                          f"(sentinels), got {tokenizer!r}")
    exchanges = [r.exchange for r in records]  # type: ignore[attr-defined]  # ExchangeTexts, as said above
    flat = tokenizer.encode_batch([t for e in exchanges for t in (*e.persona, *e.history)])
    responses = tokenizer.encode_batch([e.response for e in exchanges])
    rows, start = [], 0
    for exchange, response in zip(exchanges, responses, strict=True):
        n = len(exchange.persona) + len(exchange.history)
        source, _ = encode_source(tokenizer, exchange, None, flat[start : start + n])
        rows.append([source[:-1], response])  # the stored source has no <eos>: it is added after fitting
        start += n
    return rows


def prepared_dialogue_dataset(run: RunConfig, corpus: Any, split: str, tokenizer: Tokenizer,
                              history: int | None, default_history: int | None) -> PreparedDialogueDataset:
    """The exchanges of ``split`` of ``corpus``, fitted to the run's lengths, with ``raw_examples`` the decoded
    (source, response) pairs (the references of scoring).

    Raises:
        ConfigError: a run whose history window differs from the corpus's, or a tokenizer without separators.
    """
    options = corpus.manifest.get("config", {}).get("options") or {}
    stored = options.get("history", default_history)
    if stored != history:
        raise ConfigError(f"task.options.history: {history}, but the prepared corpus {corpus.path} holds exchanges "
                          f"with history {stored}; set task.options.history={stored} or prepare again")
    if not isinstance(tokenizer, SentinelTokenizer):
        raise ConfigError(f"task.prepared: {corpus.path}'s tokenizer has no speaker separators ({tokenizer!r}); "
                          "prepare it again with task.type dialogue")
    from synthformer.data import DecodedPairs

    task = run.task
    dataset = PreparedDialogueDataset([corpus.split(split)], tokenizer, max_src_len=task.max_len,
                                      max_tgt_len=task.target_len, overflow=task.overflow)
    dataset.raw_examples = DecodedPairs(dataset, tokenizer)
    return dataset
