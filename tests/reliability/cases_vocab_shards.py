"""Bad vocabularies and damaged prepared shards: a token id outside the vocabulary in a shard whose size is intact
(a flipped high byte: the sizes the start-up checks agree, and the id would crash the embedding hundreds of steps
in), with its sources present or gone; a ``task.vocab_size`` beyond what the tokenizer trainers can allocate
(``1e12`` read by YAML as text, ``5e9`` as a float, 2**32 as an integer; the BPE trainer aborted the process with a
Rust backtrace and left a lock behind), given in a config file or as an override, to ``train`` or ``prepare``.

Each fails in one line naming the file or key, the value and what to do; the prepared folder comes out unchanged
and no run directory or prepared folder appears."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .cases_prepared import _config
from .cases_prepared_train import _remove_source, _train
from .harness import Case, Env, case

VOCAB = "data: vocabularies and prepared shards"
SHARD = "train-00001.text.bin"


def _flip_high_byte(env: Env, folder: Path) -> None:
    """The high byte of the second id of a shard flipped: an id of 32,768 or more, the file's size unchanged."""
    shard = folder / SHARD
    data = bytearray(shard.read_bytes())
    data[3] ^= 0x80  # uint16 little-endian: byte 3 is the high byte of id 1
    shard.write_bytes(bytes(data))


def _flipped_and_sources_gone(env: Env, folder: Path) -> None:
    _flip_high_byte(env, folder)
    _remove_source(env, folder)


def _train_lm(*overrides: str, changes: dict[str, Any] | None = None) -> Callable[[Env], list[Any]]:
    """``train`` on the tiny LM config (BPE, a YAML ``changes`` and ``overrides``) into a run that must not appear."""
    def argv(env: Env) -> list[Any]:
        config = env.config("lm", {"task.tokenizer": "bpe", **(changes or {})})
        return ["train", config, *overrides, "--run-dir", env.fresh_run("run"), "--no-progress"]
    return argv


def _prepare_with(*overrides: str) -> Callable[[Env], list[Any]]:
    """``prepare`` of a small corpus with ``overrides`` into a folder that must not appear."""
    def argv(env: Env) -> list[Any]:
        return ["prepare", _config(env, tokenizer="bpe"), *overrides, "--out", env.fresh_run("p"), "--no-progress"]
    return argv


_RANGE = "expected an integer from 1 to 16,777,216"

VOCAB_SHARD_CASES: list[Case] = [
    case(VOCAB, "train-prepared-id-outside-vocab", _train(_flip_high_byte), SHARD, "token id 3",
         "is outside the vocabulary of", "re-run the same 'synthformer prepare' command with --verify"),
    case(VOCAB, "train-prepared-id-outside-vocab-sources-gone", _train(_flipped_and_sources_gone), SHARD,
         "outside the vocabulary of", "corpus.jsonl is gone since the prepare: restore the sources, then re-run",
         "--verify"),
    case(VOCAB, "task-vocab-size-1e12-override", _train_lm("task.vocab_size=1e12"), "task.vocab_size", _RANGE,
         "got '1e12'"),
    case(VOCAB, "task-vocab-size-5e9-yaml-float", _train_lm(changes={"task.vocab_size": 5e9}), "task.vocab_size",
         _RANGE, "got 5000000000.0"),
    case(VOCAB, "task-vocab-size-2-32-yaml", _train_lm(changes={"task.vocab_size": 2**32}), "task.vocab_size",
         _RANGE, "got 4294967296"),
    case(VOCAB, "prepare-vocab-size-1e12", _prepare_with("task.vocab_size=1e12"), "task.vocab_size", _RANGE,
         "got '1e12'"),
]
