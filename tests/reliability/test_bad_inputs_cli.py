"""The bad-input suite (issue 14), part 1: bad command lines of every verb and bad run configs of every section
(the cases: ``cases_cli.py``, ``cases_config.py``; the check: ``harness.check_case``)."""

from __future__ import annotations

import pytest

from .bad_inputs import by_prefix
from .harness import Case, Env, Trained, check_case, trained  # noqa: F401 - trained: the fixture


@pytest.mark.parametrize("bad", [c.param() for c in by_prefix("cli:")])
def test_bad_command_line(bad: Case, trained: Trained, tmp_path, capsys) -> None:  # noqa: F811
    check_case(bad, Env(tmp_path, trained), capsys)


@pytest.mark.parametrize("bad", [c.param() for c in by_prefix("config:")])
def test_bad_config(bad: Case, trained: Trained, tmp_path, capsys) -> None:  # noqa: F811
    check_case(bad, Env(tmp_path, trained), capsys)
