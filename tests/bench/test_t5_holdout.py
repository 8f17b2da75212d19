"""``benchmarks/studies/t5_holdout.py``: a GLUE folder for tuning without the dev sets, each training split cut into a
training part and a held-out part in the official layout, which the text-to-text task then reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from .scripts import load_script


@pytest.fixture()
def holdout(monkeypatch):
    return load_script("studies/t5_holdout", monkeypatch)


def _glue(root: Path) -> Path:
    for task, header in (("CoLA", False), ("MRPC", True), ("RTE", True), ("SST-2", True), ("STS-B", True)):
        (root / task).mkdir(parents=True)
        rows = [f"row{i}\t{i % 2}\n" for i in range(40)]
        (root / task / "train.tsv").write_text(("h1\th2\n" if header else "") + "".join(rows), encoding="utf-8")
        (root / task / "dev.tsv").write_text("the official dev set, never read\n", encoding="utf-8")
    return root


def test_each_training_split_is_cut_without_loss_or_overlap(holdout, tmp_path, capsys):
    glue = _glue(tmp_path / "glue")
    assert holdout.main(["--glue", str(glue), "--out", str(tmp_path / "out"), "--fraction", "0.25"]) == 0
    assert "RTE: 30 training rows, 10 held out" in capsys.readouterr().out
    for task, header in (("CoLA", False), ("RTE", True)):
        train = (tmp_path / "out" / task / "train.tsv").read_text(encoding="utf-8").splitlines()
        dev = (tmp_path / "out" / task / "dev.tsv").read_text(encoding="utf-8").splitlines()
        if header:
            assert train[0] == dev[0] == "h1\th2"
            train, dev = train[1:], dev[1:]
        assert len(dev) == 10 and not set(train) & set(dev)
        assert sorted(train + dev) == sorted(f"row{i}\t{i % 2}" for i in range(40))
        assert "official dev" not in "".join(dev)
    again = tmp_path / "again"
    holdout.main(["--glue", str(glue), "--out", str(again), "--fraction", "0.25"])  # seeded: the same cut
    assert (again / "RTE" / "dev.tsv").read_bytes() == (tmp_path / "out" / "RTE" / "dev.tsv").read_bytes()


def test_bad_arguments_are_named(holdout, tmp_path):
    with pytest.raises(SystemExit):
        holdout.main(["--glue", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")])
    with pytest.raises(SystemExit):
        holdout.main(["--glue", str(_glue(tmp_path / "g")), "--out", str(tmp_path / "o"), "--fraction", "1.5"])
