"""The packages of synthformer form layers, and no two modules import each other in a circle.

Layers, lowest first (a package may import only packages of lower layers, and its own)::

    common  <  attention  <  mixers  <  models | data | train | generate  <  tasks  <  bench  <  cli

``models``, ``data``, ``train`` and ``generate`` are peers: none imports another. Of them only ``models`` builds
on the token mixers (``attention``, ``mixers``); ``data``, ``train`` and ``generate`` import only ``common``.
The top-level ``synthformer/__init__.py`` may import anything, and no module inside the package imports it.

The other structural checks sit beside this file, one scanner each: ``test_layering_runfiles.py`` (one module writes
under a run directory; its scanner is ``run_writes_scan.py``), ``test_layering_patching.py`` (no module replaces a
Trainer's methods on an instance), ``test_layering_variants.py`` (no ``variant ==`` outside the module that defines
the variants' parts), ``test_layering_kinds.py`` (no name-keyed per-kind table outside the kind's own file),
``test_layering_suites.py`` (each benchmark suite a room of its own) and ``test_layering_wing.py`` (attention's
speed wing, ``attention/fast/``, imported once by attention/ and elsewhere only through its face).

Imports are read from the source with :mod:`ast`, at module level and inside functions alike; imports under
``if TYPE_CHECKING:`` are skipped (they never run). The cycle check looks at the imports that run when a module is
loaded: module-level ones, not those inside functions, and counts importing ``a.b.c`` as importing the packages
``a.b`` and ``a.b.c`` too (except the importer's own ancestors, which are already being loaded).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import synthformer

PACKAGE_DIR = Path(synthformer.__file__).resolve().parent

#: The layers, lowest first; the names are the packages (or top-level modules) right under ``synthformer``.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("common", "plotting"),
    ("attention",),
    ("mixers",),
    ("models", "data", "train", "generate"),
    ("tasks", "stats"),
    ("bench", "analysis", "hf"),
    ("study",),
    ("cli",),
)
LAYER_OF: dict[str, int] = {name: i for i, layer in enumerate(LAYERS) for name in layer}
#: Packages that may import less than every lower layer: what they may import besides themselves.
TIGHTER: dict[str, frozenset[str]] = {
    "data": frozenset({"common"}),
    "train": frozenset({"common"}),
    "generate": frozenset({"common"}),
}
LAYER_TEXT = "  <  ".join(" | ".join(layer) for layer in LAYERS)


def allowed_imports(package: str) -> frozenset[str]:
    """The packages ``package`` may import besides itself."""
    if package in TIGHTER:
        return TIGHTER[package]
    return frozenset(name for name, layer in LAYER_OF.items() if layer < LAYER_OF[package])


@dataclass(frozen=True)
class Import:
    """One import statement's target: ``importer`` (the file ``path``) imports module ``target`` at ``line``."""

    importer: str
    target: str
    path: Path
    line: int
    local: bool  # inside a function: runs when called, not when the module is loaded

    def where(self, root: Path) -> str:
        """``path:line`` of the import statement, relative to the package's parent."""
        return f"{self.path.relative_to(root.parent).as_posix()}:{self.line}"


