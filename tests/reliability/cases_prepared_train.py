"""Training from a bad prepared corpus (issue 32, ``task.prepared``): a shard truncated since prepare, a corpus
made for another task type, a config that names data files besides the corpus, a dialogue run whose history window
is not the corpus's, and a text-to-text dev file scored on its records (MultiRC) gone since prepare. Each fails at
start in one line naming the file or key and what to do; the corpus comes out unchanged and no run directory
appears.

Recovered from: a source modified (copied without its time), moved or deleted since prepare. The corpus does not
need its sources: the run trains from its shards (exit 0) after one note naming the file (found by ``stat``
alone)."""

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


def _train(damage: Callable[[Env, Path], None] = lambda env, folder: None, recovers: bool = False,
           **task: Any) -> Callable[[Env], list]:
    """``train`` on the prepared corpus after ``damage``, with ``task`` changes to the run config's task section
    (``recovers``: the run trains, two steps, into a run directory that may appear)."""
    def argv(env: Env) -> list[Any]:
        folder = _prepared(env)
        damage(env, folder)
        steps = {"steps": 2, "save_every": 2, "eval_every": 2} if recovers else {}
        config = write_yaml(env.tmp / "train.yaml", {
            "task": {"type": "lm", "prepared": str(folder), "max_len": 16, **task},
            "model": {**TINY_MODEL, "decoder_kind": "R+V"}, "train": {**TINY_TRAIN, **steps}})
        run = env.tmp / "run" if recovers else env.fresh_run("run")
        return ["train", config, "--run-dir", run, "--no-progress"]
    return argv


def _dev_records_gone(env: Env) -> list[Any]:
    """``train`` from a prepared MultiRC + RTE corpus whose MultiRC dev file (scored on its records) is deleted."""
    from synthformer.common.config import from_dict
    from synthformer.tasks import TaskConfig
    from synthformer.tasks.prepared import prepare_corpus
    from tests.tasks.helpers import superglue_dir, t2t_config

    root = superglue_dir(env.tmp)
    tasks = ["multirc", "super_glue_rte"]
    folder = env.tmp / "prep-t2t"
    prepare_corpus(from_dict(TaskConfig, {"type": "text_to_text", "train": str(root), "options": {"tasks": tasks},
                                          "tokenizer": "char"}), folder)
    env.watched.append(folder)
    (root / "MultiRC" / "val.jsonl").unlink()
    cfg = t2t_config(env.tmp, options={"tasks": tasks}, prepared=str(folder))
    del cfg["task"]["train"], cfg["task"]["tokenizer"]
    return ["train", write_yaml(env.tmp / "train.yaml", cfg), "--run-dir", env.fresh_run("run"), "--no-progress"]


def _dialogue_other_history(env: Env) -> list[Any]:
    """``train`` with ``task.options.history`` 3 on dialogue exchanges prepared with a history of 2 turns."""
    from synthformer.common.config import from_dict
    from synthformer.tasks import TaskConfig
    from synthformer.tasks.prepared import prepare_corpus

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


def _move_sources(env: Env, folder: Path) -> None:
    (env.tmp / "data").rename(env.tmp / "elsewhere")


PREPARED_TRAIN_CASES: list[Case] = [
    case(TRAINING, "train-prepared-shard-truncated", _train(_truncate), "train-00001.text.bin", "truncated",
         "re-run the same 'synthformer prepare'"),
    case(TRAINING, "train-prepared-source-touched", _train(_touch_source, recovers=True),
         "note: ", "corpus.jsonl: modified since prepare", "does not need its sources", exit_code=0),
    case(TRAINING, "train-prepared-source-gone", _train(_remove_source, recovers=True),
         "note: ", "corpus.jsonl: gone since prepare", "does not need its sources", exit_code=0),
    case(TRAINING, "train-prepared-sources-moved", _train(_move_sources, recovers=True),
         "note: ", "data/corpus.jsonl: gone since prepare", "does not need its sources", exit_code=0),
    case(TRAINING, "train-prepared-dev-records-gone", _dev_records_gone, "MultiRC/val.jsonl",
         "gone since prepare: scoring multirc", "put it back"),
    case(TRAINING, "train-prepared-other-task-type",
         _train(type="span_corruption", max_len=24, options={"num_sentinels": 10}),
         "task.prepared", "prepared for task.type 'lm'", "prepare it again"),
    case(TRAINING, "train-prepared-and-files", _train(train="corpus.txt"), "task.prepared",
         "add task.train=null"),
    case(TRAINING, "train-prepared-dialogue-other-history", _dialogue_other_history, "task.options.history: 3",
         "holds exchanges with history 2", "set task.options.history=2 or prepare again"),
]
