"""The bad-input suite (issue 14), part 2: bad data in every supported format (the cases: ``cases_data.py``;
the check: ``harness.check_case``)."""

from __future__ import annotations

import pytest

from .bad_inputs import by_prefix
from .harness import Case, Env, Trained, check_case, trained  # noqa: F401 - trained: the fixture


@pytest.mark.parametrize("bad", [c.param() for c in by_prefix("data:")])
def test_bad_data(bad: Case, trained: Trained, tmp_path, capsys) -> None:  # noqa: F811
    check_case(bad, Env(tmp_path, trained), capsys)
