"""Another package's names come through its face: a module of synthformer imports from a different top package
``synthformer.X`` only as ``from synthformer.X import name`` (the names of ``X/__init__.py``), never from a module
inside it (``synthformer.X.y``) nor a module object of it (``from synthformer.X import y``, ``import
synthformer.X.y``). Inside its own package a module imports from where a name is defined (relative imports). The
top face, ``synthformer/__init__.py``, gathers names from every package; the one other face a package may reach is
the speed wing's, ``synthformer.attention.fast`` (its own rule:
``test_layering_wing.py``).

A face re-exports only names of its own package: ``from synthformer.train import ConfigError`` would be an
echo of ``synthformer.common``'s name, so a face importing another top package's name is flagged too (the faces
import it for their own code only inside functions, or not at all).

Read from the source with :mod:`ast`, imports inside functions included, ``if TYPE_CHECKING:`` blocks too (a
type's home is part of the API as much as a function's).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_layering import PACKAGE_DIR, module_names

#: Faces below a top package that other packages may import from.
OTHER_FACES = frozenset({"synthformer.attention.fast"})


def _top(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _resolved(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = importer.split(".") if is_package else importer.split(".")[:-1]
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def face_violations(root: Path) -> list[str]:
    """``path:line: what`` for every import past another package's face and every echoed re-export."""
    modules = module_names(root)
    found = []
    for importer, path in modules.items():
        if importer == root.name:  # the top face, ``synthformer/__init__.py``, gathers the whole public API
            continue
        is_face = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        where = path.relative_to(root.parent).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules and _top(alias.name) != _top(importer) and alias.name != _top(alias.name):
                        found.append(f"{where}:{node.lineno}: import {alias.name} (import from {_top(alias.name)})")
                continue
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _resolved(node, importer, is_face)
            if target not in modules or _top(target) == _top(importer):
                continue
            if target != _top(target) and target not in OTHER_FACES:
                found.append(f"{where}:{node.lineno}: from {target} import ... (import from {_top(target)})")
                continue
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    found.append(f"{where}:{node.lineno}: from {target} import {alias.name} (a module: import "
                                 f"the names it needs from {target})")
            if is_face and node in tree.body and target != "synthformer.attention.fast":
                found.append(f"{where}:{node.lineno}: the face re-exports {target}'s "
                             f"{', '.join(a.name for a in node.names)} (import them from {target})")
    return found


def test_other_packages_are_imported_through_their_faces():
    found = face_violations(PACKAGE_DIR)
    assert not found, "imports past a package's face:\n" + "\n".join(found)


def test_the_rule_catches_what_it_was_written_for(tmp_path: Path):
    pkg = tmp_path / "synthformer"
    for folder in ("a", "b", "b/inner"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "b" / "thing.py").write_text("X = 1\n")
    (pkg / "b" / "inner" / "deep.py").write_text("Y = 1\n")
    (pkg / "b" / "__init__.py").write_text("from .thing import X\n")
    (pkg / "a" / "ok.py").write_text("from synthformer.b import X\nfrom . import sibling\n")
    (pkg / "a" / "sibling.py").write_text("from .ok import X\n")
    (pkg / "a" / "past.py").write_text("def f():\n    from synthformer.b.thing import X\n")
    (pkg / "a" / "module.py").write_text("from synthformer.b import thing\n")
    (pkg / "a" / "plain.py").write_text("import synthformer.b.inner.deep\n")
    (pkg / "a" / "__init__.py").write_text("from synthformer.b import X\n")
    found = face_violations(pkg)
    assert len(found) == 4, found
    assert any("a/past.py:2: from synthformer.b.thing" in f for f in found)
    assert any("a/module.py:1: from synthformer.b import thing (a module" in f for f in found)
    assert any("a/plain.py:1: import synthformer.b.inner.deep" in f for f in found)
    assert any("a/__init__.py:1: the face re-exports synthformer.b's X" in f for f in found)
