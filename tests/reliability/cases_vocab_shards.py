"""Bad vocabularies and damaged prepared shards: a token id outside the vocabulary in a shard whose size is intact
(a flipped high byte: the sizes the start-up checks agree, and the id would crash the embedding hundreds of steps
in), with its sources present or gone; a ``task.vocab_size`` beyond what the tokenizer trainers can allocate
(``1e12`` read by YAML as text, ``5e9`` as a float, 2**32 as an integer; the BPE trainer aborted the process with a
Rust backtrace and left a lock behind), given in a config file or as an override, to ``train`` or ``prepare``.

A ``task.vocab_size`` the training text cannot reach (``prepare`` used to train the smaller vocabulary with one
INFO line, and ``train`` with the same config then refused the corpus), also with ``--overwrite`` over an existing
prepare (which must survive the refusal) and with a ``--tokenizer`` file of another size. ``prepare --check`` on a
damaged shard whose sources are gone (its advice used to be the ``--verify`` re-run, which refuses without them).
A text-to-text run whose small SentencePiece vocabulary cannot spell a label (the message used to call byte
fallback the default, which it is only from 1,024 pieces).

Each fails in one line naming the file or key, the value and what to do; the prepared folder comes out unchanged
and no run directory or prepared folder appears."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.tasks.helpers import t2t_config, write_yaml

from .cases_prepared import _check, _config, _corrupt, _prepared, _source_gone, _truncate
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


def _unreachable(*extra: str) -> Callable[[Env], list[Any]]:
    """``prepare`` of a char corpus (about 30 characters) asked for 500 ids, into a folder that must not appear."""
    def argv(env: Env) -> list[Any]:
        return ["prepare", _config(env, vocab_size=500), *extra, "--out", env.fresh_run("p"), "--no-progress"]
    return argv


def _unreachable_overwrite(env: Env) -> list[Any]:
    """The same, with ``--overwrite`` over a finished prepare of another config: refused, the old one kept."""
    folder = _prepared(env)
    return ["prepare", _config(env, vocab_size=500), "--out", folder, "--overwrite", "--no-progress"]


def _other_size_tokenizer(env: Env) -> list[Any]:
    from synthformer.data import ByteTokenizer

    tok = ByteTokenizer().save(env.tmp / "byte.json")
    return ["prepare", _config(env, vocab_size=500), "--tokenizer", tok, "--out", env.fresh_run("p"), "--no-progress"]


def _sources_gone_and(damage: Callable[[Env, Path], Any]) -> Callable[[Env, Path], list[Any]]:
    def both(env: Env, folder: Path) -> list[Any]:
        damage(env, folder)
        _source_gone(env, folder)
        return []
    return both


def _unspellable_label(env: Env) -> list[Any]:
    """A text-to-text RTE run on a SentencePiece model of 31 pieces (no byte fallback) that never saw ``_``."""
    from synthformer.data.tokenizer_spm import SentencePieceTokenizer

    text = "rte sentence1: sentence2: sst2 entailment not entailment negative positive. The cat sat on the mat."
    model = SentencePieceTokenizer.train([text] * 20, 120).save_model(env.tmp / "small.model")
    config = t2t_config(env.tmp, tokenizer="sentencepiece", tokenizer_options={"model_file": str(model)})
    return ["train", write_yaml(env.tmp / "t2t.yaml", config), "--run-dir", env.fresh_run("run"), "--no-progress"]


_RANGE = "expected an integer from 1 to 16,777,216"
_RESTORE = "corpus.jsonl is gone since the prepare: restore the sources, then re-run the same 'synthformer prepare'"

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
    case(VOCAB, "prepare-vocab-size-unreachable", _unreachable(), "task.vocab_size: 500 asked",
         "gives a char vocabulary of only", "set task.vocab_size=", "give more training text",
         "--accept-smaller-vocab", "'synthformer train' with this config then accepts the corpus"),
    case(VOCAB, "prepare-vocab-size-unreachable-overwrite", _unreachable_overwrite, "task.vocab_size: 500 asked",
         "--accept-smaller-vocab"),
    case(VOCAB, "prepare-vocab-size-not-the-tokenizer-file", _other_size_tokenizer, "task.vocab_size: 500",
         "byte.json has 260 ids", "set task.vocab_size=260 or leave it unset"),
    case(VOCAB, "prepared-check-corrupt-sources-gone", _check(_sources_gone_and(_corrupt)), "train-00000.text.bin",
         "checksum mismatch", _RESTORE, "--verify"),
    case(VOCAB, "prepared-check-truncated-sources-gone", _check(_sources_gone_and(_truncate)),
         "train-00001.text.bin", "truncated", _RESTORE),
    case(VOCAB, "train-t2t-sentencepiece-cannot-spell", _unspellable_label,
         "cannot spell the rte target 'not_entailment'", "no byte fallback",
         "by default only from 1,024 pieces (task.vocab_size 1,124 or more, its 100 sentinels included",
         "task.tokenizer_options.byte_fallback=true"),
]
