"""``benchmarks/studies/t5_unknown_pieces.py``: answers with a piece the vocabulary could not spell are counted per
recorded finetuning row, from the answers file of its run directory, once per row (a re-trained row is counted
again)."""

from __future__ import annotations

import json

from .scripts import load_script


def _record_row(results, run_dir, answers: list[str], date: str) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "eval_valid_hypotheses.txt").write_text("\n".join(answers) + "\n", encoding="utf-8")
    row = {"table": "t5arch_glue", "row": "V", "run_dir": str(run_dir), "date": date,
           "valid": {"rte_invalid": 2, "sst2_invalid": 1, "rte_accuracy": 50.0}}
    with open(results / "t5arch_glue.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")


def test_unknown_pieces_are_counted_once_per_recorded_row(tmp_path, monkeypatch, capsys):
    script = load_script("studies/t5_unknown_pieces", monkeypatch)
    results = tmp_path / "results"
    results.mkdir()
    monkeypatch.setattr(script, "RESULTS", results)
    record = tmp_path / "unknown.jsonl"
    # the old vocabulary's failure (SentencePiece's unknown piece), a replacement character, and clean answers
    _record_row(results, tmp_path / "runs" / "V", ["not \u2047 entailment", "entailment", "posit\ufffdve",
                                                   "acceptable", "not_entailment"], "2026-01-01 00:00 UTC")

    assert script.main(["--tables", "t5arch_glue", "--record", str(record)]) == 0
    (entry,) = [json.loads(line) for line in record.read_text().splitlines()]
    assert (entry["row"], entry["unknown_pieces"], entry["answers"], entry["invalid"]) == ("V", 2, 5, 3)
    assert "2 of 5 answers hold an unknown piece" in capsys.readouterr().out

    script.main(["--tables", "t5arch_glue", "--record", str(record)])  # counted already: nothing appended
    assert len(record.read_text().splitlines()) == 1
    _record_row(results, tmp_path / "runs" / "V", ["entailment"], "2026-01-02 00:00 UTC")  # the row re-trained
    script.main(["--tables", "t5arch_glue", "--record", str(record)])
    last = json.loads(record.read_text().splitlines()[-1])
    assert (last["unknown_pieces"], last["answers"], last["row_date"]) == (0, 1, "2026-01-02 00:00 UTC")
