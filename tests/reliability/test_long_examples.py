"""Examples longer than the model's ``max_len``: a run that would cut most training examples refuses to start
unless ``task.overflow: truncate`` asks for it, a run with few long examples reports them, and the LRA ListOps
reader drops the parentheses as LRA does (found by that check: 81% of the sample was cut). (Each test failed
before its fix.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from synthformer.cli.main import main
from tests.tasks.helpers import classification_config, write_yaml

pytestmark = pytest.mark.usefixtures("restore_logging")


def _long_examples(tmp_path: Path, max_len: int, **task) -> dict:
    config = classification_config(tmp_path)
    config["task"].update(max_len=max_len, **task)
    return config


def test_a_run_that_would_cut_most_examples_refuses_to_start_unless_truncation_is_asked_for(tmp_path: Path,
                                                                                          capsys) -> None:
    cfg = write_yaml(tmp_path / "cut.yaml", _long_examples(tmp_path, max_len=4))
    assert main(["train", str(cfg), "--run-dir", str(tmp_path / "run"), "--no-progress"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("synthformer train: ")]
    assert len(errors) == 1  # one line (the rest of stderr is the INFO log of loading)
    err = errors[0]
    assert re.search(r"error: task\.max_len: [\d,]+ of [\d,]+ training examples \(\d+%\) are longer than the model "
                     r"allows \(max_len=4\) and would be cut; .*task\.overflow: truncate", err), err
    assert not (tmp_path / "run").exists()  # refused before anything was written

    cfg = write_yaml(tmp_path / "cut.yaml", _long_examples(tmp_path, max_len=4, overflow="truncate"))
    assert main(["train", str(cfg), "--run-dir", str(tmp_path / "run"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    summary = re.search(r"data: train: ([\d,]+) examples, ([\d,]+) \((\d+\.\d)%\) truncated to max_len=4", out)
    assert summary, out
    total, cut, percent = int(summary[1].replace(",", "")), int(summary[2].replace(",", "")), float(summary[3])
    assert cut > total / 2 and abs(100 * cut / total - percent) < 0.1


def test_a_run_with_few_long_examples_starts_and_reports_them(tmp_path: Path, capsys) -> None:
    cfg = write_yaml(tmp_path / "ok.yaml", _long_examples(tmp_path, max_len=64))
    assert main(["train", str(cfg), "--run-dir", str(tmp_path / "run"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"data: train: [\d,]+ examples\n", out), out  # nothing cut: just the count


def test_lra_listops_files_are_read_without_parentheses_as_lra_does(tmp_path: Path) -> None:
    """Found by the check above: the LRA-format reader kept "(" and ")" as tokens, so 81% of the shared sample's
    examples were longer than max_len 2000 and were silently cut."""
    from synthformer.tasks import load_run_config, prepare_data
    from synthformer.tasks.suites.lra import ListOpsExample, write_listops_tsv

    source = "( ( [MAX 2 ) ( ( [MIN 4 ) 7 ) ] ) 9 ) ]"
    for split in ("train", "val"):
        write_listops_tsv([ListOpsExample(source, 9), ListOpsExample("[MIN 3 1 ]", 1)] * 2, tmp_path / f"{split}.tsv")
    cfg = write_yaml(tmp_path / "lo.yaml", {
        "task": {"type": "classification", "format": "listops_tsv", "train": str(tmp_path / "train.tsv"),
                 "valid": str(tmp_path / "val.tsv"), "tokenizer": "word",
                 "tokenizer_options": {"split": "whitespace"}, "max_len": 12},
        "model": {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32}})
    data = prepare_data(load_run_config(cfg), splits=("train",))
    assert data.raw.splits["train"][0][0] == "[MAX 2 [MIN 4 7 ] 9 ]"
    assert data.datasets["train"].length_report.truncated == 0  # 8 tokens (not 16) fit max_len 12
