"""A run's planned peak memory against the machine's (``bench.memory``): the dry run prints both and warns when the
plan is over; a real ``synthformer train`` then refuses in one line naming ``--no-memory-check``, which starts it.
The machine's memory is monkeypatched small instead of planning a run that would need much; the memory read from
``/proc/meminfo`` and a cgroup's limit are tested on planted files. The planned peaks docs/lra.md quotes are the
plans' (the doc's numbers are allowed by benchmarks/doc_tables/hand_numbers.py on that condition)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import synthformer.bench
import synthformer.bench.memory as memory
from synthformer.bench.memory import OVERRIDE, MachineMemory, fit_report, machine_memory, over_memory
from synthformer.bench.plan import plan_run
from synthformer.bench.plan_data import format_bytes
from synthformer.cli.train import MEMORY_CHECK_ENV
from tests.reliability.harness import run_cli
from tests.tasks.helpers import lm_config, write_yaml

ROOT = Path(__file__).resolve().parents[2]
GiB = 2**30


def _plant(monkeypatch: pytest.MonkeyPatch, ram) -> None:
    """The machine's memory as ``ram()`` says, where the plan and the CLI read it (the module and bench's face)."""
    monkeypatch.setattr(memory, "machine_memory", ram)
    monkeypatch.setattr(synthformer.bench, "machine_memory", ram)


def _ram(total: int, available: int | None = None) -> MachineMemory:
    return MachineMemory(total, available, "RAM", "planted", shared=True)


def test_the_machine_memory_is_memtotal_or_a_lower_cgroup_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(memory.torch.cuda, "is_available", lambda: False)
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24684084 kB\nMemFree:  1 kB\nMemAvailable:   23414892 kB\n")
    limit = tmp_path / "memory.max"
    monkeypatch.setattr(memory, "_MEMINFO", meminfo)
    monkeypatch.setattr(memory, "_CGROUP_LIMITS", (limit,))
    limit.write_text("max\n")
    assert machine_memory() == MachineMemory(24684084 * 1024, 23414892 * 1024, "RAM", "MemTotal of /proc/meminfo",
                                             shared=True)
    limit.write_text(f"{8 * GiB}\n")
    got = machine_memory()
    assert (got.total, got.available, got.source) == (8 * GiB, 8 * GiB, "the cgroup's memory limit")


def test_processes_of_one_machine_share_its_ram_but_not_a_gpu():
    assert over_memory(3 * GiB, 1, _ram(4 * GiB)) is None
    why = over_memory(3 * GiB, 2, _ram(4 * GiB))
    assert why and "3.00 GiB per process x 2 processes" in why and "4.00 GiB" in why and OVERRIDE in why
    assert over_memory(3 * GiB, 2, MachineMemory(4 * GiB, None, "GPU 0", "planted", shared=False)) is None
    assert over_memory(10**15, 1, None) is None  # unknown memory: no refusal
    line, warning = fit_report(3 * GiB, 1, _ram(4 * GiB, available=2 * GiB))
    assert "RAM 4.00 GiB" in line and "2.00 GiB available now" in line and "available now" in warning
    assert fit_report(GiB, 1, _ram(4 * GiB, available=2 * GiB))[1] is None


@pytest.fixture(autouse=True)
def _memory_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real check: the suite skips it elsewhere (tests/conftest.py sets ``SYNTHFORMER_MEMORY_CHECK=off``)."""
    monkeypatch.delenv(MEMORY_CHECK_ENV, raising=False)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_yaml(tmp_path / "lm.yaml", lm_config(tmp_path, steps=2))


@pytest.mark.usefixtures("restore_logging")
def test_a_plan_over_the_machines_memory_warns_refuses_and_starts_with_the_override(
        config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    small = _ram(2**16, available=2**15)  # 64 KiB: less than the tiny model's plan (some 380 KiB)
    _plant(monkeypatch, lambda: small)
    run_dir = tmp_path / "run"

    assert run_cli(["train", str(config), "--run-dir", str(run_dir), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^memory: +peak [\d.]+ [KMG]iB per process", out, flags=re.M)
    assert "machine:    RAM 64.00 KiB (planted, 32.00 KiB available now)" in out
    (warning,) = [line for line in out.splitlines() if line.startswith("warning:")]
    assert "over this machine's RAM of 64.00 KiB" in warning and OVERRIDE in warning

    assert run_cli(["train", str(config), "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and OVERRIDE in err[0]
    assert err[0].startswith("synthformer train: error: the plan's peak memory")
    assert not (run_dir / "checkpoints").exists()  # refused before anything was written

    assert run_cli(["train", str(config), "--run-dir", str(run_dir), OVERRIDE, "-q"]) == 0
    assert any((run_dir / "checkpoints").iterdir())


@pytest.mark.usefixtures("restore_logging")
def test_a_plan_that_fits_trains_without_a_warning(config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]):
    _plant(monkeypatch, lambda: _ram(2**40, available=2**40))
    assert run_cli(["train", str(config), "--run-dir", str(tmp_path / "r"), "--dry-run"]) == 0
    assert "warning:" not in capsys.readouterr().out
    assert run_cli(["train", str(config), "--run-dir", str(tmp_path / "r"), "-q"]) == 0


def test_the_planned_peaks_of_docs_lra_are_the_plans():
    from synthformer.tasks import load_run_config

    text = (ROOT / "docs" / "lra.md").read_text(encoding="utf-8")
    quoted = re.findall(r"planned peak of ([\d.]+ GiB)", text)
    plans = []
    for overrides in ([], ["train.batch_size=2", "train.grad_accum=16"]):
        run = load_run_config(ROOT / "configs" / "lra_listops.yaml", ["model.encoder_kind=R", *overrides])
        plans.append(format_bytes(plan_run(run).memory["total"]))
    assert quoted == plans
    assert "model.encoder_kind=R train.batch_size=2 train.grad_accum=16" in text


@pytest.mark.usefixtures("restore_logging")
def test_a_micro_batch_beyond_the_trace_limit_is_left_to_the_run(config: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch):
    import synthformer.cli.train as train_cli

    _plant(monkeypatch, lambda: _ram(2**16))
    assert run_cli(["train", str(config), "--run-dir", str(tmp_path / "a"), "-q"]) == 2  # planned: refused
    monkeypatch.setattr(train_cli, "_TRACE_LIMIT", 8 * 16 - 1)  # one position less than its micro-batch of 8 x 16
    assert run_cli(["train", str(config), "--run-dir", str(tmp_path / "b"), "-q"]) == 0  # not planned: it trains


@pytest.mark.usefixtures("restore_logging")
def test_the_environment_variable_off_skips_the_check_and_any_other_value_keeps_it(
        config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    _plant(monkeypatch, lambda: _ram(2**16))  # the tiny model's plan (some 380 KiB) is over it
    monkeypatch.setenv(MEMORY_CHECK_ENV, "on")
    assert run_cli(["train", str(config), "--run-dir", str(tmp_path / "a"), "-q"]) == 2
    assert OVERRIDE in capsys.readouterr().err
    monkeypatch.setenv(MEMORY_CHECK_ENV, "off")
    assert run_cli(["train", str(config), "--run-dir", str(tmp_path / "b"), "-q"]) == 0
    assert any((tmp_path / "b" / "checkpoints").iterdir())
