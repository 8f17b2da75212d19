"""The tokenizer of a prepare: a given file, or one trained on a bounded, seeded sample of the training sources.

The sample: the training units in an order shuffled by ``seed``, read from the start, their training examples'
texts (every field) taken until ``sample_bytes`` of UTF-8 text: memory is bounded by the sample, never by the
corpus. The same seed, sources and bound give the same sample, hence the same tokenizer.
"""

from __future__ import annotations

import random
from typing import Any

from synthformer.common import ConfigError
from synthformer.data import (
    BYTE_FALLBACK_MIN_PIECES,
    SentinelTokenizer,
    Tokenizer,
    build_tokenizer,
    load_tokenizer,
    sha256_file,
)

from ..run.task_config import TaskConfig
from .plan import Context, Unit, unit_records

__all__ = ["ASKED_VOCAB_SIZE", "DEFAULT_SAMPLE_BYTES", "check_vocab_size", "given_tokenizer", "tokenizer_identity",
           "train_tokenizer"]

#: Default bound of the tokenizer's training sample: 100 MB of text.
DEFAULT_SAMPLE_BYTES = 100_000_000
#: The manifest's ``tokenizer`` key that records a ``task.vocab_size`` the data could not reach, taken with
#: ``--accept-smaller-vocab``: a run with that same setting accepts the corpus's smaller vocabulary.
ASKED_VOCAB_SIZE = "vocab_size_asked"


def _sizes(tok: Tokenizer) -> tuple[int, ...]:
    """The sizes ``task.vocab_size`` may name for ``tok``: its own, and its base's where the task type wrapped it
    (span corruption's sentinels come on top of a ``bpe`` cap, inside a ``sentencepiece`` one)."""
    return tok.vocab_size, getattr(tok, "base", tok).vocab_size


def check_vocab_size(task: TaskConfig, tok: Tokenizer, *, given: str | None, accept_smaller: bool) -> bool:
    """Refuse a prepare whose tokenizer has another size than ``task.vocab_size`` asks (``train`` with the same
    config would refuse the corpus), unless ``accept_smaller`` takes a trained vocabulary the data cannot make as
    big; returns whether the tokenizer is such a smaller one (the manifest records :data:`ASKED_VOCAB_SIZE` then).

    Raises:
        ConfigError: one line naming the size asked, the size reached and the ways out.
    """
    asked = task.vocab_size
    if asked is None or asked in _sizes(tok):
        return False
    got = tok.vocab_size
    if given is not None:
        raise ConfigError(f"task.vocab_size: {asked:,}, but --tokenizer {given} has {got:,} ids; set "
                          f"task.vocab_size={got} or leave it unset (the file's size is used)")
    if got < asked and accept_smaller:
        return True
    if got > asked:  # a cap below the ids every vocabulary of the kind holds (word: its 4 specials)
        raise ConfigError(f"task.vocab_size: {asked:,} asked, but a {task.tokenizer_kind} vocabulary holds at least "
                          f"{got:,} ids (its special tokens); set task.vocab_size={got} or more")
    raise ConfigError(f"task.vocab_size: {asked:,} asked, but the training text gives a {task.tokenizer_kind} "
                      f"vocabulary of only {got:,} ids; set {_same_vocabulary(task, tok)}, give more training text, "
                      f"or pass --accept-smaller-vocab to prepare it with {got:,} ids ('synthformer train' with this "
                      "config then accepts the corpus)")


def _same_vocabulary(task: TaskConfig, tok: Tokenizer) -> str:
    """The settings that train ``tok``'s vocabulary again at its own size: ``task.vocab_size``, and for a
    sentencepiece model trained with byte fallback because the size asked was big enough, the option that keeps it
    (below :data:`BYTE_FALLBACK_MIN_PIECES` pieces it is off unless asked for: another, smaller vocabulary)."""
    setting = f"task.vocab_size={tok.vocab_size}"
    base = getattr(tok, "base", tok)
    if (task.tokenizer_kind == "sentencepiece" and "byte_fallback" not in task.tokenizer_options
            and base.vocab_size < BYTE_FALLBACK_MIN_PIECES and getattr(base, "byte_fallback", False)):
        setting += (f" with task.tokenizer_options.byte_fallback=true (below {BYTE_FALLBACK_MIN_PIECES:,} pieces "
                    "byte fallback is off unless asked for)")
    return setting


def tokenizer_identity(task: TaskConfig, given: str | None, sample_bytes: int, seed: int) -> dict[str, Any]:
    """What identifies the tokenizer of a prepare (part of its identity: a re-run with another is refused)."""
    if given is not None:
        return {"file_sha256": sha256_file(given)}
    train = {"kind": task.tokenizer_kind, "vocab_size": task.vocab_size, "options": dict(task.tokenizer_options),
             "sample_bytes": sample_bytes, "seed": seed}
    model_file = _model_file(task)
    if model_file is not None:  # the sentencepiece kind reading a spiece.model: the file's content, not its name
        try:
            train["model_file_sha256"] = sha256_file(model_file)
        except OSError as err:
            raise ConfigError(f"task.tokenizer_options.model_file: cannot read {model_file} ({err})") from None
    return {"train": train}


def _model_file(task: TaskConfig) -> str | None:
    """The existing model file a ``sentencepiece`` tokenizer reads instead of training (``None``: it trains)."""
    return task.tokenizer_options.get("model_file") if task.tokenizer_kind == "sentencepiece" else None


def given_tokenizer(task: TaskConfig, path: str) -> Tokenizer:
    """The tokenizer file ``path`` (``--tokenizer``), completed the way the task type completes one it trains (span
    corruption's sentinels) unless it already is (a run directory's tokenizer)."""
    try:
        tok = load_tokenizer(path)
    except (FileNotFoundError, ValueError) as err:
        raise ConfigError(f"--tokenizer: {err}") from None
    return tok if isinstance(tok, SentinelTokenizer) else task.task_type.finish_tokenizer(task, tok)


def _sample(ctx: Context, units: list[Unit], sample_bytes: int, seed: int) -> list[str]:
    order = [u for u in units if u.split == "train" or u.split.startswith("train.")]
    random.Random(seed).shuffle(order)
    texts: list[str] = []
    size = 0
    for unit in order:
        for position, fields in unit_records(ctx, unit):
            if ctx.split_of(unit, position) not in ("train", unit.split):
                continue
            texts.extend(fields)
            size += sum(len(t.encode("utf-8")) for t in fields)
            if size >= sample_bytes:
                return texts
    return texts


def train_tokenizer(task: TaskConfig, ctx: Context, units: list[Unit], sample_bytes: int, seed: int) -> Tokenizer:
    """A tokenizer of ``task.tokenizer_kind`` trained on the sample (see the module docstring), completed by the task
    type (span corruption's sentinels)."""
    kind = task.tokenizer_kind
    trains = kind != "byte" and _model_file(task) is None
    texts = _sample(ctx, units, sample_bytes, seed) if trains else []
    if trains and not texts:
        raise ConfigError("task.train: the training sources hold no text to train a tokenizer on")
    try:
        tok = build_tokenizer(kind, texts, task.vocab_size, **task.tokenizer_options)
    except (ValueError, OSError) as err:  # OSError: a tokenizer file option (model_file) not found
        raise ConfigError(f"task.tokenizer: cannot build a {kind!r} tokenizer with vocab_size={task.vocab_size} and "
                          f"tokenizer_options={task.tokenizer_options}: {err}") from None
    return task.task_type.finish_tokenizer(task, tok)

