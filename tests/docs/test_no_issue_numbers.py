"""User docs never name the project's internal issue numbers: a reader has no such tracker."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ISSUE = re.compile(r"\b[Ii]ssues? \d+|\b(?:the|this) issue\b")


def test_readme_and_docs_name_no_internal_issue():
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
             for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
                          *sorted((ROOT / "docs" / "results").glob("*.md"))]
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if ISSUE.search(line)]
    assert not found, "say what the thing is instead of an issue number:\n" + "\n".join(found)
