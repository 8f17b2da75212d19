"""Adding a task type is one module and a registration (docs/extending.md): a toy task type defined here, in the
test file, trains through the real pipeline and the real command line, and is then evaluated and used."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from synthformer.cli.main import main
from synthformer.data import DataError
from synthformer.tasks import (
    RawData,
    evaluate_run,
    get_task_type,
    list_task_types,
    load_run_config,
    register_task_type,
    train_run,
    unregister_task_type,
)
from synthformer.tasks.sources import read_file_splits
from synthformer.tasks.types.classification import Classification

from .helpers import TINY_MODEL


class PairClassification(Classification):
    """Sentence-pair classification (entailment, paraphrase): two texts per example, joined by a separator, then
    the classifier of the ``classification`` type. Reads JSONL records; the field names and the separator are the
    task type's own options (``task.options``)."""

    name = "pair_classification"
    formats = ("jsonl",)
    suffix_formats = {".jsonl": "jsonl"}
    option_defaults = {"first": "premise", "second": "hypothesis", "separator": " | "}

    def read(self, task: Any) -> RawData:
        opts = task.task_options

        def read_pairs(task: Any, path: str) -> list[tuple[str, str]]:
            examples = []
            for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
                record = json.loads(line)
                missing = [f for f in (opts["first"], opts["second"], task.label_field) if f not in record]
                if missing:
                    raise DataError(path, number, f"record has no field(s) {missing}")
                text = f"{record[opts['first']]}{opts['separator']}{record[opts['second']]}"
                examples.append((text, str(record[task.label_field])))
            return examples

        return RawData(self.name, read_file_splits(task, read_pairs))


WORDS = ["red", "blue", "green", "small", "large", "cat", "dog", "bird"]


def _write_pairs(path: Path, n: int, seed: int) -> None:
    """Label 1 iff both sentences share their first word: a pairwise property, as in the paper's GLUE tasks."""
    import random

    rng = random.Random(seed)
    lines = []
    for i in range(n):
        a = [rng.choice(WORDS) for _ in range(3)]
        b = [a[0] if i % 2 else rng.choice(WORDS)] + [rng.choice(WORDS) for _ in range(2)]
        lines.append(json.dumps({"premise": " ".join(a), "hypothesis": " ".join(b), "label": int(a[0] == b[0])}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def pair_task():
    register_task_type(PairClassification)
    yield get_task_type("pair_classification")
    unregister_task_type("pair_classification")


def _config(tmp: Path) -> Path:
    _write_pairs(tmp / "train.jsonl", 64, seed=0)
    _write_pairs(tmp / "valid.jsonl", 16, seed=1)
    config = {
        "task": {"type": "pair_classification", "train": str(tmp / "train.jsonl"), "valid": str(tmp / "valid.jsonl"),
                 "options": {"separator": " ||| "}, "tokenizer": "word",
                 "tokenizer_options": {"split": "whitespace"}, "max_len": 12},
        "model": {**TINY_MODEL, "encoder_kind": "R+V"},
        "train": {"steps": 6, "batch_size": 8, "lr": 3e-3, "save_every": 3, "log_every": 2, "eval_every": 3},
    }
    path = tmp / "pairs.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_a_task_type_registered_in_a_test_trains_through_pipeline_and_cli(pair_task, tmp_path: Path,
                                                                           capsys) -> None:
    assert "pair_classification" in list_task_types()
    config = _config(tmp_path)
    run = load_run_config(config)
    assert run.task.task_options["separator"] == " ||| " and run.model.arch == "classifier"

    # the library pipeline
    result = train_run(run, tmp_path / "api")
    assert result.steps == 6 and 0.0 <= result.metrics["eval_accuracy"] <= 1.0
    report = evaluate_run(tmp_path / "api")
    assert report.split == "valid" and report.metrics["examples"] == 16

    # the command line: train, eval, generate
    assert main(["train", str(config), "--run-dir", str(tmp_path / "cli"), "--no-progress"]) == 0
    assert (tmp_path / "cli" / "labels.json").is_file()
    assert main(["eval", str(tmp_path / "cli")]) == 0
    capsys.readouterr()
    assert main(["generate", str(tmp_path / "cli"), "--prompt", "red cat dog ||| red bird cat"]) == 0
    label, probability = capsys.readouterr().out.strip().split("\t")
    assert label in ("0", "1") and 0.5 <= float(probability) <= 1.0


def test_a_task_types_options_and_formats_are_checked(pair_task, tmp_path: Path) -> None:
    config = yaml.safe_load(_config(tmp_path).read_text(encoding="utf-8"))
    config["task"]["options"] = {"seperator": "|"}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(config), encoding="utf-8")
    with pytest.raises(ValueError, match=r"task\.options: unknown option\(s\) \['seperator'\].*valid: first, "
                                         r"second, separator"):
        load_run_config(bad)
    with pytest.raises(ValueError, match=r"task\.format: expected one of \['jsonl'\] for type 'pair_classification'"):
        load_run_config(_config(tmp_path), ["task.format=csv"])


def test_an_unknown_task_type_lists_the_registered_ones() -> None:
    with pytest.raises(ValueError, match=r"task\.type: unknown task type 'lm2'.*did you mean 'lm'.*valid: lm, seq2seq, "
                                         r"classification"):
        load_run_config(None, ["task.type=lm2", "task.generator=pystdlib"])
