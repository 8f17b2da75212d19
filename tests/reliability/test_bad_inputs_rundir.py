"""The bad-input suite (issue 14), part 3: run directories with a missing, truncated or foreign file, runs of
another task type, and ``--resume`` with a changed config (the cases: ``cases_rundir.py``; the check:
``harness.check_case``)."""

from __future__ import annotations

import pytest

from .bad_inputs import by_prefix
from .harness import Case, Env, Trained, check_case, trained  # noqa: F401 - trained: the fixture


@pytest.mark.parametrize("bad", [c.param() for c in by_prefix("run directory:")])
def test_bad_run_directory(bad: Case, trained: Trained, tmp_path, capsys) -> None:  # noqa: F811
    check_case(bad, Env(tmp_path, trained), capsys)
