"""Training from a bad prepared corpus (issue 32, ``task.prepared``): a shard truncated since prepare, a source
changed or gone since prepare (found by ``stat`` alone), a corpus made for another task type, a config that
names data files besides the corpus, and a dialogue run whose history window is not the corpus's. Each fails at
start in one line naming the file or key and what to do; the corpus comes out unchanged and no run directory
appears."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.tasks.helpers import TINY_MODEL, TINY_TRAIN, write_yaml

from .cases_prepared import _prepared
from .harness import Case, Env, case

TRAINING = "data: training from a prepared corpus"


def _train(damage: Callable[[Env, Path], None] = lambda env, folder: None, **task: Any) -> Callable[[Env], list]:
    """``train`` on the prepared corpus after ``damage``, with ``task`` changes to the run config's task section."""
    def argv(env: Env) -> list[Any]:
        folder = _prepared(env)
        damage(env, folder)
        config = write_yaml(env.tmp / "train.yaml", {
            "task": {"type": "lm", "prepared": str(folder), "max_len": 16, **task},
            "model": {**TINY_MODEL, "decoder_kind": "R+V"}, "train": dict(TINY_TRAIN)})
        return ["train", config, "--run-dir", env.fresh_run("run"), "--no-progress"]
    return argv


def _dialogue_other_history(env: Env) -> list[Any]:
    """``train`` with ``task.options.history`` 3 on dialogue exchanges prepared with a history of 2 turns."""
    from synthformer.common.config import from_dict
    from synthformer.tasks import TaskConfig
    from synthformer.tasks.preparing import prepare_corpus

    chats = env.write("data/chats.jsonl", "".join(
        json.dumps({"persona": ["i like to ski."], "turns": ["hi !", f"hello {n}", "how are you ?", "fine ."]}) + "\n"
        for n in range(8)))
    task: dict[str, Any] = {"type": "dialogue", "valid_fraction": 0.25, "tokenizer": "word", "max_len": 24}
    folder = env.tmp / "prep-dialogue"
    prepare_corpus(from_dict(TaskConfig, {**task, "train": str(chats), "options": {"history": 2}}), folder)
    env.watched.append(folder)
    config = write_yaml(env.tmp / "train.yaml", {
        "task": {**task, "prepared": str(folder), "options": {"history": 3}},
        "model": dict(TINY_MODEL), "train": dict(TINY_TRAIN)})
    return ["train", config, "--run-dir", env.fresh_run("run"), "--no-progress"]


def _truncate(env: Env, folder: Path) -> None:
    shard = folder / "train-00001.text.bin"
    shard.write_bytes(shard.read_bytes()[:-4])


def _touch_source(env: Env, folder: Path) -> None:
    os.utime(env.tmp / "data" / "corpus.jsonl", (1, 1))  # same bytes, another modification time


def _remove_source(env: Env, folder: Path) -> None:
    (env.tmp / "data" / "corpus.jsonl").unlink()


PREPARED_TRAIN_CASES: list[Case] = [
    case(TRAINING, "train-prepared-shard-truncated", _train(_truncate), "train-00001.text.bin", "truncated",
         "re-run the same 'synthformer prepare'"),
    case(TRAINING, "train-prepared-source-touched", _train(_touch_source),
         "corpus.jsonl: modified since prepare", "no longer matches its sources"),
    case(TRAINING, "train-prepared-source-gone", _train(_remove_source), "corpus.jsonl: gone since prepare"),
    case(TRAINING, "train-prepared-other-task-type",
         _train(type="span_corruption", max_len=24, options={"num_sentinels": 10}),
         "task.prepared", "prepared for task.type 'lm'", "prepare it again"),
    case(TRAINING, "train-prepared-and-files", _train(train="corpus.txt"), "task.prepared",
         "add task.train=null"),
    case(TRAINING, "train-prepared-dialogue-other-history", _dialogue_other_history, "task.options.history: 3",
         "holds exchanges with history 2", "set task.options.history=2 or prepare again"),
]
