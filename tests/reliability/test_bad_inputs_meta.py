"""The bad-input suite about itself: the count that ``docs/reliability.md`` publishes is the table's, every case
has its own id, and what the in-process check sees is what a real terminal sees: a few cases run as real
``python -m synthformer.cli.main`` processes show one error line and no traceback, and with ``--debug`` the
traceback."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from .bad_inputs import CASES, counts_by_category
from .harness import VERBS, Case, Env, Trained, snapshot, trained  # noqa: F401 - trained: the fixture

DOC = Path(__file__).resolve().parents[2] / "docs" / "reliability.md"
# A bad config file and a damaged run directory (each process pays torch's import: about 2 s of CPU).
IN_A_REAL_PROCESS = ("config-truncated", "weights-truncated-generate")


def test_the_published_counts_are_the_tables() -> None:
    text = DOC.read_text(encoding="utf-8")
    passing = sum(1 for c in CASES if not c.xfail)
    headline = re.search(r"\*\*(\d+) bad inputs tried, 0 tracebacks, 0 files changed\*\*", text)
    assert headline and int(headline.group(1)) == passing, "update the headline of docs/reliability.md"
    awaiting = re.search(r"(\d+) more cases? awaits? a fix", text)  # cases marked xfail, if any
    assert (int(awaiting.group(1)) if awaiting else 0) == len(CASES) - passing
    for category, count in counts_by_category().items():
        assert f"| {category} | {count} |" in text, f"docs/reliability.md: update the row of {category!r}"
    # the inputs recovered from (exit 0 with a warning or a note), and each group's total above its table
    recovered = re.search(r"(\d+) cases are inputs the program recovers from", text)
    assert recovered and int(recovered.group(1)) == sum(1 for c in CASES if c.exit_code == 0)
    for group, prefix in (("Command lines", "cli:"), ("Run configs", "config:"), ("Data", "data:"),
                          ("Run directories", "run directory:")):
        total = sum(n for category, n in counts_by_category().items() if category.startswith(prefix))
        assert f"\n{group} ({total}): " in text, f"docs/reliability.md: {group} ({total})"


def test_every_case_has_its_own_id() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


def _start(case: Case, env: Env, *extra: str) -> tuple[list[str], subprocess.Popen[str]]:
    argv = [str(a) for a in case.argv(env)] + list(extra)
    proc = subprocess.Popen([sys.executable, "-m", "synthformer.cli.main", *argv], cwd=env.tmp, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return argv, proc


def test_a_real_terminal_sees_one_line_and_with_debug_the_traceback(trained: Trained, tmp_path: Path) -> None:  # noqa: F811
    by_id = {c.id: c for c in CASES}
    runs = []
    for name in (*IN_A_REAL_PROCESS, "debug"):
        env = Env(tmp_path / name, trained)
        env.tmp.mkdir()
        case = by_id["weights-truncated-generate" if name == "debug" else name]
        argv, proc = _start(case, env, *(["--debug"] if name == "debug" else []))  # the processes run side by side
        runs.append((name, case, env, {p: snapshot(p) for p in env.watched}, argv, proc))
    for name, case, env, before, argv, proc in runs:
        _, err = proc.communicate(timeout=300)
        shown = f"\n--- stderr of synthformer {' '.join(argv)}:\n{err}"
        if name == "debug":
            assert proc.returncode == 1, shown
            assert "Traceback (most recent call last)" in err and "CheckpointError" in err, shown
        else:
            verb = next(a for a in argv if a in VERBS)
            last = err.rstrip("\n").splitlines()[-1]
            assert proc.returncode == 2 and "Traceback" not in err, shown
            assert last.startswith(f"synthformer {verb}: error: "), shown
            assert all(s in last for s in case.expect), shown
            assert len([line for line in err.splitlines() if " error: " in line]) == 1, shown
        assert all(snapshot(p) == snap for p, snap in before.items()), shown
        assert not any(p.exists() for p in env.fresh), shown
