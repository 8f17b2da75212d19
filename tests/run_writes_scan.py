"""The scanner behind ``test_layering_runfiles.py``: which calls write under a run directory, read from the
source with :mod:`ast` (the criterion
and the names of its constants are in that test's docstring)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.test_layering import module_names

#: The lifecycle module.
LIFECYCLE = "synthformer.train.run"
#: RunDir's attributes that name a run file or folder (properties, and methods taking a split).
RUN_FILE_ATTRIBUTES = frozenset({"config_path", "model_config_path", "metrics_path", "tokenizer_path", "labels_path",
                                 "init_from_path", "eval_path", "hypotheses_path", "checkpoints_path",
                                 "tensorboard_path"})
#: Names and attributes that hold a run directory by convention.
RUN_DIR_NAMES = frozenset({"run_dir", "rundir"})
#: Types whose instances (parameters annotated with them) are, or hold, a run directory.
RUN_TYPES = frozenset({"Run", "RunDir", "ExtraFiles"})
#: Calls whose result is a run directory besides ``RunDir(...)`` and ``<a Run type>.open(...)``.
RUN_OPENERS = frozenset({"open_extras", "run_dir_of"})
#: Calls whose result is the caller's own folder, whatever their arguments.
HANDED_OUT = frozenset({"extra_dir"})
#: Calls whose result derives from their arguments (paths built from them).
PATH_BUILDERS = frozenset({"Path", "PurePath", "PurePosixPath", "str", "fspath", "join", "joinpath", "abspath",
                           "realpath", "expanduser"})
#: Writers -> the positions of their path arguments (None: every argument). Keywords named as in
#: :data:`PATH_KEYWORDS` count too.
PATH_ARGUMENTS: dict[str, tuple[int, ...] | None] = {
    "atomic_write_text": (0,), "atomic_write_bytes": (0,), "atomic_output": (0,), "save_label_set": (1,),
    "rmtree": (0,), "remove": (0,), "makedirs": (0,), "savefig": (0,), "copy": (1,), "copy2": (1,),
    "copyfile": (1,), "copytree": (1,), "move": (1,), "rename": (0,), "replace": (0,), "save": None, "open": (0,),
}
PATH_KEYWORDS = frozenset({"path", "file", "dst", "fname", "filename"})
#: Keywords that hand a library a folder to write in (``SummaryWriter(log_dir=...)``, ``mkstemp(dir=...)``): any
#: call passing one a run-directory path writes there.
FOLDER_KEYWORDS = frozenset({"log_dir", "logging_dir", "dir"})
#: Methods that write the path they are called on.
RECEIVER_WRITERS = frozenset({"write_text", "write_bytes", "unlink", "touch", "mkdir", "rmdir", "rename", "replace",
                              "symlink_to", "hardlink_to", "save", "open"})
#: Lower-level writers that only the allowed modules call (and the module defining each).
PRIMITIVES = frozenset({"save_checkpoint"})
RUN = "<run dir>"  # the label of a run-directory path; a parameter's label is its name


def _name(func: ast.expr) -> str | None:
    """The called name: ``f`` for ``f(...)`` and ``x.f(...)``."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _opens_for_writing(call: ast.Call, mode_at: int) -> bool:
    """Whether ``open(path, mode)`` (``mode_at`` 1) or ``path.open(mode)`` (0) writes: a mode that writes, or one not
    known from the source."""
    mode = call.args[mode_at] if len(call.args) > mode_at else next(
        (k.value for k in call.keywords if k.arg == "mode"), None)
    if mode is None:
        return False
    return not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)) or any(c in mode.value for c in "wax+")


def _annotated_run(annotation: ast.expr | None, run_types: frozenset[str]) -> bool:
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    return any(_name(n) in run_types for n in ast.walk(annotation) if isinstance(n, (ast.Name, ast.Attribute)))


@dataclass
class Signature:
    """A function of the package: its parameters in order (``self`` dropped), and those it writes."""

    params: list[str]
    keywords: set[str]
    method: bool
    writes: set[str] = field(default_factory=set)


@dataclass
class Scope:
    """One function (or a module's top level) being read: what its names hold."""

    module: str
    cls: str | None
    func: ast.AST
    names: dict[str, set[str]]


