"""The tokenizer of a prepare: a given file, or one trained on a bounded, seeded sample of the training sources.

The sample: the training units in an order shuffled by ``seed``, read from the start, their training examples'
texts (every field) taken until ``sample_bytes`` of UTF-8 text: memory is bounded by the sample, never by the
corpus. The same seed, sources and bound give the same sample, hence the same tokenizer.
"""

from __future__ import annotations

import random
from typing import Any

from synthformer.data import SentinelTokenizer, Tokenizer, build_tokenizer, load_tokenizer
from synthformer.data.prepared.format import sha256_file
from synthformer.train import ConfigError

from ..run.task_config import TaskConfig
from .plan import Context, Unit, unit_records

__all__ = ["DEFAULT_SAMPLE_BYTES", "given_tokenizer", "tokenizer_identity", "train_tokenizer"]

#: Default bound of the tokenizer's training sample: 100 MB of text.
DEFAULT_SAMPLE_BYTES = 100_000_000


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

