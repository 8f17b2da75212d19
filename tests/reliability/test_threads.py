"""Thread oversubscription: ``--threads`` on every verb and the warning when the machine is already busy."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from synthformer.cli import _common
from synthformer.cli.main import main
from tests.tasks.helpers import lm_config, write_yaml

pytestmark = pytest.mark.usefixtures("restore_logging")


@pytest.mark.parametrize(("load", "threads", "cores", "warned"), [
    (0.3, 2, 2, False),   # an idle machine: its background load does not count
    (2.0, 2, 2, True),    # another training with two threads
    (1.0, 1, 2, False),   # one busy core, one thread: fits
    (4.0, 1, 2, False),   # one thread has nothing to spin-wait for: --threads cannot help
    (1.0, 2, 2, True),
    (3.0, 1, 16, False),  # a big machine with room left
])
def test_the_warning_is_given_when_threads_outnumber_the_free_cores(load, threads, cores, warned) -> None:
    message = _common.oversubscription_warning(threads, load, cores)
    assert (message is not None) == warned
    if warned:
        free = max(1, cores - round(load))
        assert f"--threads {free}" in message and f"load {load:.1f} on {cores} cores" in message


def _tiny_train(tmp_path: Path) -> list[str]:
    config = write_yaml(tmp_path / "lm.yaml", lm_config(tmp_path, steps=2, eval_every=0, save_every=0))
    return ["train", str(config), "--run-dir", str(tmp_path / "run"), "--no-progress"]


def test_threads_option_sets_torch_threads_and_a_busy_machine_is_warned_about(tmp_path, capsys, monkeypatch,
                                                                             caplog) -> None:
    monkeypatch.setattr(_common.os, "getloadavg", lambda: (9.0, 9.0, 9.0))
    monkeypatch.setattr(_common, "_cores", lambda: 2)
    assert main([*_tiny_train(tmp_path), "--threads", "2"]) == 0
    assert torch.get_num_threads() == 2
    assert "this machine is busy (load 9.0 on 2 cores) and this run uses 2 threads" in caplog.text
    assert "pass --threads 1" in caplog.text


def test_no_warning_on_an_idle_machine_or_for_short_verbs(tmp_path, capsys, monkeypatch, caplog) -> None:
    monkeypatch.setattr(_common.os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    assert main([*_tiny_train(tmp_path), "--threads", "1"]) == 0
    assert torch.get_num_threads() == 1
    assert "machine is busy" not in caplog.text
    monkeypatch.setattr(_common.os, "getloadavg", lambda: (9.0, 9.0, 9.0))
    assert main(["generate", str(tmp_path / "run"), "--prompt", "def", "--max-new-tokens", "3"]) == 0
    assert "machine is busy" not in caplog.text  # a few seconds of work: not worth a warning


@pytest.mark.parametrize("verb", ["train", "eval", "generate", "compare"])
def test_threads_below_one_is_a_one_line_error(verb: str, tmp_path, capsys) -> None:
    argv = {"train": _tiny_train(tmp_path), "eval": ["eval", str(tmp_path)],
            "generate": ["generate", str(tmp_path), "--prompt", "x"], "compare": ["compare", "--out", str(tmp_path)]}
    assert main([*argv[verb], "--threads", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"synthformer {verb}: error: --threads: expected an integer >= 1, got 0"]
    assert not (tmp_path / "run").exists()
