"""Hand-typed measurements in the user docs: a number with a unit of time, memory, size, speed, FLOPs, a ratio
(``1.3x``), a percentage or a parameter count (``2.3M``) written in README.md or docs/**/*.md outside a generated
block or an inline marker (``doc_tables/markers.py``). Each has to come from a record (a generated table, an inline
``<!-- n:... -->`` marker), be written in words, or be one of :data:`ALLOWED`: configuration values, goals and
the paper's (or LRA's) own numbers, each entry with its reason.

    python benchmarks/doc_tables/hand_numbers.py  # list every hand-typed measurement as doc:line: number | the line

Tables outside generated blocks are not scanned here: ``docs_tables.unrecorded_tables`` accounts for each of
them (a section mark says why it is not generated). Inline code (`` `...` ``) and HTML comments are skipped, since
they hold settings (`` `validation[:2%]` ``) and reasons; fenced code blocks are scanned (a command's comment
saying how long it takes is a measurement too), and so are ``<!-- no-check: ... -->`` paragraphs: that mark
excuses a paragraph from ``docs_tables.restated_numbers`` only, not an unrecorded measurement.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from doc_tables.markers import BLOCK, INLINE, ROOT, TABLE_LINE, doc_paths, masked  # noqa: E402

_NUM = r"\d[\d,]*(?:\.\d+)?"
_UNITS = (r"\s?%"  # a percentage
          r"|x\b"  # a ratio, written against the number: 1.3x
          r"|\s?(?:ms|sec|seconds?|min|minutes?|hours?|days?)\b|\ss\b"  # time (not "1s", a plural of 1)
          r"|\s(?:h)\b"
          r"|\s?(?:[KMGT]iB|[kKMGT]B|bytes)\b"  # memory and sizes
          r"|\s?[TGP]?FLOPs?\b"
          r"|\s(?:tokens|steps|samples|examples)/s\b"  # speed
          r"|M\b|\sM\s(?:params|parameters)\b")  # parameter counts: 2.3M
MEASURE = re.compile(rf"(?<![\w.\-/^]){_NUM}(?:\s?(?:-|to)\s?{_NUM})?(?:{_UNITS})")
INLINE_CODE = re.compile(r"`[^`\n]+`")
COMMENT = re.compile(r"<!--.*?-->", re.S)


@dataclass(frozen=True)
class Allowed:
    """Numbers that may stay hand-typed: in ``doc`` (a path relative to the root, ``*`` for any), on a line that
    ``line`` matches, for ``reason``."""

    doc: str
    line: str
    reason: str

    def covers(self, doc: str, text: str) -> bool:
        """Whether this entry allows the numbers of line ``text`` of ``doc`` (``docs/results/*``: any page there)."""
        where = self.doc == "*" or self.doc == doc or (self.doc.endswith("*") and doc.startswith(self.doc[:-1]))
        return where and re.search(self.line, text) is not None


ALLOWED = [
    Allowed("*", r"24 GB", "the development machine's memory: a specification, not a measurement"),
    Allowed("README.md", r"about \d+ minutes on the 2-core development CPU",
            "compare's runtime: kept equal to benchmarks/results/compare.jsonl by "
            "tests/reliability/test_progress_output.py (the same number is in both --help texts)"),
    Allowed("README.md", r"15% noise in spans", "T5's span-corruption setting"),
    Allowed("docs/data.md", r"default (100 MB|256 MiB)", "prepare's option defaults"),
    Allowed("docs/data.md", r"up to 1 GiB of token files", "the size up to which training scans a prepared corpus's "
            "ids at start (ID_SCAN_BYTES): a setting"),
    Allowed("docs/distributed.md", r"--signal=USR1@300|some 30 s before SIGKILL", "SLURM settings and defaults"),
    Allowed("docs/distributed.md", r"split '(train|validation)\[", "the config's data splits, in the plan's output"),
    Allowed("docs/distributed.md", r"\d bytes per (trainable )?parameter|A 1 GB file plans|3x the fp32 model",
            "the sizes of fp32 numbers and what follows from them; a test's input size"),
    Allowed("docs/reliability.md", r"default 600 s|collective_timeout_s=600 s|tokens/s over 20 s",
            "a config default; the benchmark script's window"),
    Allowed("docs/lra.md", r"at the 1% level|last 10% of CIFAR-10|first 1,000 bytes",
            "test levels, LRA's split and the configs' lengths: settings"),
    Allowed("docs/huggingface.md", r"at most 31 bytes", "the test's input size"),
    Allowed("docs/lra.md", r"planned peak of [\d.]+ GiB",
            "the dry run's planned peaks, not measurements: kept equal to plan_run's by "
            "tests/bench/test_memory_check.py; the laptop's 8 GB is a specification"),
    Allowed("docs/streaming.md", r"8 bytes per example|2\.4 GB for 300 M", "arithmetic on int64 sizes"),
    Allowed("docs/benchmarks.md", r"goal|the paper: |within 10% of|90% of t|within 8 minutes|at most 3 minutes",
            "a goal, a time limit the script sets, or the paper's own figure"),
    Allowed("docs/benchmarks.md", r"--tolerance|2% above", "the guard's tolerance setting"),
    Allowed("docs/benchmarks.md", r"10M more|paper's 223M|About 10M", "the paper's parameter counts, quoted"),
    Allowed("docs/benchmarks.md", r"data\.py --quick|corpus of 0\.5 GB|first 20 MB|--memory-cap|--timeout|"
            r"corpora, 0\.5 GB and 5 GB|`prepare` of 5 GB|0\.5 GB prepare|5 GB prepare|5 GB run's peak|16 GB cap|"
            r"loop at 0\.5 GB", "benchmarks/speed/data.py's corpus sizes (the record's rows are named by them), its "
            "memory cap and option defaults: settings"),
    Allowed("docs/benchmarks.md", r"8 MiB of logits per block|setting of 16 MiB|(8|16) MiB blocks|8 MiB ones|"
            r"\(3 x 8 MiB\)|the 32 MiB L3 here",
            "the block-size setting (chunk_elements: 2^21 fp32 logits, 8 MiB; an earlier 16 MiB), "
            "the logits' size at L=1024 and the L3 cache's size: settings, shapes and a specification"),
    Allowed("docs/benchmarks.md", r"logits are 32 MiB|2 heads \(8 MiB\)|free several 8 MiB|= 268M at 4K|"
            r"AdamW moments \(4\.3 GB", "sizes computed from the shapes (fp32 bytes of an L x L tensor)"),
    Allowed("docs/results/*", r"the last 10% of the text|5% of the\s*$|\d+% noise|20 minutes of training|"
            r"within 15 minutes|within 30 minutes|held out for validation|10% of the steps|last 4%|first 96%|"
            r"10% of the dialogues|target at least 80%",
            "the experiments' settings and the project's targets (a time limit set, not measured)"),
    Allowed("docs/results/*", r"[Cc]hance|of a guess|uniform guess|around 50%|just above 50%",
            "chance: one over the number of classes"),
    Allowed("docs/results/*", r"LRA's 36-37%|\(Table 7|paper \(50\.5|perplexity\)|steps/s\.$|at 1\.09",
            "the paper's or LRA's own numbers, quoted"),
]

@dataclass(frozen=True)
class Found:
    """One hand-typed measurement."""

    doc: str
    line: int
    number: str
    text: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.number} | {self.text.strip()[:100]}"


def hand_numbers(text: str, doc: str, allowed: list[Allowed] | None = None) -> list[Found]:
    """The measurement-like numbers of ``text`` (the doc ``doc``) outside generated text, code spans, comments and
    tables, less those an entry of ``allowed`` (default :data:`ALLOWED`) covers."""
    allowed = ALLOWED if allowed is None else allowed
    scanned = masked(text, (BLOCK, INLINE, TABLE_LINE, COMMENT, INLINE_CODE))
    lines, found = text.splitlines(), []
    for number, line in enumerate(scanned.splitlines(), start=1):
        for m in MEASURE.finditer(line):
            original = lines[number - 1]
            if not any(a.covers(doc, original) for a in allowed):
                found.append(Found(doc, number, m[0], original))
    return found


def scan(paths: list[Path] | None = None, root: Path = ROOT) -> list[Found]:
    """Every hand-typed measurement of the user docs."""
    return [f for path in paths or doc_paths(root)
            for f in hand_numbers(path.read_text(encoding="utf-8"), str(path.relative_to(root)))]


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    found = scan()
    print("\n".join(map(str, found)) or "no hand-typed measurement outside the allowlist")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
