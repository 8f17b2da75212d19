"""One module writes a run directory's files: ``synthformer/train/run.py`` (the :class:`~synthformer.train.Run`).

The criterion, read from the source with :mod:`ast` (every module of the package, functions included):

* a *run file* is one that :class:`~synthformer.train.RunDir` names: ``config.yaml``, ``model_config.json``,
  ``metrics.jsonl``, ``synthformer_tokenizer.json``, ``labels.json``, ``init_from.json``, the evaluation results.
  Code reaches them through ``RunDir``'s path attributes (``rd.config_path``, ``rd.eval_path(split)``, ...);
* a *write* is a call of a writer (``atomic_write_text``, ``atomic_output``, ``atomic_write_bytes``,
  ``save_label_set``, ``open``, ``write_text``, ``write_bytes``, ``unlink``, ``rename``, ``replace``,
  ``rmtree``, ``save``) one of whose arguments, or whose receiver (``rd.config_path.write_text(...)``), mentions
  such a path attribute;
* a call of the lower-level checkpoint writer ``save_checkpoint`` itself, imported (``save_checkpoint(...)``) or
  through an imported module (``checkpoint.save_checkpoint(...)``), outside the module that defines it.

Calls of the Run's own methods (``run.save_checkpoint(...)``, ``run.append_metrics(...)``) and of the module's
functions (``append_metrics``, ``write_evaluation``) go through the lifecycle module and are not writes here.
Reading (``load_tokenizer(rd.tokenizer_path)``, ``rd.config_path.is_file()``) is not a write. A module that needs to
write a run file opens (or receives) the :class:`Run` and asks it. Tests are not scanned.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

from tests.test_layering import PACKAGE_DIR, module_names, parse_module

#: The one module allowed to write run files.
LIFECYCLE = "synthformer.train.run"
#: RunDir's attributes that name a run file (properties, and methods taking a split).
RUN_FILE_ATTRIBUTES = frozenset({"config_path", "model_config_path", "metrics_path", "tokenizer_path", "labels_path",
                                 "init_from_path", "eval_path", "hypotheses_path"})
#: Calls that write (or delete) the file they are given.
WRITERS = frozenset({"atomic_write_text", "atomic_output", "atomic_write_bytes", "save_label_set", "open",
                     "write_text", "write_bytes", "unlink", "rename", "replace", "rmtree", "save"})
#: Lower-level writers that only the lifecycle module calls (and the module defining each).
PRIMITIVES = frozenset({"save_checkpoint"})


def _name(func: ast.expr) -> str | None:
    """The called name: ``f`` for ``f(...)`` and ``x.f(...)``."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _mentions_run_file(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in RUN_FILE_ATTRIBUTES for n in ast.walk(node))


def _imported(tree: ast.AST) -> set[str]:
    """The names the imports of ``tree`` bind (``import a.b`` binds ``a``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
    return names


def run_file_writes(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for every write of a run file in ``tree`` (the criterion of the module docstring)."""
    modules = _imported(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name, func = _name(node.func), node.func
        if name in PRIMITIVES:
            # imported, or reached through an imported module; a method of an object (the Run's) is not it
            if isinstance(func, ast.Name) or (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                                              and func.value.id in modules):
                yield node.lineno, f"{name}()"
        elif name in WRITERS:
            receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
            parts = [*node.args, *(k.value for k in node.keywords), *([receiver] if receiver is not None else [])]
            if any(_mentions_run_file(part) for part in parts):
                yield node.lineno, f"{name}() of {ast.unparse(node)[:60]}"


def _defines(tree: ast.AST, name: str) -> bool:
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name for n in ast.walk(tree))


def writers_outside(root: Path, allowed: str) -> list[str]:
    """``module:line what`` for each run-file write of the package at ``root`` outside the module ``allowed``."""
    found = []
    for module, path in module_names(root).items():
        if module == allowed:
            continue
        tree = parse_module(path)
        for line, what in run_file_writes(tree):
            primitive = what[:-2] if what.endswith("()") else None
            if primitive and _defines(tree, primitive):
                continue  # the primitive's own module
            found.append(f"{module}:{line} {what}")
    return found


def test_only_the_run_lifecycle_module_writes_run_files() -> None:
    assert (PACKAGE_DIR / "train" / "run.py").is_file()
    assert writers_outside(PACKAGE_DIR, LIFECYCLE) == [], (
        "run files are written only by synthformer.train.run (open or receive the Run and ask it)")


def test_the_scanner_finds_writes_and_spares_reads(tmp_path: Path) -> None:
    """A planted package: one module per way of writing a run file, one that only reads, and the allowed one."""
    pkg = tmp_path / "pkg"
    (pkg / "train").mkdir(parents=True)
    for init in (pkg / "__init__.py", pkg / "train" / "__init__.py"):
        init.write_text("")
    files = {
        "train/run.py": "def start(rd):\n    atomic_write_text(rd.config_path, 'x')\n",
        "train/checkpoint.py": "def save_checkpoint(path):\n    save_checkpoint(path)\n",
        "atomic.py": "def f(rd):\n    atomic_write_text(rd.model_config_path, '{}')\n",
        "receiver.py": "def f(rd):\n    rd.metrics_path.write_text('')\n",
        "context.py": "def f(rd, tok):\n    with atomic_output(rd.tokenizer_path) as tmp:\n        tok.save(tmp)\n",
        "opened.py": "def f(rd):\n    with open(rd.eval_path('test'), 'w') as fh:\n        fh.write('x')\n",
        "primitive.py": textwrap.dedent("""\
            from pkg.train import checkpoint
            def f(run, rd):
                run.save_checkpoint(0, None)  # the Run's method: through the lifecycle module
                save_checkpoint(rd.path, 0, None)
                checkpoint.save_checkpoint(rd.path, 0, None)
        """),
        "reads.py": textwrap.dedent("""\
            def f(rd):
                if rd.config_path.is_file():
                    return load_tokenizer(rd.tokenizer_path), rd.labels_path.read_text()
                atomic_write_text(rd.path / 'notes.txt', 'mine')  # not a run file
        """),
    }
    for name, text in files.items():
        (pkg / name).write_text(text)
    found = writers_outside(pkg, "pkg.train.run")
    assert [f.split(" ", 1)[0] for f in found] == ["pkg.atomic:2", "pkg.context:2", "pkg.opened:2",
                                                  "pkg.primitive:4", "pkg.primitive:5", "pkg.receiver:2"]
    assert "atomic_write_text() of atomic_write_text(rd.model_config_path" in found[0]
    # the allowed module is the one exception; without it, its write is found as any other
    assert "pkg.train.run:2 atomic_write_text() of atomic_write_text(rd.config_path, 'x')" in writers_outside(pkg, "")
