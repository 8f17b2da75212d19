"""Bad inputs that were accepted in silence, hung, crashed or left a half-made run behind, each now refused in one
line that leaves no trace: a config with a key given twice (the first copy used to be dropped), a ``task.max_len``
longer than the data (reported in the datasets' own terms), data paths that are symlink loops, named pipes or
devices (a traceback, or an ``open`` waiting forever beside a ``.lock``-only run directory), a run the trainer
refuses before its first step (too few examples for one batch), which used to leave ``config.yaml``, the tokenizer
and ``model_config.json`` behind (or delete the run it was to overwrite), and ``--resume`` with a ``train.steps``
below the checkpoint's step, which trained nothing and rewrote ``metrics.jsonl``.

A case that names a run directory that does not exist expects it still absent afterwards; one that names a trained
run expects it unchanged file by file."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .cases_data import FORMATS, data_config
from .harness import DELETE, Case, Env, case

Argv = Callable[[Env], Sequence[Any]]
UNBLOCK_AFTER_S = 20.0
"""A reader that opens a case's FIFO despite the check is set free after this long (it then reads an empty file and
the case fails on its message) instead of hanging the suite."""


def fifo(env: Env, name: str) -> Path:
    """A named pipe under the scratch folder, replacing any file there."""
    path = env.tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    timer = threading.Timer(UNBLOCK_AFTER_S, _unblock, args=(path,))
    timer.daemon = True
    timer.start()
    return path


def _unblock(path: Path) -> None:
    """Open ``path`` for writing and close it at once: a reader blocked in its ``open`` gets an empty file. Without
    such a reader the open fails (ENXIO), and nothing happens."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def symlink_loop(env: Env, name: str) -> Path:
    """Two symbolic links that point at each other; returns the first."""
    first, second = env.tmp / name, env.tmp / f"{name}-back"
    first.symlink_to(second)
    second.symlink_to(first)
    return first


def train_with(kind: str, changes: Callable[[Env], dict[str, Any]], *extra: str) -> Argv:
    """``train`` the trained ``kind`` config with the dotted ``changes`` (made in the scratch folder) into a run
    directory that must stay absent."""
    return lambda env: ["train", env.config(kind, changes(env)), *extra, "--run-dir", env.fresh_run()]


def config_text(text: str) -> Argv:
    """``train`` a config file with exactly this content."""
    return lambda env: ["train", env.write("bad.yaml", text), "--run-dir", env.fresh_run()]


# -- config: keys given twice, lengths beyond the data --------------------------------------------------------


def _second_train_section(env: Env) -> list[Any]:
    """The trained LM config with a second ``train:`` section pasted below it: YAML would keep only this one."""
    path = env.config("lm")
    path.write_text(path.read_text(encoding="utf-8") + "train:\n  steps: 2\n", encoding="utf-8")
    return ["train", path, "--run-dir", env.fresh_run()]


DUPLICATE_SECTION = ("task:\n  type: lm\n  train: corpus.txt\n  max_len: 16\ntrain:\n  steps: 6\nmodel:\n"
                     "  d_model: 16\ntrain:\n  lr: 0.1\n")
DUPLICATE_NESTED = "task:\n  type: lm\n  train: corpus.txt\n  max_len: 16\n  tokenizer: char\n  max_len: 32\n"
DUPLICATE_FLOW = "task: {type: lm, train: corpus.txt}\nmodel: {d_model: 16, n_heads: 2, d_model: 32}\n"

C = "config: duplicate keys and out-of-range lengths"
CONFIG_REFUSALS: list[Case] = [
    case(C, "duplicate-train-section-trained-config", _second_train_section, "config.yaml",
         "duplicate key 'train'", "and again at line", "merge the two"),
    case(C, "duplicate-section", config_text(DUPLICATE_SECTION), "bad.yaml", "duplicate key 'train'", "line 5",
         "line 9"),
    case(C, "duplicate-nested-key", config_text(DUPLICATE_NESTED), "bad.yaml", "duplicate key 'task.max_len'",
         "line 4", "line 6"),
    case(C, "duplicate-key-flow-mapping", config_text(DUPLICATE_FLOW), "bad.yaml", "duplicate key 'model.d_model'",
         "line 2"),
    case(C, "task-max-len-beyond-the-data", train_with("lm", lambda env: {"task.max_len": 100_000_000}),
         "task.max_len", "100000000", "too long for the train split", "between 1 and"),
    case(C, "task-max-len-beyond-the-valid-split", train_with("lm", lambda env: {"task.max_len": 1000}),
         "task.max_len", "1000", "valid split", "between 1 and"),
]

