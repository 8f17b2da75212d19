import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    # the machine's cores are shared; one intra-op thread keeps these small models fast enough
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
