"""``synthformer prepare``: prepare, run again (nothing to do), ``--check``, and the errors of its arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synthformer.cli.main import main
from tests.tasks.helpers import LM_TEXT, write_yaml

pytestmark = pytest.mark.usefixtures("restore_logging")


def test_prepare_then_check_then_nothing_to_do(tmp_path: Path, capsys) -> None:
    corpus = tmp_path / "corpus.jsonl"
    words = LM_TEXT.split()
    corpus.write_text("".join(json.dumps({"text": " ".join(words[i:i + 9])}) + "\n" for i in range(0, 80, 3)))
    config = write_yaml(tmp_path / "c.yaml", {"task": {"type": "lm", "train": str(tmp_path / "*.jsonl"),
                                                       "valid_fraction": 0.2, "tokenizer": "char"}})
    out = tmp_path / "prepared"
    assert main(["prepare", str(config), "--out", str(out), "--no-progress", "-q", "--shard-tokens", "256"]) == 0
    printed = capsys.readouterr().out
    assert "train: " in printed and "valid: " in printed and f"task.prepared={out}" in printed
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["command"].endswith(f"--out {out} --shard-tokens 256")  # what a re-run must repeat
    assert main(["prepare", "--check", str(out), "-q"]) == 0
    assert f"{out}: ok" in capsys.readouterr().out
    assert main(["prepare", str(config), "--out", str(out), "--no-progress", "-q", "--shard-tokens", "256"]) == 0
    assert "already prepared" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["prepare"], "give CONFIG and --out DIR"),
    (["prepare", "--check", "x", "--out", "y"], "--check DIR takes no CONFIG and no --out"),
    (["prepare", "c.yaml", "--out", "o", "--workers", "0"], "--workers: expected an integer >= 1"),
])
def test_argument_errors(argv: list[str], message: str, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_yaml(tmp_path / "c.yaml", {"task": {"type": "lm", "train": "corpus.txt", "valid_fraction": 0.2}})
    (tmp_path / "corpus.txt").write_text(LM_TEXT)
    assert main(argv) == 2
    assert message in capsys.readouterr().err
