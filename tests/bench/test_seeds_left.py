"""``benchmarks/doc_tables/seeds_left.py``: what a seed study has left, at the pace of its recorded runs."""

from __future__ import annotations

import json
from pathlib import Path

from .scripts import load_script


def test_seeds_left_and_their_hours_at_the_recorded_pace(tmp_path: Path, monkeypatch) -> None:
    table = load_script("doc_tables/seeds_left", monkeypatch)
    record = tmp_path / "seed_studies.jsonl"
    runs = [("V", 0, 600), ("V", 1, 1200), ("R", 0, 600), ("R", 0, 1800)]  # R's seed 0 twice: the newest wins
    record.write_text("".join(json.dumps({"table": "seed_studies", "row": f"imdb/{k}/seed{s}", "study": "imdb",
                                          "variant": k, "seed": s, "wall_seconds": w}) + "\n"
                              for k, s, w in runs), encoding="utf-8")
    monkeypatch.setattr(table.seed_studies, "RECORD", record)
    lines = table.seeds_left_table("imdb").splitlines()
    # V: seeds 0 and 1 at a median of 15 minutes, 3 of 5 left (0.75 h), 1 short of three (0.25 h);
    # R: seed 0 (its newer run's 30 minutes, counted once), 4 left (2 h), 2 short (1 h)
    assert "| imdb | V | 0, 1 | 3 | 15 | 0.8 | 0.2 |" in lines
    assert "| imdb | R | 0 | 4 | 30 | 2.0 | 1.0 |" in lines
    assert "| all | | | | | 2.8 | 1.2 |" in lines


def test_a_kind_without_a_recorded_run_has_no_pace(tmp_path: Path, monkeypatch) -> None:
    table = load_script("doc_tables/seeds_left", monkeypatch)
    monkeypatch.setattr(table.seed_studies, "RECORD", tmp_path / "none.jsonl")
    assert "| imdb | V | none | 5 | — | — | — |" in table.seeds_left_table("imdb").splitlines()