class Scanner:
    """The writes under a run directory in a package's modules (the criterion of the module docstring)."""

    def __init__(self, trees: dict[str, ast.Module], allowed: frozenset[str]) -> None:
        self.trees, self.allowed = trees, allowed
        # a subclass of a run type (StartingRun) is one too
        subclasses = {n.name for tree in trees.values() for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
                      and any(_name(b) in RUN_TYPES for b in n.bases)}
        self.run_types = RUN_TYPES | subclasses
        self.signatures: dict[str, list[Signature]] = {}
        self.self_attributes: dict[tuple[str, str], set[str]] = {}
        self.found: list[tuple[str, int, str]] = []
        self._nodes: dict[int, list[ast.AST]] = {}  # id of a function (or module) -> its own nodes (_own_nodes)

    # -- what an expression derives from --------------------------------------------------------------------------
    def labels(self, node: ast.AST | None, scope: Scope) -> set[str]:
        """``RUN`` if ``node`` is a run-directory path, and the parameters of the scope it derives from."""
        if node is None:
            return set()
        if isinstance(node, ast.Name):
            return ({RUN} if node.id in RUN_DIR_NAMES else set()) | scope.names.get(node.id, set())
        if isinstance(node, ast.Attribute):
            if node.attr in RUN_DIR_NAMES or node.attr in RUN_FILE_ATTRIBUTES:
                return {RUN}
            if isinstance(node.value, ast.Name) and node.value.id == "RunDir" and node.attr.isupper():
                return {RUN}
            if (isinstance(node.value, ast.Name) and node.value.id == "self" and scope.cls is not None
                    and node.attr in self.self_attributes.get((scope.module, scope.cls), set())):
                return {RUN}
            return self.labels(node.value, scope)
        if isinstance(node, ast.Call):
            return self._call_labels(node, scope)
        if isinstance(node, ast.BinOp):
            return self.labels(node.left, scope) | self.labels(node.right, scope)
        if isinstance(node, ast.IfExp):
            return self.labels(node.body, scope) | self.labels(node.orelse, scope)
        if isinstance(node, (ast.JoinedStr, ast.Tuple, ast.List)):
            return set().union(*(self.labels(v, scope) for v in (node.values if isinstance(node, ast.JoinedStr)
                                                                  else node.elts)))
        if isinstance(node, (ast.FormattedValue, ast.Starred, ast.Subscript, ast.NamedExpr, ast.Await)):
            return self.labels(node.value, scope)
        return set()

    def _call_labels(self, node: ast.Call, scope: Scope) -> set[str]:
        name, func = _name(node.func), node.func
        if name in HANDED_OUT:
            return set()
        if name in RUN_OPENERS or name == "RunDir" or (
                name == "open" and isinstance(func, ast.Attribute) and _name(func.value) in self.run_types):
            return {RUN}
        if isinstance(func, ast.Name):
            if name in PATH_BUILDERS:
                return set().union(*(self.labels(a, scope) for a in node.args))
            return set()
        if isinstance(func, ast.Attribute):  # a method of a path: path.with_suffix(...), rd.eval_path(split)
            found = self.labels(func, scope)
            if name in PATH_BUILDERS:
                found |= set().union(*(self.labels(a, scope) for a in node.args))
            return found
        return set()

    # -- the writes of a call -------------------------------------------------------------------------------------
    def written(self, node: ast.Call, scope: Scope) -> Iterator[tuple[set[str], str]]:
        """(labels of the path written, what) for each path the call writes."""
        name, func = _name(node.func), node.func
        receiver = func.value if isinstance(func, ast.Attribute) else None
        if name is None:
            return
        if name in PATH_ARGUMENTS and not (name == "open" and not _opens_for_writing(node, 1)):
            positions = PATH_ARGUMENTS[name]
            args = [a for i, a in enumerate(node.args) if positions is None or i in positions]
            args += [k.value for k in node.keywords if positions is None or k.arg in PATH_KEYWORDS]
            if name != "open" or receiver is None:
                for arg in args:
                    yield self.labels(arg, scope), f"{name}()"
        if receiver is not None and name in RECEIVER_WRITERS and (name != "open" or _opens_for_writing(node, 0)):
            yield self.labels(receiver, scope), f"{name}()"
        for kw in node.keywords:
            if kw.arg in FOLDER_KEYWORDS:
                yield self.labels(kw.value, scope), f"{name}({kw.arg}=...)"
        for sig in self.signatures.get(name, []):
            for i, arg in enumerate(node.args):
                if i < len(sig.params) and sig.params[i] in sig.writes:
                    yield self.labels(arg, scope), f"{name}() (writes its {sig.params[i]})"
            for kw in node.keywords:
                if kw.arg in sig.writes:
                    yield self.labels(kw.value, scope), f"{name}() (writes its {kw.arg})"

    # -- reading the package --------------------------------------------------------------------------------------
    def _scopes(self, module: str, tree: ast.Module) -> Iterator[tuple[Scope, list[str]]]:
        """Every function of ``module`` (and its top level) as a scope, with its parameters; a nested function's
        scope starts with what its enclosing one's names hold."""
        def visit(node: ast.AST, cls: str | None, outer: dict[str, set[str]]) -> Iterator[tuple[Scope, list[str]]]:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    yield from visit(child, child.name, outer)
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    args = child.args
                    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
                    names = {k: set(v) for k, v in outer.items()}
                    for arg in every:
                        names[arg.arg] = {arg.arg} | ({RUN} if _annotated_run(arg.annotation, self.run_types)
                                                      else set())
                    scope = Scope(module, cls, child, names)
                    yield scope, [a.arg for a in every]
                    yield from visit(child, cls, scope.names)
                else:
                    yield from visit(child, cls, outer)

        yield Scope(module, None, tree, {}), []
        yield from visit(tree, None, {})

    def _own_nodes(self, func: ast.AST) -> list[ast.AST]:
        """The nodes of ``func``'s body, not those of the functions and classes defined in it. Listed once per
        function: the fixed point below reads every function many times, and the trees do not change."""
        if id(func) not in self._nodes:
            nodes, todo = [], list(ast.iter_child_nodes(func))
            while todo:
                node = todo.pop()
                nodes.append(node)
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    todo.extend(ast.iter_child_nodes(node))
            self._nodes[id(func)] = nodes
        return self._nodes[id(func)]

    def _bind(self, target: ast.expr, found: set[str], scope: Scope) -> bool:
        """Let ``target`` hold what ``found`` labels; whether anything changed."""
        changed = False
        if isinstance(target, ast.Name):
            before = scope.names.setdefault(target.id, set())
            changed = not found <= before
            before |= found
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                changed |= self._bind(elt, found, scope)
        elif isinstance(target, ast.Starred):
            changed = self._bind(target.value, found, scope)
        elif (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
              and scope.cls is not None and RUN in found):
            attrs = self.self_attributes.setdefault((scope.module, scope.cls), set())
            changed = target.attr not in attrs
            attrs.add(target.attr)
        return changed

    def _flow(self, scope: Scope) -> bool:
        """One pass over the scope's assignments; whether any name learnt something."""
        changed = False
        for node in self._own_nodes(scope.func):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    changed |= self._bind(target, self.labels(node.value, scope), scope)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                changed |= self._bind(node.target, self.labels(node.value, scope), scope)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                changed |= self._bind(node.target, self.labels(node.iter, scope), scope)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                changed |= self._bind(node.optional_vars, self.labels(node.context_expr, scope), scope)
            elif isinstance(node, ast.NamedExpr):
                changed |= self._bind(node.target, self.labels(node.value, scope), scope)
        return changed

    def scan(self) -> list[tuple[str, int, str]]:
        """(module, line, what) for each write under a run directory outside the allowed modules."""
        scopes = [(s, params) for module, tree in self.trees.items() for s, params in self._scopes(module, tree)]
        for scope, params in scopes:  # the signatures calls are matched against
            func = scope.func
            if scope.module in self.allowed or not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            method = scope.cls is not None and bool(params) and params[0] in {"self", "cls"}
            positional = [a.arg for a in (*func.args.posonlyargs, *func.args.args)][1 if method else 0:]
            sig = Signature(positional, {a.arg for a in func.args.kwonlyargs}, method)
            self.signatures.setdefault(func.name, []).append(sig)
            scope.signature = sig  # type: ignore[attr-defined]
        changed = True
        while changed:  # until no name, attribute of self or signature learns anything more
            changed = False
            for scope, params in scopes:
                while self._flow(scope):
                    changed = True
                sig = getattr(scope, "signature", None)
                for node in self._own_nodes(scope.func):
                    if sig is None or not isinstance(node, ast.Call):
                        continue
                    for found, _ in self.written(node, scope):
                        new = (found & set(params)) - sig.writes - {"self", "cls"}
                        if new:
                            sig.writes |= new
                            changed = True
        found: dict[tuple[str, int, int], str] = {}  # one report per call (the first writer it is)
        imports: dict[str, set[str]] = {}  # module -> the names its imports bind, read once per module
        for scope, _ in scopes:
            if scope.module in self.allowed:
                continue
            if scope.module not in imports:
                imports[scope.module] = _imported(self.trees[scope.module])
            imported = imports[scope.module]
            for node in self._own_nodes(scope.func):
                if not isinstance(node, ast.Call):
                    continue
                if _name(node.func) in PRIMITIVES and _calls_primitive(node, imported) and not _defines(
                        self.trees[scope.module], _name(node.func)):
                    found.setdefault((scope.module, node.lineno, node.col_offset), f"{_name(node.func)}()")
                for labels, what in self.written(node, scope):
                    if RUN in labels:
                        found.setdefault((scope.module, node.lineno, node.col_offset),
                                         f"{what} of {ast.unparse(node)[:70]}")
        return sorted((module, line, what) for (module, line, _), what in found.items())


def _imported(tree: ast.AST) -> set[str]:
    """The names the imports of ``tree`` bind (``import a.b`` binds ``a``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
    return names


def _calls_primitive(node: ast.Call, modules: set[str]) -> bool:
    """``f(...)`` or ``module.f(...)``: not a method of an object (the Run's ``run.save_checkpoint``)."""
    func = node.func
    return isinstance(func, ast.Name) or (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                                          and func.value.id in modules)


def _defines(tree: ast.AST, name: str | None) -> bool:
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name for n in ast.walk(tree))


def writers_outside(root: Path, allowed: frozenset[str] | set[str]) -> list[str]:
    """``module:line what`` for each write under a run directory of the package at ``root`` outside the modules
    ``allowed``."""
    trees = {module: ast.parse(path.read_text(encoding="utf-8"), str(path))
             for module, path in module_names(root).items()}
    return [f"{module}:{line} {what}" for module, line, what in Scanner(trees, frozenset(allowed)).scan()]
