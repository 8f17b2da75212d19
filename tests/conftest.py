"""Test-wide settings."""

from __future__ import annotations

import gc
import os

# Tests see the library's measured defaults, never this machine's calibrated thresholds
# (synthformer.attention.fast.calibration): set before anything imports the attention settings.
os.environ["SYNTHFORMER_CALIBRATION"] = "off"
# No memory plan before each real ``synthformer train`` (cli/train.py ``_check_memory``): the suite's thousand tiny
# runs never come near the machine's memory, and the plan costs a tenth of a second each. The tests of the check
# (tests/bench/test_memory_check.py) unset it; processes the tests start inherit it.
os.environ["SYNTHFORMER_MEMORY_CHECK"] = "off"

import pytest  # noqa: E402
import torch  # noqa: E402

#: The slowest units of work (5-60 s each on the 2-core development CPU with the suite running, 2026-12-03; most
#: start processes), slowest first. They run before every other test: with pytest-xdist a long test that starts
#: last, when the other worker has nothing left, is the suite's tail. A prefix of node ids (a whole test function,
#: every parameter, or a whole module). A test of an ``xdist_group`` brings its whole group to the front (with
#: ``--dist loadgroup`` a group is one unit of work, handed out where its first test stands): the suite's one
#: torchrun launch (the fixture ``two_processes``, about 35 s), the documented Python blocks (``doc-python-blocks``,
#: about 40 s in all), the analysis runs, the IMDb tokenizers and the module fixtures of the hf tests.
SLOW_FIRST = (
    "tests/train/test_stream_distributed.py::",
    "tests/train/test_distributed.py::",
    "tests/tasks/test_sharded_eval.py::test_two_processes_evaluate_like_one",
    "tests/docs/test_doc_python.py::",
    "tests/hf/test_lm_eval.py::test_the_harness_scores_and_generates_what_synthformer_does",
    "tests/hf/test_clients.py::test_folders_load_by_path",
    "tests/reliability/test_long_runs.py::test_a_process_that_dies_mid_step_or_mid_save",
    "tests/analysis/test_runner.py::test_cli_verb_and_a_study_directory",
    "tests/data/test_spelling.py::",
    "tests/attention/test_triton_compile.py::",
    "tests/hf/test_synthesize_remote.py::test_every_family_loads_by_path_in_a_fresh_process",
    "tests/hf/test_synthesize_train.py::test_save_pretrained_and_from_pretrained_in_a_fresh_process",
    "tests/reliability/test_faults.py::test_a_fault_at_any_call_of_a_rotating_save",
    "tests/tasks/test_text_metrics.py::test_dialogue_metrics_reproduce_nlg_eval_readme_example",
    "tests/reliability/test_faults.py::test_a_kill_during_a_training_checkpoint",
    "tests/hf/test_export.py::test_exported_runs_load_offline_in_a_fresh_process",
    "tests/attention/test_fused_backends.py::test_backend_equals_the_reference_and_the_torch_backend_in_float64[compile-",
    "tests/reliability/test_bad_inputs_meta.py::test_a_real_terminal_sees_one_line",
    "tests/reliability/test_long_runs.py::test_sigterm_and_sigusr1",
    "tests/reliability/test_two_processes.py::",
    "tests/test_gpu_extra.py::test_the_library_imports_and_runs_without_triton",
    "tests/attention/test_without_the_wing.py::test_without_the_wing",
    "tests/bench/test_bench_progress.py::",
    "tests/bench/test_bench_guard.py::test_quick_against_head_records_one_line_per_row_with_its_ratios",
    "tests/train/test_rundir.py::test_a_second_process_fails_fast",
    "tests/bench/test_gpu_suite.py::test_the_smoke_run_records_every_piece_and_the_docs_build_from_it",
    "tests/bench/test_gpu_suite.py::test_a_timed_piece_runs_in_a_process_of_its_own",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the tests of ``SLOW_FIRST`` first, in its order; every other test keeps its place (a stable sort).

    pytest-xdist's workers collect the same order and take the tests from the front, so the slow ones are spread
    over the workers at the start instead of one of them ending the run alone."""

    def rank(item: pytest.Item) -> int:
        return next((i for i, prefix in enumerate(SLOW_FIRST) if item.nodeid.startswith(prefix)), len(SLOW_FIRST))

    items.sort(key=rank)


@pytest.fixture(autouse=True)
def _one_thread():
    """One intra-op thread: the tests use tiny shapes, where threading costs more than it gains, and the
    machine's cores may be shared. Per test, so that a test that sets its own (``--threads 2``) leaves none."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True, scope="session")
def _one_thread_in_shared_fixtures():
    """One intra-op thread for the module- and session-scoped fixtures too, which are set up before a test's own
    ``_one_thread``: a tiny run trained with both cores' threads while the other worker holds one waits on its
    threads at every op (the analysis tests' session runs: a third of a second a backward pass of a tiny model).
    It also makes them train as the tests that compare with them do (some set one thread by hand for that)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True, scope="session")
def _one_thread_in_child_processes():
    """``OMP_NUM_THREADS=1`` for every process the tests start (unless a test sets its own): the children's torch
    takes one intra-op thread, as this process does (``_one_thread``). With two, a child on a 2-core machine that
    already runs the suite's two workers waits on its own threads at every op of its tiny shapes (measured: a
    fresh process's 60 tiny attention layers 19 s with two threads, 1.2 s with one). Set after this process
    imported torch, so its own thread count stays what torch chose."""
    import os

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
        yield


@pytest.fixture(autouse=True, scope="session")
def _quiet_machine():
    """An idle load average: the CLI's busy-machine warning (tested on its own) depends on what else runs on the
    machine and would otherwise appear in the output of any test (module-scoped fixtures included)."""
    import os

    with pytest.MonkeyPatch.context() as patch:
        if hasattr(os, "getloadavg"):
            patch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
        yield


@pytest.fixture(autouse=True, scope="session")
def _no_disk_flush():
    """``os.fsync`` does nothing in the test processes: every checkpoint, prepared shard and atomic write flushes
    its files and directories to the disk (tens of milliseconds a save on the development machine, a large part of
    the suite's time over its thousands of saves). A flush matters only when the machine loses power, which no test
    simulates; the code around it still runs (files opened, written, renamed in the same order, faults injected at
    each call). Processes the tests start flush as usual."""
    import os

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fsync", lambda fd: None)
        yield


@pytest.fixture(autouse=True, scope="session")
def _no_queued_accelerator_seeds():
    """``torch.manual_seed`` also hands the seed to each accelerator API (CUDA, XPU, MTIA), which queues it until
    the device is first used and records the caller's stack with it (``traceback.format_stack``, to name the caller
    if the queued call fails): half a millisecond at a test's stack depth, a few seconds over the suite's thousands
    of seeds. An API without a device never runs its queue, so there its seeder does nothing in the test processes;
    where one has a device, torch's stays. Every seed of the CPU generator is set as before."""
    with pytest.MonkeyPatch.context() as patch:
        for api in (torch.cuda, torch.xpu, torch.mtia):
            if not api.is_available():
                patch.setattr(api, "manual_seed_all", lambda seed: None)
        yield


@pytest.fixture(scope="session")
def two_processes(tmp_path_factory):
    """Every two-process job of the suite, run in one torchrun launch (tests/two_processes.py): a
    ``TwoProcessRuns``. Its tests carry ``two_processes.ONE_LAUNCH``, so one pytest-xdist worker runs them all."""
    from tests.two_processes import launch

    return launch(tmp_path_factory.mktemp("two_processes"))


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


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move everything collection allocated (torch, transformers and every test module: millions of objects) out of
    the garbage collector's reach. A full collection walks the whole heap, and accelerate runs one at the start and
    end of every ``Trainer.train`` (``clear_device_cache``): about 0.3 s each on that heap, a fifth of the hf tests'
    time. Frozen objects are never freed; they live for the whole session anyway."""
    gc.freeze()
