"""The speed wing (``attention/fast/``) hangs off attention/ at one point and can be skipped, replaced or deleted.

* attention/ outside the wing imports it exactly once: ``attention/__init__.py`` loads its face so that it registers
  its execution paths (``register_path``); nothing else of the shell, the kinds or the masking names it.
* Nothing outside the wing imports a module inside it (``synthformer.attention.fast.fused``, ...): other packages
  go through its face, ``synthformer.attention.fast``, and only those of :data:`FACE_USERS` do.

Imports are read with :mod:`ast` (``tests/test_layering.py``'s reader), at module level, inside functions and under
``if TYPE_CHECKING:`` alike. ``tests/attention/test_without_the_wing.py`` checks the other half: attention/ without
the wing runs every kind, on its reference and SDPA paths.
"""

from __future__ import annotations

from pathlib import Path

from .test_layering import PACKAGE_DIR, _write_package, collect_imports, package_of

WING = "synthformer.attention.fast"
#: The one module of attention/ (outside the wing) that imports it: its registration.
REGISTRATION = "synthformer.attention"
#: The packages outside attention/ that may import the wing's face: ``bench`` times paths under its settings
#: (``fast_path_settings``) and stores its calibration.
FACE_USERS = frozenset({"bench"})


def _in_wing(module: str) -> bool:
    return module == WING or module.startswith(WING + ".")


def wing_violations(root: Path) -> list[str]:
    """One line per import of the wing that the rules above forbid, with where it is."""
    problems = []
    into_attention = []
    for imp in collect_imports(root, type_checking=True):
        if _in_wing(imp.importer) or not _in_wing(imp.target):
            continue
        head = f"{imp.where(root)}: {imp.importer} imports {imp.target}"
        if package_of(imp.importer) == "attention":
            into_attention.append(imp)
            if imp.importer != REGISTRATION or imp.target != WING:
                problems.append(f"{head}: attention/ loads the speed wing in one place only, {REGISTRATION} "
                                f"importing {WING} (the shell must run without it)")
        elif imp.target != WING:
            problems.append(f"{head}, a module inside the speed wing: import from its face, {WING}")
        elif package_of(imp.importer) not in FACE_USERS:
            problems.append(f"{head}: only {', '.join(sorted(FACE_USERS))} may use the speed wing (FACE_USERS in "
                            "tests/test_layering_wing.py)")
    if len(into_attention) > 1:
        lines = ", ".join(imp.where(root) for imp in into_attention)
        problems.append(f"attention/ imports the speed wing {len(into_attention)} times ({lines}); once, in "
                        f"{REGISTRATION}")
    return problems


def test_the_wing_is_imported_once_in_attention_and_only_through_its_face_elsewhere():
    problems = wing_violations(PACKAGE_DIR)
    assert problems == [], "imports of the speed wing:\n" + "\n".join(problems)


def test_attention_registers_the_wing_exactly_once():
    """Guards against a reader that finds nothing: the registration is there, and it is the only one."""
    into = [imp for imp in collect_imports(PACKAGE_DIR, type_checking=True)
            if _in_wing(imp.target) and not _in_wing(imp.importer) and package_of(imp.importer) == "attention"]
    assert [(imp.importer, imp.target) for imp in into] == [(REGISTRATION, WING)]


def test_the_wing_check_names_each_kind_of_breach(tmp_path):
    root = _write_package(tmp_path, {
        "attention/__init__.py": "from . import fast\n",  # the registration: allowed
        "attention/fast/__init__.py": "from . import fused\n",
        "attention/fast/fused.py": "from ..masking import x\n",  # the wing may import attention/
        "attention/masking.py": "",
        "attention/shell.py": "def f():\n    from .fast import fused\n",  # a wing module, from the shell
        "attention/cross.py": "from synthformer.attention import fast\n",  # the face, a second time in attention
        "bench/measure.py": "from synthformer.attention.fast import settings_name\n",  # the face: allowed
        "models/lm.py": "from synthformer.attention.fast import x\n",  # the face, from a package not listed
        "hf/export.py": "from synthformer.attention.fast.fused import x\n",  # a module inside, from outside
    })
    problems = wing_violations(root)
    expected = [
        "synthformer/attention/shell.py:2: synthformer.attention.shell imports synthformer.attention.fast.fused: "
        "attention/ loads the speed wing in one place only",
        "synthformer/attention/cross.py:1: synthformer.attention.cross imports synthformer.attention.fast: "
        "attention/ loads the speed wing in one place only",
        "synthformer/models/lm.py:1: synthformer.models.lm imports synthformer.attention.fast: only bench may use",
        "synthformer/hf/export.py:1: synthformer.hf.export imports synthformer.attention.fast.fused, a module inside "
        "the speed wing",
        "attention/ imports the speed wing 3 times",
    ]
    assert len(problems) == len(expected), problems
    for text in expected:
        assert sum(p.startswith(text) for p in problems) == 1, (text, problems)
