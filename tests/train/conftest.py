import logging
import sys
from pathlib import Path

import pytest
import torch

# The helpers next to the tests (toymodels.py) are imported as plain modules, also by the torchrun script.
sys.path.insert(0, str(Path(__file__).parent))

from two_processes import TwoProcessRuns, launch  # noqa: E402 - found through the path above


@pytest.fixture(autouse=True)
def _single_thread_and_quiet(caplog):
    # Bit-identity compares runs inside one process; one intra-op thread also keeps the shared CPU free.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    caplog.set_level(logging.INFO, logger="synthformer.train")
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def two_processes(tmp_path_factory) -> TwoProcessRuns:
    """Every two-process job of this folder, run in one torchrun launch (two_processes.py). Its tests carry the
    ``xdist_group`` mark ``torchrun``, so pytest-xdist (``--dist loadgroup``) runs them on one worker: one launch."""
    return launch(tmp_path_factory.mktemp("two_processes"))