def module_names(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root``: dotted name -> file (``pkg/__init__.py`` is ``pkg``)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


@functools.cache
def _parse(text: str, filename: str) -> ast.Module:
    return ast.parse(text, filename)


def parse_module(path: Path) -> ast.Module:
    """The syntax tree of the file ``path``, parsed once per process for each text it has: the scanners of these
    files read the same package test after test (about a second a parse of it). The tree is shared: read it, never
    change it."""
    return _parse(path.read_text(encoding="utf-8"), str(path))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(node: ast.AST, local: bool = False, type_checking: bool = False,
                  ) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """The import statements under ``node`` with whether each is inside a function; skips ``if TYPE_CHECKING:``
    unless ``type_checking`` (its imports then count as module-level ones)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, local
        elif isinstance(child, ast.If) and _is_type_checking(child.test) and not type_checking:
            for other in child.orelse:
                yield from _import_nodes(ast.Module(body=[other], type_ignores=[]), local)
        else:
            inner = local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from _import_nodes(child, inner, type_checking)


def collect_imports(root: Path, type_checking: bool = False) -> list[Import]:
    """The imports of the package at ``root`` that name a module of that package, relative ones resolved (with
    ``type_checking``, those under ``if TYPE_CHECKING:`` too)."""
    modules = module_names(root)
    found: list[Import] = []
    for importer, path in modules.items():
        package_parts = importer.split(".") if path.name == "__init__.py" else importer.split(".")[:-1]
        tree = parse_module(path)
        for node, local in _import_nodes(tree, type_checking=type_checking):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = package_parts[: len(package_parts) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                # ``from pkg import sub`` imports the module pkg.sub; ``from pkg import name`` imports pkg
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names]
            for target in dict.fromkeys(targets):
                if target.split(".")[0] == root.name and target != importer:
                    found.append(Import(importer, target, path, node.lineno, local))
    return found


def package_of(module: str) -> str:
    """The package right under the top one that ``module`` belongs to ("" for the top package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layering_violations(root: Path) -> list[str]:
    """One line per import that crosses the layers the wrong way: who imports what, where, and why not."""
    problems = []
    for imp in collect_imports(root):
        own, other = package_of(imp.importer), package_of(imp.target)
        if own == "" or own == other:
            continue
        head = f"{imp.where(root)}: {imp.importer} imports {imp.target}"
        if own not in LAYER_OF:
            problems.append(f"{head}, but {own!r} has no layer: add it to LAYERS in tests/test_layering.py")
        elif other == "":
            problems.append(f"{head}, the top-level package, which imports every package: import from the "
                            "package that defines the name")
        elif other not in LAYER_OF:
            problems.append(f"{head}, but {other!r} has no layer: add it to LAYERS in tests/test_layering.py")
        elif LAYER_OF[other] > LAYER_OF[own]:
            problems.append(f"{head}: {other!r} is in a layer above {own!r} ({LAYER_TEXT})")
        elif LAYER_OF[other] == LAYER_OF[own]:
            problems.append(f"{head}: {own!r} and {other!r} are peers in one layer, which do not import each other")
        elif other not in allowed_imports(own):
            problems.append(f"{head}: {own!r} may import only {', '.join(sorted(allowed_imports(own)))} "
                            "(it does not build on the token mixers)")
    return problems


def load_time_graph(root: Path, *, every_import: bool = False) -> dict[str, dict[str, Import]]:
    """Module -> {module it loads -> the import statement that loads it}, from module-level imports only; with
    ``every_import``, from every import: ``if TYPE_CHECKING:`` and function-local ones too (a design-level graph:
    what each module needs, whenever it is loaded)."""
    modules = module_names(root)
    graph: dict[str, dict[str, Import]] = {name: {} for name in modules}
    for imp in collect_imports(root, type_checking=every_import):
        if imp.local and not every_import:
            continue
        parts = imp.target.split(".")
        own_ancestors = {".".join(imp.importer.split(".")[:i]) for i in range(1, imp.importer.count(".") + 1)}
        loaded = {".".join(parts[:i]) for i in range(2, len(parts))} - own_ancestors  # parent packages
        loaded.add(imp.target)
        for target in loaded:
            if target in modules and target != imp.importer:
                graph[imp.importer].setdefault(target, imp)
    return graph


def import_cycles(root: Path, *, every_import: bool = False, inside: str | None = None) -> list[str]:
    """One line per cycle of module-level imports (one cycle per strongly connected group), with the lines.

    Args:
        every_import: count ``if TYPE_CHECKING:`` and function-local imports too (see :func:`load_time_graph`).
        inside: only the modules of this subpackage (a dotted name such as ``synthformer.tasks``) and the imports
            between them.
    """
    graph = load_time_graph(root, every_import=every_import)
    if inside is not None:
        def within(name: str) -> bool:
            return name == inside or name.startswith(inside + ".")

        graph = {m: {t: i for t, i in out.items() if within(t)} for m, out in graph.items() if within(m)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return [_describe_cycle(root, graph, group) for group in groups]


def _describe_cycle(root: Path, graph: dict[str, dict[str, Import]], group: list[str]) -> str:
    """A shortest path from the group's first module back to itself, inside the group, with each import's line."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        node = frontier.pop(0)
        for nxt in graph[node]:
            if nxt == start:
                cycle = [*paths[node], start]
                steps = (f"{a} -> {b} ({graph[a][b].where(root)})" for a, b in zip(cycle, cycle[1:], strict=False))
                return "import cycle: " + "; ".join(steps)
            if nxt in members and nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                frontier.append(nxt)
    raise AssertionError(f"no cycle through {start} in the group {group}")  # unreachable for a real group


# --------------------------------------------------------------------------- the real package
def test_every_package_has_a_layer():
    packages = {package_of(name) for name in module_names(PACKAGE_DIR)} - {""}
    assert packages - set(LAYER_OF) == set(), "packages without a layer: add them to LAYERS in this file"
    assert set(LAYER_OF) - packages == set(), "LAYERS names packages that do not exist"


def test_the_import_reader_sees_the_imports_of_the_real_package():
    """Guards against a reader that finds nothing (and so passes every check)."""
    found = {(imp.importer, imp.target) for imp in collect_imports(PACKAGE_DIR)}
    assert ("synthformer.models.losses", "synthformer.common") in found
    assert ("synthformer.mixers.lightconv", "synthformer.mixers._conv") in found  # relative import resolved
    assert any(own == "synthformer.tasks.run.data" and package_of(t) == "models" for own, t in found)


def test_no_module_imports_a_package_above_its_own():
    problems = layering_violations(PACKAGE_DIR)
    assert problems == [], "imports across the layers:\n" + "\n".join(problems)


def test_no_import_cycles_between_modules():
    cycles = import_cycles(PACKAGE_DIR)
    assert cycles == [], "\n".join(cycles)


def test_no_import_cycles_anywhere_counting_every_import():
    """What each module needs, not only what it loads: with function-local and ``if TYPE_CHECKING:`` imports counted,
    no two modules of the package need each other (a local import that breaks a load-time circle still ties the
    two modules' designs together, so it is cut at the design: move the shared piece down)."""
    cycles = import_cycles(PACKAGE_DIR, every_import=True)
    assert cycles == [], "\n".join(cycles)


# --------------------------------------------------------------------------- the checks themselves
def _write_package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "synthformer"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for package in {p.parent for p in root.rglob("*.py")}:
        (package / "__init__.py").touch()
    return root


def test_the_layering_check_names_the_importer_the_import_and_the_reason(tmp_path):
    root = _write_package(tmp_path, {
        "common.py": "",
        "attention/shell.py": "def build():\n    from synthformer.mixers import lightconv\n",  # local: still checked
        "mixers/lightconv.py": "from ..attention import shell\n",  # allowed: a lower layer
        "data/batching.py": "from synthformer.models import losses\nfrom synthformer.attention import shell\n",
        "models/losses.py": "import typing\nif typing.TYPE_CHECKING:\n    from synthformer.tasks import x\n",
        "tasks/x.py": "import synthformer\n",
    })
    problems = layering_violations(root)
    assert len(problems) == 4, problems
    upward, *rest = problems
    assert upward.startswith("synthformer/attention/shell.py:2: synthformer.attention.shell imports "
                             "synthformer.mixers.lightconv: 'mixers' is in a layer above 'attention'")
    assert "synthformer.data.batching imports synthformer.models.losses: 'data' and 'models' are peers" in rest[0]
    assert "'data' may import only common" in rest[1]
    assert "synthformer.tasks.x imports synthformer, the top-level package" in rest[2]


def test_the_cycle_check_reports_the_modules_and_lines_of_a_cycle(tmp_path):
    root = _write_package(tmp_path, {
        "models/a.py": "from . import b\n",
        "models/b.py": "from synthformer.models.c import f\n",
        "models/c.py": "import synthformer.models.a\ndef f():\n    from . import d\n",
        "models/d.py": "from .c import f\n",  # with c only through a function-local import: no cycle
    })
    assert import_cycles(root) == [
        "import cycle: synthformer.models.a -> synthformer.models.b (synthformer/models/a.py:1); "
        "synthformer.models.b -> synthformer.models.c (synthformer/models/b.py:1); "
        "synthformer.models.c -> synthformer.models.a (synthformer/models/c.py:1)"
    ]


@pytest.mark.parametrize("text", ["import synthformer.data.readers\n", "from synthformer.data import readers\n"])
def test_importing_a_submodule_loads_its_package_too(tmp_path, text):
    root = _write_package(tmp_path, {
        "data/__init__.py": "from .readers import read\n",
        "data/readers.py": "from synthformer.models.lm import LM\n",
        "models/lm.py": text,
    })
    (cycle,) = import_cycles(root)
    assert "synthformer.models.lm -> synthformer.data (synthformer/models/lm.py:1)" in cycle


# --------------------------------------------------------------------------------------------------------------- tasks/
def test_no_import_cycles_inside_tasks_counting_every_import():
    """tasks/ is cut around its contract: with ``if TYPE_CHECKING:`` and function-local imports counted too (what a
    module needs, not only what it loads), its modules still form no circle (docs/CONTRACTS.md has the layout)."""
    cycles = import_cycles(PACKAGE_DIR, every_import=True, inside="synthformer.tasks")
    assert cycles == [], "\n".join(cycles)


def test_the_task_contract_imports_nothing_of_the_pipeline():
    imported = {imp.target for imp in collect_imports(PACKAGE_DIR, type_checking=True)
                if imp.importer == "synthformer.tasks.contract" and imp.target.startswith("synthformer.tasks")}
    # the run configuration's types and what a prepared type declares name the hooks' arguments and results;
    # nothing else of tasks/
    assert imported == {"synthformer.tasks.run.config", "synthformer.tasks.run.task_config",
                        "synthformer.tasks.prepared.preparation"}


def test_every_import_cycle_check_counts_type_checking_and_local_imports(tmp_path):
    root = _write_package(tmp_path, {
        "tasks/contract.py": "import typing\nif typing.TYPE_CHECKING:\n    from .pipeline import Data\n",
        "tasks/pipeline.py": "def run():\n    from . import contract\n",
        "tasks/other.py": "from . import contract\n",
    })
    assert import_cycles(root) == []  # neither import runs when the modules are loaded
    (cycle,) = import_cycles(root, every_import=True, inside="synthformer.tasks")
    assert "synthformer.tasks.contract -> synthformer.tasks.pipeline (synthformer/tasks/contract.py:3)" in cycle


def registered_names() -> dict[str, set[str]]:
    """Each registered task-type and architecture name -> the modules allowed to compare with it: those that
    register it (the task type's class, the architecture's config class and builder)."""
    from synthformer.models.registry import _ARCHS
    from synthformer.tasks import get_task_type, list_task_types

    owners: dict[str, set[str]] = {}
    for name in list_task_types():
        owners.setdefault(name, set()).add(type(get_task_type(name)).__module__)
    for arch, (config_cls, builder) in _ARCHS.items():
        owners.setdefault(arch, set()).update({config_cls.__module__, builder.__module__})
    return owners


def name_comparisons(root: Path, owners: dict[str, set[str]]) -> list[str]:
    """``path:line: expression`` for each comparison (``==``, ``!=``, ``in``, ...) with a string constant that is a
    registered name (alone or in a tuple, list or set), in a module that does not register that name."""
    found = []
    for module, path in module_names(root).items():
        for node in ast.walk(parse_module(path)):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            constants = [o for o in operands if isinstance(o, ast.Constant)]
            constants += [e for o in operands if isinstance(o, (ast.Tuple, ast.List, ast.Set)) for e in o.elts]
            names = {c.value for c in constants if isinstance(c, ast.Constant) and isinstance(c.value, str)}
            if any(module not in owners[name] for name in names & set(owners)):
                where = path.relative_to(root.parent).as_posix()
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_name_comparison_on_an_architecture_or_task_type_outside_its_registering_module():
    """Facts about an architecture or a task type (its HF class, pipeline tag, how a text is framed for it) are
    declared by the registered object and read from it, not decided by comparing its name elsewhere."""
    found = name_comparisons(PACKAGE_DIR, registered_names())
    assert found == [], "compare a declared attribute instead of the name:\n" + "\n".join(found)


def test_the_name_comparison_scan_finds_names_alone_and_in_tuples(tmp_path):
    root = _write_package(tmp_path, {
        "models/lm.py": "arch = 'lm'\nif arch == 'lm':\n    pass\n",  # the registering module may
        "hf/export.py": "def f(c):\n    return c.arch == 'lm' or c.arch in ('x', 'seq2seq') or c.kind == 'V'\n",
    })
    owners = {"lm": {"synthformer.models.lm"}, "seq2seq": {"synthformer.models.seq2seq"}}
    assert name_comparisons(root, owners) == [
        "synthformer/hf/export.py:2: c.arch == 'lm'",
        "synthformer/hf/export.py:2: c.arch in ('x', 'seq2seq')",
    ]
