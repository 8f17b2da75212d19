"""Loading a script of ``benchmarks/`` as a module for a test. The scripts are no installed package: each puts the
``benchmarks/`` folder on ``sys.path`` and imports ``records`` and its rooms' modules by their import names
(``from studies import seed_studies``, ``from doc_tables.bench import markdown``)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def load_script(path: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``benchmarks/PATH.py`` (``PATH`` is the script's room and name, ``"studies/seed_studies"``, or a top-level
    module, ``"records"``) freshly executed and registered for the test only under its import name
    (``studies.seed_studies``), as its room's attribute too: the scripts that import it get this very copy."""
    file = BENCH / f"{path}.py"
    if not file.is_file():
        rooms = sorted(p.name for p in BENCH.iterdir() if (p / "__init__.py").is_file())
        raise FileNotFoundError(f"no script benchmarks/{path}.py: name a script by its room and name "
                                f"(rooms: {', '.join(rooms)}), e.g. 'studies/seed_studies'")
    name = path.replace("/", ".")
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    room, _, leaf = name.rpartition(".")
    if room:  # `from studies import seed_studies` reads the room's attribute before sys.modules
        monkeypatch.setattr(importlib.import_module(room), leaf, module, raising=False)
    spec.loader.exec_module(module)
    return module
