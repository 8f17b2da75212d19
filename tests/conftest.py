"""Test-wide settings."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    """One intra-op thread: the tests use tiny shapes, where threading costs more than it gains, and the
    machine's cores may be shared."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True, scope="session")
def _quiet_machine():
    """An idle load average: the CLI's busy-machine warning (tested on its own) depends on what else runs on the
    machine and would otherwise appear in the output of any test (module-scoped fixtures included)."""
    import os

    with pytest.MonkeyPatch.context() as patch:
        if hasattr(os, "getloadavg"):
            patch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
        yield


@pytest.fixture
def restore_logging():
    """Undo what a CLI call in the test did to the root logger (level and handlers)."""
    import logging

    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    root.setLevel(level)
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
