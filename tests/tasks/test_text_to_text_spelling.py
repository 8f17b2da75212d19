"""A text-to-text run refuses, before any training, a tokenizer that cannot spell its tasks' targets: in memory,
from a pretrained run (``init_from``) and for targets that are text of the data (WSC's referents)."""

from __future__ import annotations

from pathlib import Path

import pytest

from synthformer.cli.main import main
from synthformer.common.config import ConfigError, from_dict
from synthformer.tasks import RunConfig, prepare_data
from synthformer.tasks.suites.glue.text_to_text import TextToText

from .helpers import pretrained_finetuning_yaml, t2t_config


def test_finetuning_from_a_vocabulary_without_underscore_refuses_before_training(tmp_path: Path, capsys) -> None:
    corpus = tmp_path / "corpus.txt"  # every character of the GLUE prefixes and labels but '_'
    corpus.write_text("rte sentence1: sentence2: sst2 entailment not entailment negative positive. The cat sat on "
                      "the mat. A cat sat. It rained all day in Paris. Paris was dry. Anna bought three apples, fruit. "
                      "The museum closed in 1990. one of the best films of the year, acting is wooden. " * 20,
                      encoding="utf-8")
    ft = pretrained_finetuning_yaml(tmp_path, corpus, "V")
    capsys.readouterr()
    assert main(["train", str(ft), "--run-dir", str(tmp_path / "ft"), "--no-progress", "-q"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot spell the rte target 'not_entailment'" in err[0]
    assert "pretrain again" in err[0]
    assert not (tmp_path / "ft" / "checkpoints").exists()  # nothing trained


def test_in_memory_tokenizer_trained_on_the_tasks_passes_and_a_broken_one_is_refused(tmp_path: Path) -> None:
    run = from_dict(RunConfig, t2t_config(tmp_path))
    data = prepare_data(run)  # char tokenizer trained on the tasks' own texts: spells every target
    assert data.tokenizer.decode(data.tokenizer.encode("not_entailment")) == "not_entailment"
    from synthformer.data import build_tokenizer

    broken = build_tokenizer("char", ["rte sentence1: sentence2: sst2 entailment not negative positive"])
    with pytest.raises(ConfigError, match=r"task\.tokenizer: the char tokenizer cannot spell the rte target "
                                          r"'not_entailment'"):
        prepare_data(run, tokenizer=broken)


def test_targets_that_are_text_of_the_data_are_checked_from_the_loaded_examples(tmp_path: Path) -> None:
    class Example:
        def __init__(self, task: str, target: str) -> None:
            self.task, self.target = task, target

    from synthformer.tasks.contract import RawData

    task = from_dict(RunConfig, t2t_config(tmp_path, options={"tasks": ["wsc", "rte"]})).task
    raw = RawData("text_to_text", {"train": [Example("wsc", "the trophy"), Example("rte", "entailment")],
                                   "valid": [Example("wsc", "Mr._Ross")]})
    strings = TextToText().spelled_strings(task, raw)
    assert strings["wsc target"] == ["the trophy", "Mr._Ross"]
    assert strings["rte target"] == ["entailment", "not_entailment"]
    assert strings["wsc prefix"] == ["wsc:"] and strings["rte prefix"] == ["rte"]
    assert TextToText().spelled_strings(task, None)["wsc target"] == []  # a prepared corpus: declared strings only