# -- data: paths that are not files ---------------------------------------------------------------------------


def _parallel_half_is_fifo(env: Env) -> list[Any]:
    """The parallel format's target side (``train.en``, found from the ``task.train`` prefix) is a named pipe."""
    config = data_config(env, FORMATS["seq2seq-parallel"], FORMATS["seq2seq-parallel"].good)
    fifo(env, "data/train.en")
    return ["train", config, "--run-dir", env.fresh_run()]


def _fifo_overwrite(env: Env) -> list[Any]:
    """``--overwrite`` of a trained run with a named pipe as training data: the run must stay as it was."""
    run = env.run("lm")
    return ["train", env.config("lm", {"task.train": str(fifo(env, "pipe"))}), "--run-dir", run, "--overwrite"]


D = "data: paths that are not files"
DATA_REFUSALS: list[Case] = [
    case(D, "train-symlink-loop", train_with("lm", lambda env: {"task.train": str(symlink_loop(env, "loop"))}),
         "task.train", "loop", "symbolic link loop"),
    case(D, "valid-symlink-loop", train_with("cls", lambda env: {"task.valid": str(symlink_loop(env, "loop"))}),
         "task.valid", "loop", "symbolic link loop"),
    case(D, "train-fifo", train_with("lm", lambda env: {"task.train": str(fifo(env, "pipe"))}), "task.train",
         "pipe", "is a named pipe (FIFO)", "expected a regular file"),
    case(D, "test-fifo", train_with("cls", lambda env: {"task.test": str(fifo(env, "pipe"))}), "task.test",
         "is a named pipe (FIFO)"),
    case(D, "prepared-fifo", train_with("lm", lambda env: {"task.train": DELETE, "task.prepared":
                                                           str(fifo(env, "pipe"))}),
         "task.prepared", "is a named pipe (FIFO)", "expected a prepared corpus folder"),
    case(D, "train-character-device", train_with("lm", lambda env: {"task.train": os.devnull}), "task.train",
         os.devnull, "is a character device"),
    case(D, "parallel-target-fifo", _parallel_half_is_fifo, "train.en", "is a named pipe (FIFO)"),
    case(D, "train-fifo-overwrite", _fifo_overwrite, "task.train", "is a named pipe (FIFO)"),
]

# -- run directory: refused before the first step, --resume below the checkpoint ------------------------------
TOO_BIG_BATCH = {"train.batch_size": 1000}  # the trained LM and classification runs have far fewer examples


def _overwrite_refused(kind: str) -> Argv:
    """``--overwrite`` of a trained run with a config the trainer refuses: the earlier run must stay whole."""
    return lambda env: ["train", env.config(kind, TOO_BIG_BATCH), "--run-dir", env.run(kind), "--overwrite"]


def _resume_with_steps(kind: str, steps: int) -> Argv:
    return lambda env: ["train", env.config(kind, {"train.steps": steps}), "--run-dir", env.run(kind), "--resume"]


R = "run directory: refused runs leave no trace"
S = "run directory: --resume with fewer train.steps"
RUNDIR_REFUSALS: list[Case] = [
    case(R, "too-few-examples-new-run", train_with("lm", lambda env: TOO_BIG_BATCH), "train.batch_size", "1000",
         "too few for one batch", "at most"),
    case(R, "too-few-examples-new-classification-run", train_with("cls", lambda env: TOO_BIG_BATCH),
         "train.batch_size", "too few for one batch"),
    case(R, "too-few-examples-overwrite", _overwrite_refused("lm"), "train.batch_size", "too few for one batch"),
    case(R, "too-few-examples-overwrite-seq2seq", _overwrite_refused("seq2seq"), "train.batch_size",
         "too few for one batch"),
    case(S, "resume-steps-below-checkpoint", _resume_with_steps("lm", 4), "run-lm", "step_000006", "step 6",
         "train.steps=4", "train.steps=6 or more"),
    case(S, "resume-steps-below-checkpoint-classification", _resume_with_steps("cls", 1), "run-cls", "step 6",
         "train.steps=1"),
]

REFUSAL_CASES: list[Case] = [*CONFIG_REFUSALS, *DATA_REFUSALS, *RUNDIR_REFUSALS]
