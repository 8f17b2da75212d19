"""Bad prepared corpora and bad prepares (issue 32): a shard truncated or corrupt, a tokenizer other than the
corpus's, an unknown format version, no manifest (``prepare --check``); another prepare in ``--out``, a folder in
use by a second prepare, a type that cannot be prepared, a glob that matches nothing (``prepare``); the same prepare
run again after a source changed, or after the sources were deleted while a shard is damaged. The prepared folder
must come out unchanged; a new one must not appear.

Recovered from (exit 0 with a note naming the file, the corpus unchanged): sources changed or gone since the prepare
(``prepare --check``: the corpus does not need them), and the same prepare run again once they are deleted.

A full disk during prepare is simulated below the command line (``tests/tasks/test_prepare.py``): it cannot be
made from a command line alone."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from synthformer.common.config import from_dict
from tests.tasks.helpers import LM_TEXT, write_yaml

from .harness import Case, Env, case

Argv = Callable[[Env], Sequence[Any]]
PREPARED = "data: prepared corpora"
_TASK = {"type": "lm", "valid_fraction": 0.25, "tokenizer": "char", "max_len": 16}


def _config(env: Env, **task: Any) -> Path:
    lines = [json.dumps({"text": " ".join(LM_TEXT.split()[i:i + 8])}) for i in range(0, 64, 4)]
    corpus = env.write("data/corpus.jsonl", "".join(f"{line}\n" for line in lines))
    return write_yaml(env.tmp / "prepare.yaml", {"task": {**_TASK, "train": str(corpus), **task}})


def _prepared(env: Env) -> Path:
    """A small prepared corpus (several shards) made in-process, watched."""
    from synthformer.tasks import TaskConfig
    from synthformer.tasks.prepared import prepare_corpus

    _config(env)
    task = from_dict(TaskConfig, {**_TASK, "train": str(env.tmp / "data" / "corpus.jsonl")})
    folder = env.tmp / "prep"
    prepare_corpus(task, folder, shard_tokens=64)
    env.watched.append(folder)
    return folder


def _check(damage: Callable[[Env, Path], Sequence[Any]]) -> Argv:
    """``prepare --check`` on the corpus after ``damage`` (which returns extra arguments)."""
    def argv(env: Env) -> list[Any]:
        folder = _prepared(env)
        extra = damage(env, folder)
        return ["prepare", "--check", folder, *extra]
    return argv


def _truncate(env: Env, folder: Path) -> list[Any]:
    shard = folder / "train-00001.text.bin"
    shard.write_bytes(shard.read_bytes()[:-4])
    return []


def _corrupt(env: Env, folder: Path) -> list[Any]:
    shard = folder / "train-00000.text.bin"
    data = bytearray(shard.read_bytes())
    data[3] ^= 0x01
    shard.write_bytes(bytes(data))
    return []


def _other_tokenizer(env: Env, folder: Path) -> list[Any]:
    from synthformer.data import ByteTokenizer

    return ["--tokenizer", ByteTokenizer().save(env.tmp / "other.json")]


def _source_changed(env: Env, folder: Path) -> list[Any]:
    with open(env.tmp / "data" / "corpus.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"text": "a late addition"}) + "\n")
    return []


def _source_gone(env: Env, folder: Path) -> list[Any]:
    (env.tmp / "data" / "corpus.jsonl").unlink()
    return []


def _source_gone_and_shard_truncated(env: Env, folder: Path) -> list[Any]:
    _source_gone(env, folder)
    return _truncate(env, folder)


def _again(damage: Callable[[Env, Path], Sequence[Any]]) -> Argv:
    """The prepare that made the corpus, run again after ``damage``."""
    def argv(env: Env) -> list[Any]:
        folder = _prepared(env)
        damage(env, folder)
        return ["prepare", env.tmp / "prepare.yaml", "--out", folder, "--shard-tokens", "64", "--no-progress"]
    return argv


def _manifest(change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> Callable[[Env, Path], list[Any]]:
    def damage(env: Env, folder: Path) -> list[Any]:
        path = folder / "manifest.json"
        new = change(json.loads(path.read_text(encoding="utf-8")))
        if new is None:
            path.unlink()
        else:
            path.write_text(json.dumps(new), encoding="utf-8")
        return []
    return damage


def _other_prepare(env: Env) -> list[Any]:
    folder = _prepared(env)
    return ["prepare", env.tmp / "prepare.yaml", "--out", folder, "--shard-tokens", "999"]


def _in_use(env: Env) -> list[Any]:
    """Another process holds the folder's lock (as a running prepare does) for a few seconds."""
    folder = env.tmp / "busy"
    folder.mkdir()
    env.watched.append(folder)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
         "fcntl.lockf(fd, fcntl.LOCK_EX); os.write(fd, b'4242 elsewhere'); print('locked', flush=True); "
         "time.sleep(10)", str(folder / ".lock")], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return ["prepare", _config(env), "--out", folder]


PREPARED_CASES: list[Case] = [
    case(PREPARED, "prepared-shard-truncated", _check(_truncate), "train-00001.text.bin", "truncated",
         "re-run the same 'synthformer prepare'"),
    case(PREPARED, "prepared-shard-corrupt", _check(_corrupt), "train-00000.text.bin", "checksum mismatch",
         "--verify"),
    case(PREPARED, "prepared-other-tokenizer", _check(_other_tokenizer), "another tokenizer", "other.json"),
    case(PREPARED, "prepared-source-changed", _check(_source_changed), "corpus.jsonl: changed since prepare",
         "does not need its sources", exit_code=0),
    case(PREPARED, "prepared-source-gone", _check(_source_gone), "corpus.jsonl: gone since prepare",
         "does not need its sources", exit_code=0),
    case(PREPARED, "prepare-again-sources-gone", _again(_source_gone), "the sources are gone", "corpus.jsonl",
         "does not need them", exit_code=0),
    case(PREPARED, "prepare-again-source-changed", _again(_source_changed), "corpus.jsonl",
         "holds a prepare of other source contents", "--overwrite"),
    case(PREPARED, "prepare-again-damaged-sources-gone", _again(_source_gone_and_shard_truncated),
         "train-00001.text.bin: damaged, and rewriting it needs the sources", "corpus.jsonl", "--overwrite"),
    case(PREPARED, "prepared-unknown-version", _check(_manifest(lambda m: {**m, "version": 7})),
         "manifest.json", "version 7 is not supported"),
    case(PREPARED, "prepared-no-manifest", _check(_manifest(lambda m: None)), "manifest.json: missing"),
    case(PREPARED, "prepare-other-prepare-in-out", _other_prepare, "prep", "holds a different prepare",
         "shard_tokens", "--overwrite"),
    case(PREPARED, "prepare-out-in-use", _in_use, "busy", "in use by another process (pid 4242 on elsewhere)"),
    case(PREPARED, "prepare-type-not-preparable",
         lambda env: ["prepare", _config(env, type="classification"), "--out", env.fresh_run("p")],
         "task.type", "'classification' data cannot be prepared"),
    case(PREPARED, "prepare-glob-matches-nothing",
         lambda env: ["prepare", _config(env, train=str(env.tmp / "c4" / "c4-train.*-of-01024.json.gz")), "--out",
                      env.fresh_run("p")], "c4-train.*-of-01024.json.gz", "no file matches"),
]
