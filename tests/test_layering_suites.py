"""Each benchmark suite (``synthformer.tasks.suites.<name>``) is a room of its own.

Every import counts here: module-level, function-local and under ``if TYPE_CHECKING:`` (what a module needs, not
only what it loads), and importing ``a.b.c`` counts as importing ``a.b.c`` only (its parents are packages the
rules below allow). The rules:

* a suite imports no other suite (nor the package of all suites, which imports every suite);
* outside the suites, one module imports them: ``synthformer.tasks``, which imports ``synthformer.tasks.suites``,
  whose ``__init__`` imports each suite's package (that registers its task types and generators). Nothing else
  imports a suite, its package or its modules: the rest of synthformer reaches a suite's parts through the
  registry, by name, so that a suite can be added or removed without an edit anywhere else;
* ``synthformer.tasks`` still has no import circle, every import counted (tests/test_layering.py has the check).
"""

from __future__ import annotations

from pathlib import Path

from .test_layering import PACKAGE_DIR, _write_package, collect_imports, import_cycles, module_names

SUITES = "synthformer.tasks.suites"
#: The module outside the suites that imports them (the package of all suites, whose ``__init__`` registers).
ENTRY = "synthformer.tasks"


def suite_of(module: str, suites: str = SUITES) -> str | None:
    """The suite ``module`` belongs to (``glue`` for ``synthformer.tasks.suites.glue.metrics``), else None."""
    if not module.startswith(suites + "."):
        return None
    return module[len(suites) + 1:].split(".")[0]


def suite_import_problems(root: Path, suites: str = SUITES, entry: str = ENTRY) -> list[str]:
    """One line per import that breaks the rules of this module's docstring: where, who imports what, and why."""
    problems = []
    for imp in collect_imports(root, type_checking=True):  # function-local ones are in the list already
        own, other = suite_of(imp.importer, suites), suite_of(imp.target, suites)
        head = f"{imp.where(root)}: {imp.importer} imports {imp.target}"
        if imp.target == suites:
            if own is not None:
                problems.append(f"{head}, which imports every suite: suite {own!r} may import no other suite")
            elif imp.importer != entry:
                problems.append(f"{head}: only {entry} imports the suites; use the registry (get_task_type, "
                                "get_generator) to reach a suite's parts")
        elif other is None or own == other:
            continue
        elif own is not None:
            problems.append(f"{head}: suite {own!r} imports suite {other!r}; a suite imports no other suite (move "
                            "what both need out of the suites, into tasks/types, tasks/metrics or synthformer.data)")
        elif not (imp.importer == suites and imp.target == f"{suites}.{other}"):
            problems.append(f"{head}, inside suite {other!r}: outside the suites only {suites} imports a suite, as "
                            "a whole, to register it; use the registry (get_task_type, get_generator) instead")
    return problems


# --------------------------------------------------------------------------- the real package
def test_every_suite_is_a_package_the_suites_package_imports():
    packages = {suite_of(m) for m in module_names(PACKAGE_DIR)} - {None}
    registered = {suite_of(imp.target) for imp in collect_imports(PACKAGE_DIR) if imp.importer == SUITES}
    assert packages == {"glue", "summarization", "dialogue", "lra", "probes", "mixing"}
    assert registered == packages, "every suite must be imported by tasks/suites/__init__.py (importing registers)"


def test_the_scanner_sees_the_suites_imports():
    """Guards against a scan that finds nothing (and so passes)."""
    found = {(imp.importer, imp.target) for imp in collect_imports(PACKAGE_DIR, type_checking=True)}
    assert (f"{SUITES}.glue.text_to_text", f"{SUITES}.glue.metrics") in found
    assert (f"{SUITES}.lra.retrieval", "synthformer.tasks.types.classification") in found
    assert (ENTRY, SUITES) in found


def test_no_suite_imports_another_and_nothing_outside_imports_a_suites_modules():
    problems = suite_import_problems(PACKAGE_DIR)
    assert problems == [], "imports across the suites' walls:\n" + "\n".join(problems)


def test_no_import_cycles_inside_tasks_counting_every_import():
    cycles = import_cycles(PACKAGE_DIR, every_import=True, inside="synthformer.tasks")
    assert cycles == [], "\n".join(cycles)


# --------------------------------------------------------------------------- the scanner itself
def test_the_scanner_reports_each_kind_of_crossing_with_its_line(tmp_path):
    root = _write_package(tmp_path, {
        "tasks/__init__.py": "from . import types, suites\n",  # the entry: allowed
        "tasks/suites/__init__.py": "from . import a, b\n",  # each suite's package: allowed
        "tasks/suites/a/__init__.py": "from .reader import read\n",  # its own modules: allowed
        "tasks/suites/a/reader.py": "from synthformer.tasks.types import lm\nimport typing\n"
                                    "if typing.TYPE_CHECKING:\n    from ..b import metric\n",  # counted
        "tasks/suites/b/metric.py": "def f():\n    from synthformer.tasks import suites\n",  # local: counted
        "tasks/types/lm.py": "from synthformer.tasks.suites.a.reader import read\n",
        "tasks/run/x.py": "import synthformer.tasks.suites.b\n",
        "tasks/run/y.py": "from synthformer.tasks import suites\n",
    })
    problems = suite_import_problems(root, suites="synthformer.tasks.suites", entry="synthformer.tasks")
    assert [p.split(":")[0] + ":" + p.split(":")[1] for p in problems] == [
        "synthformer/tasks/run/x.py:1",
        "synthformer/tasks/run/y.py:1",
        "synthformer/tasks/suites/a/reader.py:4",
        "synthformer/tasks/suites/b/metric.py:2",
        "synthformer/tasks/types/lm.py:1",
    ], problems
    assert "inside suite 'b': outside the suites only synthformer.tasks.suites imports a suite" in problems[0]
    assert "only synthformer.tasks imports the suites" in problems[1]
    assert "suite 'a' imports suite 'b'" in problems[2]
    assert "which imports every suite: suite 'b' may import no other suite" in problems[3]
    assert "synthformer.tasks.types.lm imports synthformer.tasks.suites.a.reader, inside suite 'a'" in problems[4]
