import logging
import sys
from pathlib import Path

import pytest
import torch

# The helpers next to the tests (toymodels.py) are imported as plain modules, also by the torchrun script.
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _single_thread_and_quiet(caplog):
    # Bit-identity compares runs inside one process; one intra-op thread also keeps the shared CPU free.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    caplog.set_level(logging.INFO, logger="synthformer.train")
    yield
    torch.set_num_threads(threads)

