"""Loading a script of ``benchmarks/`` as a module for a test (the scripts are no package: each puts its own folder
on ``sys.path`` for its siblings)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def load_script(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``benchmarks/NAME.py`` freshly executed, registered in ``sys.modules`` for the test only (its siblings import
    it by name)."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module
