"""No module replaces a method of a :class:`~synthformer.train.Trainer` on an instance: whoever wants to know of its
steps, evaluations and checkpoints registers a :class:`~synthformer.train.TrainerCallback`.

The criterion, read from the source with :mod:`ast` (every module of the package, functions included; tests are
not scanned, and may stub a trainer's step to simulate a failure):

* the *methods* are the functions defined in ``class Trainer`` (``synthformer/train/trainer.py``), private ones
  included; properties are attributes (``trainer.heartbeat_s = 5`` sets one, as designed);
* a *Trainer instance* is a name or attribute called ``trainer`` or ``*_trainer`` (``trainer``,
  ``self.trainer``), a name assigned from a call of a class whose name ends in ``Trainer``, a parameter annotated
  with such a class, and ``self`` in the methods of such a class;
* a *patch* is an assignment (``=``, ``+=``, annotated) to an attribute of a Trainer instance named as one of the
  methods, or ``setattr(instance, name, ...)`` whose name is a method's or not a constant (``for name in (...):
  setattr(trainer, name, ...)`` could replace any).
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

from tests.test_layering import PACKAGE_DIR, module_names

TRAINER_FILE = PACKAGE_DIR / "train" / "trainer.py"


def trainer_methods(tree: ast.AST, cls: str = "Trainer") -> set[str]:
    """The methods of class ``cls`` in ``tree`` (properties and their setters left out)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return {f.name for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and not any(_is_property(d) for d in f.decorator_list)}
    raise AssertionError(f"no class {cls} in the tree")


def _is_property(decorator: ast.expr) -> bool:
    name = decorator.attr if isinstance(decorator, ast.Attribute) else getattr(decorator, "id", "")
    return name in {"property", "cached_property", "setter", "deleter"}


def _trainer_type(node: ast.expr | None) -> bool:
    """Whether ``node`` (an annotation, a called class) names a class ending in ``Trainer``."""
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.split("[")[0].split("|")[0].strip().endswith("Trainer")
    return any((isinstance(n, ast.Name) and n.id.endswith("Trainer"))
               or (isinstance(n, ast.Attribute) and n.attr.endswith("Trainer")) for n in ast.walk(node))


def _functions(tree: ast.AST) -> Iterator[tuple[ast.AST, bool]]:
    """The module and every function in it, with whether the function is a method of a Trainer class."""
    in_trainer_class = {id(f) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                        and (node.name.endswith("Trainer") or any(_trainer_type(b) for b in node.bases))
                        for f in node.body}
    yield tree, False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node, id(node) in in_trainer_class


def _is_instance(node: ast.expr, instances: set[str]) -> bool:
    """Whether ``node`` is a Trainer instance: one of the names ``instances``, or called ``trainer``/``*_trainer``."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return (isinstance(node, ast.Name) and name in instances) or name == "trainer" or name.endswith("_trainer")


def patches(tree: ast.AST, methods: set[str]) -> Iterator[tuple[int, str]]:
    """(line, what) for each patch of a Trainer's method in ``tree`` (the criterion of the module docstring)."""
    found: dict[int, str] = {}
    for func, in_trainer_class in _functions(tree):
        instances = {"self"} if in_trainer_class else set()
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            every = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
            instances |= {a.arg for a in every if _trainer_type(a.annotation)}
        body = list(ast.walk(func))
        for node in body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _trainer_type(node.value.func):
                instances |= {t.id for t in node.targets if isinstance(t, ast.Name)}

        for node in body:
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr in methods and _is_instance(target.value,
                                                                                                 instances):
                    found.setdefault(node.lineno, f"assigns {ast.unparse(target)}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                    and len(node.args) >= 2 and _is_instance(node.args[0], instances)):
                name = node.args[1]
                constant = isinstance(name, ast.Constant) and isinstance(name.value, str)
                if not constant or name.value in methods:
                    found.setdefault(node.lineno, f"{ast.unparse(node)[:60]}")
    yield from sorted(found.items())


def patches_in(root: Path, methods: set[str]) -> list[str]:
    """``module:line what`` for each patch of a Trainer's method in the package at ``root``."""
    out = []
    for module, path in module_names(root).items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        out += [f"{module}:{line} {what}" for line, what in patches(tree, methods)]
    return out


def test_no_module_replaces_a_method_of_a_trainer() -> None:
    methods = trainer_methods(ast.parse(TRAINER_FILE.read_text(encoding="utf-8")))
    assert {"evaluate", "save", "train", "add_callback"} <= methods and "heartbeat_s" not in methods
    assert patches_in(PACKAGE_DIR, methods) == [], (
        "a Trainer's methods are not replaced on an instance: register a TrainerCallback (trainer.add_callback)")


def test_the_patch_scanner_finds_patches_and_spares_the_rest() -> None:
    methods = trainer_methods(ast.parse(TRAINER_FILE.read_text(encoding="utf-8")))
    tree = ast.parse(textwrap.dedent("""\
        def attach(self, trainer):
            for name in ("evaluate", "save"):
                setattr(trainer, name, self._timed(getattr(trainer, name)))
        def wrap(clock):
            clock.trainer.save = clock.timed(clock.trainer.save)
        def build(model, data, config, run, t: "Trainer"):
            mine = Trainer(model, data, config, run)
            mine.evaluate = lambda: {}
            t._train_step = None
            setattr(t, "train", None)
        class MyTrainer(Trainer):
            def __init__(self):
                self.save = None
        def fine(trainer, other, config, callback):
            trainer.heartbeat_s = 5.0      # a property
            trainer.eval_fn = None         # an attribute, not a method
            trainer.add_callback(callback)
            other.save = None              # not a Trainer
            config.train = None            # nor this
            setattr(trainer, "heartbeat_s", None)
    """))
    assert [line for line, _ in patches(tree, methods)] == [3, 5, 8, 9, 10, 13]
