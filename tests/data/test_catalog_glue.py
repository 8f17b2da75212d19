"""GLUE and SuperGLUE fetched from folders in the hub's layout (``nyu-mll/glue``, ``aps/super_glue``: one
configuration per task, declared in the card's YAML, the hub's field names and integer labels) are written in
the official layout that the text-to-text readers read, with the labels the hub rows give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synthformer.cli.main import main
from synthformer.tasks.suites.glue.reader import read_glue_split

from .catalog_helpers import no_local_copies

_GLUE = {
    "cola": [{"sentence": "The boy ran.", "label": 1, "idx": 0}, {"sentence": "Ran boy the.", "label": 0, "idx": 1}],
    "sst2": [{"sentence": "a gem ", "label": 1, "idx": 0}, {"sentence": "dull\tand slow", "label": 0, "idx": 1}],
    "mrpc": [{"sentence1": "A cat sat.", "sentence2": "A cat was sitting.", "label": 1, "idx": 0},
             {"sentence1": "It rained.", "sentence2": "The sun shone.", "label": 0, "idx": 1}],
    "stsb": [{"sentence1": "A man plays.", "sentence2": "A man is playing.", "label": 4.75, "idx": 0},
             {"sentence1": "A dog.", "sentence2": "The stock fell.", "label": 0.0, "idx": 1}],
    "rte": [{"sentence1": "Paris is in France.", "sentence2": "Paris is French.", "label": 0, "idx": 0},
            {"sentence1": "It is cold.", "sentence2": "It is hot.", "label": 1, "idx": 1}],
    "qnli": [{"question": "Where is Paris?", "sentence": "Paris is in France.", "label": 0, "idx": 0},
             {"question": "Who won?", "sentence": "It rained.", "label": 1, "idx": 1}],
}
_SUPERGLUE = {
    "boolq": [{"question": "is it cold", "passage": "It snows.", "idx": 0, "label": 1}],
    "cb": [{"premise": "He left.", "hypothesis": "He is gone.", "idx": 0, "label": 0},
           {"premise": "He left.", "hypothesis": "He stayed.", "idx": 1, "label": 1}],
    "copa": [{"premise": "It rained.", "choice1": "I got wet.", "choice2": "I got dry.", "question": "effect",
              "idx": 0, "label": 0}],
    "multirc": [{"paragraph": "Tom has a red car.", "question": "What color?", "answer": "red",
                 "idx": {"paragraph": 0, "question": 0, "answer": 0}, "label": 1},
                {"paragraph": "Tom has a red car.", "question": "What color?", "answer": "blue",
                 "idx": {"paragraph": 0, "question": 0, "answer": 1}, "label": 0}],
    "rte": [{"premise": "Paris is in France.", "hypothesis": "Paris is French.", "idx": 0, "label": 0}],
    "wic": [{"word": "bank", "sentence1": "The river bank.", "sentence2": "The bank lent money.", "start1": 10,
             "start2": 4, "end1": 14, "end2": 8, "idx": 0, "label": 0}],
    "wsc.fixed": [{"text": "Mark told Pete he was late .", "span1_index": 0, "span2_index": 3, "span1_text": "Mark",
                   "span2_text": "he", "idx": 0, "label": 1}],
    "axb": [{"sentence1": "The cat sat.", "sentence2": "A cat sat.", "idx": 0, "label": 0}],
    "axg": [{"premise": "The nurse said she was tired.", "hypothesis": "The nurse was tired.", "idx": 0, "label": 0},
            {"premise": "The nurse said he was tired.", "hypothesis": "The nurse was tired.", "idx": 1, "label": 0}],
}


def _hub_folder(folder: Path, configs: dict[str, list[dict]], splits: tuple[str, ...]) -> Path:
    """A data set in the hub's layout: ``<config>/<split>.jsonl`` and a card declaring the configurations."""
    card = ["---", "configs:"]
    for config, rows in configs.items():
        card += [f"- config_name: {config}", "  data_files:"]
        for split in (("test",) if config in ("axb", "axg") else splits):
            (folder / config).mkdir(parents=True, exist_ok=True)
            (folder / config / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows),
                                                           encoding="utf-8")
            card += [f"  - split: {split}", f"    path: {config}/{split}.jsonl"]
    (folder / "README.md").write_text("\n".join([*card, "---", ""]), encoding="utf-8")
    return folder


@pytest.mark.usefixtures("restore_logging")
def test_glue_from_the_hub_layout_reads_as_the_official_tsvs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_local_copies(monkeypatch, tmp_path, offline=True)  # a local folder needs no network
    hub = _hub_folder(tmp_path / "hub", _GLUE, ("train", "validation"))
    assert main(["data", "get", "glue", "--from", str(hub), "--out", str(tmp_path / "out")]) == 0
    glue = tmp_path / "out" / "glue"
    assert (glue / "CoLA" / "train.tsv").read_text(encoding="utf-8").startswith("hub\t1\t\tThe boy ran.\n")
    assert (glue / "MRPC" / "dev.tsv").read_text(encoding="utf-8").startswith("\ufeffQuality\t#1 ID")
    expected = {"cola": ["acceptable", "unacceptable"], "sst2": ["positive", "negative"],
                "mrpc": ["equivalent", "not_equivalent"], "stsb": ["4.8", "0.0"],
                "rte": ["entailment", "not_entailment"], "qnli": ["entailment", "not_entailment"]}
    for task, targets in expected.items():
        for split in ("train", "dev"):
            examples = read_glue_split(task, glue, split)
            assert [e.target for e in examples] == targets, (task, split)
    assert read_glue_split("sst2", glue, "train")[1].source == "sst2 sentence: dull and slow"  # no tab left


@pytest.mark.usefixtures("restore_logging")
def test_superglue_from_the_hub_layout_reads_as_the_official_folders(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    no_local_copies(monkeypatch, tmp_path, offline=True)
    hub = _hub_folder(tmp_path / "hub", _SUPERGLUE, ("train", "validation", "test"))
    assert main(["data", "get", "superglue", "--from", str(hub), "--out", str(tmp_path / "out")]) == 0
    sg = tmp_path / "out" / "superglue"
    assert (sg / "AX-b" / "AX-b.jsonl").is_file() and (sg / "WSC" / "val.jsonl").is_file()
    expected = {"boolq": ["True"], "cb": ["entailment", "contradiction"], "copa": ["choice1"],
                "multirc": ["True", "False"], "super_glue_rte": ["entailment"], "wic": ["False"], "wsc": ["Mark"]}
    for task, targets in expected.items():
        for split in ("train", "dev"):
            assert [e.target for e in read_glue_split(task, sg, split)] == targets, (task, split)
    assert [e.target for e in read_glue_split("axb", sg, "dev")] == ["entailment"]
    assert [e.group for e in read_glue_split("axg", sg, "dev")] == ["pair0", "pair0"]
