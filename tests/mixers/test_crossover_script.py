"""``benchmarks/speed/conv_crossover.py`` stays runnable after its move out of the library (a tiny smoke run only)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "speed" / "conv_crossover.py"


def test_the_crossover_script_runs_and_reports_every_kernel():
    spec = importlib.util.spec_from_file_location("conv_crossover", SCRIPT)
    assert spec is not None and spec.loader is not None, SCRIPT
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    args = ["--kernel-sizes", "3", "5", "--lengths", "4", "--batch", "1", "--d-model", "4", "--heads", "2"]
    with torch.random.fork_rng(devices=[]):  # the script seeds the global RNG; keep it out of other tests
        table = script.main([*args, "--repeats", "1", "--forward-only"])
    assert set(table) == {(kind, k) for kind in ("LightConv", "DynamicConv") for k in (3, 5)}
    assert all(length in (0, 4) for length in table.values())
