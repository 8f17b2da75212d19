"""How many of a finetuning run's answers hold a piece its vocabulary could not spell, recorded per run.

The T5 setting's earlier GLUE/SuperGLUE rows lost answers to a vocabulary without ``_``: ``not_entailment``
decoded as ``not ⁇ entailment``, which no task accepts. A run now refuses such a tokenizer before it trains, and
this script shows the result on the records: for each recorded row of ``t5arch_glue`` and ``t5arch_superglue`` it
reads the answers ``synthformer eval`` wrote (``RUN/eval_valid_hypotheses.txt``, one decoded answer per line, every
task and diagnostic of the run) and counts those that hold an unknown piece (SentencePiece's ``⁇``, the
replacement character of undecodable bytes, or ``<unk>``). One entry per row is appended to
``benchmarks/results/t5arch_unknown_pieces.jsonl``; the tables of docs/results/t5.md show the count beside the
"invalid" answers (answers that are no label of their task, for any reason).

    python benchmarks/studies/t5_unknown_pieces.py            # every recorded row not counted yet
    python benchmarks/studies/t5_unknown_pieces.py --tables t5arch_glue --rerun
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, append, latest, metadata  # noqa: E402 - benchmarks/records.py

#: What an answer shows where its tokenizer had no piece: SentencePiece's rendering of the unknown id, the
#: replacement character (bytes that decode to no character), and the unknown token's own name
UNKNOWN_MARKS = ("\u2047", "\ufffd", "<unk>")
TABLES = ("t5arch_glue", "t5arch_superglue")
RECORD = RESULTS / "t5arch_unknown_pieces.jsonl"
ANSWERS = "eval_valid_hypotheses.txt"


def count_unknown(answers: Path) -> tuple[int, int]:
    """``(answers holding an unknown piece, answers)`` of one answers file (one answer per line)."""
    lines = answers.read_text(encoding="utf-8").splitlines()
    return sum(any(mark in line for mark in UNKNOWN_MARKS) for line in lines), len(lines)


def entry_for(table: str, row: dict[str, Any], command: str) -> dict[str, Any]:
    """The record entry of one recorded finetuning row, read from its run directory.

    Raises:
        SystemExit: the run directory or its answers file is gone (the row cannot be counted here).
    """
    answers = Path(row["run_dir"]) / ANSWERS
    if not answers.is_file():
        raise SystemExit(f"{table} {row['row']}: no {ANSWERS} in {row['run_dir']} (the run directory is needed; "
                         "re-run `synthformer eval RUN --split valid` there)")
    unknown, total = count_unknown(answers)
    invalid = sum(int(v) for k, v in row["valid"].items() if k.endswith("_invalid"))
    return {"table": table, "row": row["row"], "unknown_pieces": unknown, "answers": total, "invalid": invalid,
            "run_dir": row["run_dir"], "row_date": row["date"],
            **metadata(command, threads=None, shared_cpu=False)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=TABLES)
    parser.add_argument("--record", type=Path, default=RECORD)
    parser.add_argument("--rerun", action="store_true", help="count rows already counted again (a new entry)")
    args = parser.parse_args(argv)
    command = "python " + shlex.join(["benchmarks/studies/t5_unknown_pieces.py", *(argv if argv is not None else
                                                                            sys.argv[1:])])
    done = set()  # (table, row, the row's date): a row re-trained later (a new date) is counted again
    if args.record.exists():
        for table in args.tables:
            done |= {(table, e["row"], e["row_date"]) for e in latest(args.record, table).values()}
    for table in args.tables:
        for name, row in latest(RESULTS / f"{table}.jsonl", table).items():
            if "run_dir" not in row or ((table, name, row["date"]) in done and not args.rerun):
                continue
            if not Path(row["run_dir"]).exists():
                print(f"{table} {name}: skipped, its run directory {row['run_dir']} is not on this machine")
                continue
            entry = entry_for(table, row, command)
            append(args.record, entry)
            print(f"{table} {name}: {entry['unknown_pieces']} of {entry['answers']} answers hold an unknown piece "
                  f"({entry['invalid']} invalid)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
