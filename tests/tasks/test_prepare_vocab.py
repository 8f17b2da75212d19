"""One config prepares what it asks: ``prepare`` refuses a ``task.vocab_size`` its training text cannot reach
(before it writes anything), ``--accept-smaller-vocab`` takes the smaller vocabulary and records the size asked, and
``train`` with the same config then accepts the corpus, while another size is still refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from synthformer.cli.main import main
from synthformer.common.config import ConfigError, from_dict
from synthformer.tasks import RunConfig
from synthformer.tasks.prepared import prepare_corpus
from synthformer.tasks.prepared.reading import open_prepared
from synthformer.tasks.prepared.tokenizer import ASKED_VOCAB_SIZE

from .helpers import LM_TEXT, TINY_MODEL, TINY_TRAIN, write_yaml

TASK = {"type": "lm", "valid_fraction": 0.25, "tokenizer": "char", "max_len": 16, "vocab_size": 500}


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text(LM_TEXT[:2000], encoding="utf-8")  # about 30 distinct characters
    return path


def _run(**task: Any) -> RunConfig:
    return from_dict(RunConfig, {"task": {**TASK, **task}, "model": dict(TINY_MODEL), "train": dict(TINY_TRAIN)})


def test_an_unreachable_size_is_refused_before_anything_is_written(tmp_path: Path, corpus: Path) -> None:
    task = _run(train=str(corpus)).task
    with pytest.raises(ConfigError, match=r"task\.vocab_size: 500 asked, but the training text gives a char "
                                          r"vocabulary of only \d+ ids; set task\.vocab_size=\d+, .*"
                                          r"--accept-smaller-vocab"):
        prepare_corpus(task, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_size_it_names_prepares(tmp_path: Path, corpus: Path) -> None:
    with pytest.raises(ConfigError) as err:
        prepare_corpus(_run(train=str(corpus)).task, tmp_path / "out")
    reached = int(str(err.value).split("set task.vocab_size=")[1].split(",")[0])
    result = prepare_corpus(_run(train=str(corpus), vocab_size=reached).task, tmp_path / "out")
    assert result.manifest["tokenizer"]["vocab_size"] == reached
    assert ASKED_VOCAB_SIZE not in result.manifest["tokenizer"]


def test_accepted_smaller_vocabulary_is_recorded_and_train_accepts_the_same_config(tmp_path: Path,
                                                                                     corpus: Path) -> None:
    result = prepare_corpus(_run(train=str(corpus)).task, tmp_path / "out", accept_smaller_vocab=True)
    tok = result.manifest["tokenizer"]
    assert tok[ASKED_VOCAB_SIZE] == 500 and tok["vocab_size"] < 500
    corpus_dir = str(tmp_path / "out")
    assert open_prepared(_run(prepared=corpus_dir)).vocab_size == tok["vocab_size"]  # the config's own 500
    open_prepared(_run(prepared=corpus_dir, vocab_size=None))
    with pytest.raises(ConfigError, match=rf"task\.vocab_size: 400, but the prepared corpus .* has a vocabulary "
                                          rf"of {tok['vocab_size']} ids; set task\.vocab_size={tok['vocab_size']}"):
        open_prepared(_run(prepared=corpus_dir, vocab_size=400))


def test_the_cli_flag_and_the_continue_command(tmp_path: Path, corpus: Path, capsys) -> None:
    config = write_yaml(tmp_path / "c.yaml", {"task": {**TASK, "train": str(corpus)}})
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(["prepare", str(config), "--out", str(out), "--no-progress"]) == 2
    assert "--accept-smaller-vocab" in capsys.readouterr().err and not out.exists()
    assert main(["prepare", str(config), "--out", str(out), "--no-progress", "--accept-smaller-vocab"]) == 0
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["tokenizer"][ASKED_VOCAB_SIZE] == 500
    assert manifest["command"].endswith("--accept-smaller-vocab")  # a continued prepare checks the size again
