"""The front page's "verdict at our scale" column says what the generated verdicts of its pages say, never more.

Each row of docs/results.md's "What holds" table that reads a table of kinds is tied here to the verdict blocks
(benchmarks/doc_tables/verdicts.py) of its page; the verdict cell has to open with the outcome the noise rule gives
for every claim of those blocks when they all agree ("one seed: not read", "within noise"), or with one of the
outcomes they give, and may say "does not hold" only where a claim is reversed. Rows not listed here (added later,
read by other pages' own blocks) are left to those pages' tests.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from doc_tables.registry import BUILDERS  # noqa: E402
from docs_tables import parse_tables  # noqa: E402

#: the verdict blocks of the registry (every claim of the paper read from the records by the noise rule)
VERDICT_BUILDERS = {name: build for name, build in BUILDERS.items() if name.endswith("-verdicts")}

#: the start of a row's first cell -> the verdict blocks that row summarises
ROWS = {
    "`synthformer compare`": ["compare-verdicts"],
    "Tiny Shakespeare": ["study-shk-verdicts"],
    "Multi30k English to German": ["table2-translation-verdicts"],
    "Multi30k, the appendix variants": ["study-t8-verdicts"],
    "Multi30k, R with 2 to 32 heads": ["study-t9-verdicts"],
    "IMDb": ["imdb-verdicts"],
    "T5 setting: span-corruption": ["t5arch-pretrain-verdicts"],
    "T5 setting: GLUE": ["t5arch-glue-verdicts"],
    "T5 setting: SuperGLUE": ["t5arch-superglue-verdicts"],
    "Long Range Arena": ["lra-verdicts"],
    "Summarization and dialogue": ["table3-verdicts"],
    "Cross-segment matching probes": ["probe-pair-verdicts", "probe-control-verdicts"],
    "Token-mixing benchmarks": ["mixing-mqar-verdicts", "mixing-mad-verdicts"],
}

OUTCOMES = ("one seed: not read", "within noise", "holds", "reversed", "uninformative")


def _outcomes(names: list[str]) -> set[str]:
    found = set()
    for name in names:
        for header, body in parse_tables(VERDICT_BUILDERS[name]()):
            if header and header[-1] == "verdict":
                found |= {next(o for o in OUTCOMES if row[-1].startswith(o)) for row in body}
    return found


def _front_rows() -> dict[str, str]:
    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    for header, body in parse_tables(text):
        if "verdict at our scale" in header:
            col = header.index("verdict at our scale")
            return {row[0]: row[col] for row in body}
    raise AssertionError("docs/results.md has no 'verdict at our scale' column")


def test_every_verdict_block_is_on_a_page() -> None:
    docs = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").rglob("*.md"))
    missing = [n for n in VERDICT_BUILDERS if f"docs_tables.py: {n} -->" not in docs]
    assert not missing, f"verdict blocks no page shows: {missing}"


@pytest.mark.parametrize("start", list(ROWS))
def test_front_page_verdict_follows_the_rule(start: str) -> None:
    rows = {k: v for k, v in _front_rows().items() if k.startswith(start)}
    assert len(rows) == 1, f"no single front-page row starts with {start!r}"
    cell = next(iter(rows.values()))
    outcomes = _outcomes(ROWS[start])
    if len(outcomes) == 1:
        (only,) = outcomes
        assert cell.startswith(only), f"{start}: the rule gives {only!r} for every claim; the page says {cell!r}"
    else:
        assert re.match("|".join(map(re.escape, outcomes)), cell), (
            f"{start}: the rule gives {sorted(outcomes)}; the page's verdict opens with none: {cell!r}")
    if "reversed" not in outcomes:
        assert "does not hold" not in cell, f"{start}: no claim is reversed, yet the page says 'does not hold'"


def test_one_seed_tables_leave_the_baseline_out_and_say_so() -> None:
    from doc_tables.verdicts import verdict_section

    one = [("V", 0, 2.5), ("R", 0, 3.1)]
    text = verdict_section(one, {"R": "R is worse than V"}, direction="min", baseline=4.7)
    assert "one seed: not read" in text and "not given to the rule" in text
    seeds = [("V", s, 2.5 + 0.01 * s) for s in range(3)] + [("R", s, 3.1 + 0.01 * s) for s in range(3)]
    text = verdict_section(seeds, {"R": "R is worse than V"}, direction="min", baseline=4.7)
    assert "| holds |" in text and "beaten by V, R" in text
