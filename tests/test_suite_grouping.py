"""The suite's ``xdist_group`` marks hold: under pytest-xdist's ``--dist loadgroup`` (the suite's default,
pyproject.toml) a test of a group carries the group in its node id, which is how xdist keeps the group on one
worker. With pytest 9.2 and pytest-xdist 3.8 it silently does not (the dev extra pins pytest below 9.2), and every
group's shared setup (the one torchrun launch, the fresh-process loads) then runs on each worker."""

from __future__ import annotations

import os

import pytest


@pytest.mark.xdist_group("grouping-check")
def test_a_grouped_test_carries_its_group_under_loadgroup(request: pytest.FixtureRequest) -> None:
    # on a worker, xdist turns --dist loadgroup into this option (its own "dist" reads "no" there)
    if not os.environ.get("PYTEST_XDIST_WORKER") or not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not run by pytest-xdist with --dist loadgroup")
    assert request.node.nodeid.endswith("@grouping-check"), (
        f"{request.node.nodeid}: pytest-xdist's loadgroup did not group this test (pytest "
        f"{pytest.__version__}); see the pytest pin in pyproject.toml's dev extra")
