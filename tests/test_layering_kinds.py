"""No name-keyed per-kind table outside the kind's own module.

A fact about an attention kind or a whole token mixer (its multiply-adds, its fast path, its parameter count) is
declared by the registered class, in its own module, and read from it: adding a kind is then one file. This scan
reads the package's source with :mod:`ast` and reports every dict literal at module or class level whose string
keys name two or more registered kinds or mixers (aliases and ``+`` mixtures included) in a module that does not
define them all. Measurements and goals of particular kinds (records, benchmark configs) live outside ``src``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_layering import PACKAGE_DIR, _write_package, module_names, parse_module

#: file -> why its table of kinds is not a fact a kind's class should declare (a new entry needs a reason).
ALLOWED: dict[str, str] = {
    # the LRA harness's experiment: which kinds the LRA comparison runs, their row labels, and the options of
    # that comparison (k = 32 for FR and Linformer, as in the paper's encoder table); a benchmark configuration,
    # not a property of the kinds (another experiment picks other kinds and options)
    "synthformer/bench/lra.py": "LRA_KINDS: the LRA benchmark's configuration",
}


def registered_owners() -> dict[str, str]:
    """Each registered kind and whole-mixer name and alias, lower-cased -> the module of its class."""
    from synthformer.attention import get_mixer, registered_kinds, registered_mixers

    owners = {}
    for name in registered_kinds() + registered_mixers():
        cls = get_mixer(name)
        for key in (name, *getattr(cls, "aliases", ())):
            owners[key.lower()] = cls.__module__
    return owners


def _named(key: ast.expr | None, owners: dict[str, str]) -> list[str]:
    """The registered names a dict key names: itself, or each part of a ``+`` mixture."""
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return []
    parts = [p.strip().lower() for p in key.value.split("+")]
    return parts if all(p in owners for p in parts) else []


def _top_level_dicts(tree: ast.Module) -> list[ast.Dict]:
    """The dict literals assigned at module level or in a class body (functions are not tables)."""
    bodies, found = [tree.body], []
    while bodies:
        for node in bodies.pop():
            if isinstance(node, ast.ClassDef):
                bodies.append(node.body)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                found += [n for n in ast.walk(node.value) if isinstance(n, ast.Dict)]
    return found


def kind_tables(root: Path, owners: dict[str, str]) -> list[str]:
    """``path:line: names`` for each dict literal keyed by two or more registered names, in a module that does not
    define every one of them."""
    found = []
    for module, path in module_names(root).items():
        tree = parse_module(path)
        for table in _top_level_dicts(tree):
            names = sorted({n for key in table.keys for n in _named(key, owners)})
            if len(names) >= 2 and any(owners[n] != module for n in names):
                found.append(f"{path.relative_to(root.parent).as_posix()}:{table.lineno}: {', '.join(names)}")
    return found


def test_no_per_kind_table_outside_the_kinds_modules():
    owners = registered_owners()
    found = [f for f in kind_tables(PACKAGE_DIR, owners) if f.split(":")[0] not in ALLOWED]
    assert found == [], ("declare these facts on the kind's (or mixer's) class in its own module and read them "
                         "from the registered class:\n" + "\n".join(found))


def test_the_scan_finds_a_planted_table(tmp_path):
    root = _write_package(tmp_path, {
        "attention/dense.py": "TABLE = {'D': 1, 'FD': 2}\n",  # the kinds' own module may
        "bench/flops.py": "COUNTS = {'D': 1, 'FD': 2, 'other': 3}\n"
                          "class Goals:\n    by_kind = {'R+V': 1.0, 'dense': 0.8}\n"
                          "def f():\n    return {'D': 1, 'FD': 2}\n"  # inside a function: not a table
                          "ONE = {'D': 1, 'width': 2}\n",  # one name: not a per-kind table
    })
    owners = {"d": "synthformer.attention.dense", "dense": "synthformer.attention.dense",
              "fd": "synthformer.attention.dense", "r": "synthformer.attention.random_synthesizer",
              "v": "synthformer.attention.vanilla"}
    assert kind_tables(root, owners) == [
        "synthformer/bench/flops.py:1: d, fd",
        "synthformer/bench/flops.py:3: dense, r, v",
    ]
