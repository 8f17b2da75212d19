"""User docs, the library's source and the benchmark scripts never name the project's internal issues ("issue 14",
"the issue's goal"): a reader has no such tracker. Checked in any case (a sentence may start with it)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ISSUE = re.compile(r"\bissues? #?\d+|\b(?:the|this) issue(?:'s)?\b|\bissue's\b", re.IGNORECASE)


def test_readme_docs_source_and_benchmarks_name_no_internal_issue():
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
             for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
                          *sorted((ROOT / "src").rglob("*.py")), *sorted((ROOT / "benchmarks").rglob("*.py")),
                          *sorted((ROOT / "benchmarks").rglob("*.md"))]
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if ISSUE.search(line)]
    assert not found, ("README, docs, src and benchmarks: say what the thing is instead of naming an internal issue:\n"
                       + "\n".join(found))


def test_the_rule_catches_what_it_was_written_for():
    for line in ("The issue's goal: within 10%", "its control (issue 34).", "see Issue #14", "this issue asks"):
        assert ISSUE.search(line), line
    for line in ("a tissue 34", "issued 3 times", "the issuer"):
        assert not ISSUE.search(line), line
