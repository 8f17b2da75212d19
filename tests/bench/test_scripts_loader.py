"""``tests/bench/scripts.py``: a script is loaded by its room and name, the scripts that import it get the test's
copy, and nothing the load imported stays behind after the test (it would hold the test's copies)."""

from __future__ import annotations

import sys

import pytest

from .scripts import ROOMS, load_script


def _room_modules() -> dict[str, object]:
    return {name: module for name, module in sys.modules.items() if name.partition(".")[0] in ROOMS and "." in name}


def _out_of_step(modules: dict[str, object]) -> set[str]:
    """The modules whose room's attribute of that name is another module (not None, not the one in sys.modules)."""
    return {name for name, module in modules.items()
            if getattr(sys.modules.get(name.rpartition(".")[0]), name.rpartition(".")[2], None) not in (None, module)}


def test_the_rooms_are_the_packages_of_benchmarks() -> None:
    assert {"speed", "studies", "doc_tables"} <= ROOMS


def test_a_script_named_without_its_room_is_refused_naming_the_rooms(monkeypatch) -> None:
    with pytest.raises(FileNotFoundError, match=r"benchmarks/seed_studies\.py.*rooms: .*studies.*studies/seed_studies"):
        load_script("seed_studies", monkeypatch)


def test_the_importers_get_the_tests_copy_and_nothing_stays_after_the_test() -> None:
    before = _room_modules()
    with pytest.MonkeyPatch.context() as patch:
        bench = load_script("doc_tables/bench", patch)
        goals = load_script("doc_tables/bench_goals", patch)
        registry = load_script("doc_tables/registry", patch)
        assert sys.modules["doc_tables.bench"] is bench and registry.bench is bench and registry.bench_goals is goals
        assert goals.newest is bench.newest  # `from doc_tables.bench import newest` found the test's copy
        assert sys.modules["doc_tables"].bench is bench  # `from doc_tables import bench` reads the room's attribute
    assert _room_modules() == before
    # each room's attribute names the module sys.modules holds, as it did before the test (a module loaded by an
    # earlier test of this worker outside load_script may have left one out of step: not this test's doing)
    assert _out_of_step(_room_modules()) <= _out_of_step(before)
    assert "doc_tables.registry" not in before or sys.modules["doc_tables.registry"] is not registry
