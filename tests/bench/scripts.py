"""Loading a script of ``benchmarks/`` as a module for a test. The scripts are no installed package: each puts the
``benchmarks/`` folder on ``sys.path`` and imports ``records`` and its rooms' modules by their import names
(``from studies import seed_studies``, ``from doc_tables.bench import markdown``)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
ROOMS = frozenset(p.name for p in BENCH.iterdir() if (p / "__init__.py").is_file())


def load_script(path: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``benchmarks/PATH.py`` (``PATH`` is the script's room and name, ``"studies/seed_studies"``, or a top-level
    module, ``"records"``) freshly executed and registered for the test only under its import name
    (``studies.seed_studies``), as its room's attribute too: the scripts that import it get this very copy."""
    file = BENCH / f"{path}.py"
    if not file.is_file():
        raise FileNotFoundError(f"no script benchmarks/{path}.py: name a script by its room and name "
                                f"(rooms: {', '.join(sorted(ROOMS))}), e.g. 'studies/seed_studies'")
    name = path.replace("/", ".")
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    room, _, leaf = name.rpartition(".")
    if room:  # `from studies import seed_studies` reads the room's attribute before sys.modules
        monkeypatch.setattr(importlib.import_module(room), leaf, module, raising=False)
    before = set(sys.modules)
    spec.loader.exec_module(module)
    for new in sorted(set(sys.modules) - before):
        if new.partition(".")[0] in ROOMS and "." in new:
            _dropped_after_the_test(new, monkeypatch)
    return module


def _dropped_after_the_test(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A room's module first imported while a script loaded leaves ``sys.modules`` (and its room) with the test: it
    holds the test's copies of the modules it imported, which a later import must not find."""
    module = sys.modules.pop(name)
    monkeypatch.setitem(sys.modules, name, module)  # absent before: the undo deletes it
    room, _, leaf = name.rpartition(".")
    parent = sys.modules.get(room)
    if parent is not None and getattr(parent, leaf, None) is module:
        delattr(parent, leaf)
        monkeypatch.setattr(parent, leaf, module, raising=False)


def doc_builders(monkeypatch: pytest.MonkeyPatch) -> dict[str, Callable[[], str]]:
    """The registry of the docs' tables (``benchmarks/doc_tables/registry.py``'s ``BUILDERS``) loaded afresh, so its
    tables are built by the modules the test loaded before it (pointed at the test's records)."""
    return load_script("doc_tables/registry", monkeypatch).BUILDERS
