"""Tiny configs and data files shared by the task and CLI tests (no shared data folder needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

# Real-looking text with enough repetition that a few steps already lower the loss.
LM_TEXT = (
    "def add(a, b):\n    return a + b\n\n"
    "def sub(a, b):\n    return a - b\n\n"
    "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n\n"
) * 40

TINY_MODEL: dict[str, Any] = {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "dropout": 0.0}
TINY_TRAIN: dict[str, Any] = {"steps": 6, "batch_size": 8, "lr": 3e-3, "save_every": 3, "log_every": 2,
                              "eval_every": 3, "eval_steps": 2}

SST_LINES = [
    "1 a stirring , funny and finally transporting re-imagining",
    "0 apparently reassembled from the cutting-room floor",
    "1 a gorgeous , witty , seductive movie",
    "0 the story is lame and the acting is wooden",
    "1 one of the best films of the year",
    "0 a dull , pretentious mess",
] * 8


def write_yaml(path: Path, data: dict[str, Any]) -> Path:
    """Write ``data`` as YAML to ``path``; return the path."""
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def lm_config(tmp: Path, **train: Any) -> dict[str, Any]:
    """A character LM on a small text file in ``tmp`` (10% held out)."""
    text = tmp / "corpus.txt"
    if not text.exists():
        text.write_text(LM_TEXT, encoding="utf-8")
    return {
        "task": {"type": "lm", "train": str(text), "valid_fraction": 0.1, "tokenizer": "char", "max_len": 16},
        "model": {**TINY_MODEL, "decoder_kind": "R+V"},
        "train": {**TINY_TRAIN, **train},
    }


def seq2seq_config(**train: Any) -> dict[str, Any]:
    """Digit-string reversal, generated (no files)."""
    return {
        "task": {"type": "seq2seq", "generator": "algorithmic:reverse",
                 "generator_options": {"num_train": 64, "num_valid": 8, "num_test": 8, "max_len": 5}, "max_len": 8},
        "model": {**TINY_MODEL, "encoder_kind": "D", "decoder_kind": "R"},
        "train": {**TINY_TRAIN, **train},
        "eval": {"train_decode_examples": 4, "beam": 2},
    }


def classification_config(tmp: Path, **train: Any) -> dict[str, Any]:
    """SST-2-style ``label text`` files in ``tmp``."""
    for name, lines in (("train.txt", SST_LINES), ("dev.txt", SST_LINES[:12]), ("test.txt", SST_LINES[12:24])):
        (tmp / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {
        "task": {"type": "classification", "format": "label_text", "train": str(tmp / "train.txt"),
                 "valid": str(tmp / "dev.txt"), "test": str(tmp / "test.txt"), "tokenizer": "word",
                 "tokenizer_options": {"split": "whitespace"}, "max_len": 16},
        "model": {**TINY_MODEL, "encoder_kind": "R+V"},
        "train": {**TINY_TRAIN, **train},
    }
