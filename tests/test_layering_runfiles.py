"""One module writes under a run directory: ``synthformer/train/run.py`` (the :class:`~synthformer.train.Run`).

Everything a run directory holds is written there: the run files :class:`~synthformer.train.RunDir` names, and the
*extra files* of anyone else (a study's clock and result, an analysis' folder), which go through the Run's
extra-file API (``run.write_extra``, ``run.append_extra_jsonl``, ``run.extra_dir``; ``open_extras(path)`` for a
run nobody holds open). The criterion, read from the source with :mod:`ast` (every module of the package, functions
included; tests are not scanned):

* a *run-directory path* is an expression that derives from a run directory. Its sources: a name or attribute
  called ``run_dir`` or ``rundir``; an attribute naming a run file (``rd.config_path``, ``rd.eval_path(split)``,
  ... :data:`RUN_FILE_ATTRIBUTES`) or a name of one (``RunDir.CONFIG``); ``RunDir(...)``, ``Run.open(...)`` (and
  of a subclass of ``Run``), ``open_extras(...)``; a parameter annotated with one of :data:`RUN_TYPES`. It derives
  on through assignments (``x = src``, ``for x in src.iterdir()``, ``with ... as x``, ``self.x = src`` for the
  methods of the class), ``/``, ``+``, f-strings, ``Path(...)``/``str(...)``/``os.path.join(...)`` and methods
  called on it (``src.with_suffix(...)``). Other calls end it: ``load_run(run_dir)`` returns no path. The folder
  ``run.extra_dir(name)`` hands out is its caller's (the Run checked that it collides with nothing): writing in
  it is not a write here;
* a *write* is a call of a writer (:data:`PATH_ARGUMENTS`: ``atomic_write_text(path, ...)``, ``rmtree(path)``,
  ``savefig(path)``, ``open(path, "w")``, not ``open(path)``; :data:`RECEIVER_WRITERS`: ``path.write_text(...)``,
  ``path.unlink()``, ``path.mkdir()``, ...) whose path is a run-directory path, or of a function of the package that
  passes one of its parameters on to a write (``write_json(out / "x.json", ...)`` with ``write_json`` writing its
  ``path``: found by following the package's functions, by name, until nothing changes);
* a call of the lower-level checkpoint writer ``save_checkpoint`` itself, imported (``save_checkpoint(...)``) or
  through an imported module (``checkpoint.save_checkpoint(...)``), outside the module that defines it.

The functions and methods of the allowed modules (:data:`ALLOWED`) are the API, not writes: ``run.save_checkpoint``,
``run.write_extra``, ``append_metrics``, ``write_evaluation``. Reading (``rd.config_path.is_file()``,
``open(run_dir / "x")``) is not a write. A module that needs to write under a run directory opens (or receives) the
:class:`Run` and asks it.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.test_layering import PACKAGE_DIR, module_names

#: The modules allowed to write under a run directory: the lifecycle module, and the parts of the run's own record
#: that it delegates (each written only for the Run or the Trainer holding it).
ALLOWED: dict[str, str] = {
    "synthformer.train.run": "the lifecycle: the run files and everyone's extra files",
    "synthformer.train.checkpoint": "the checkpoint format in checkpoints/ (save_checkpoint: called by the Run)",
    "synthformer.train.runlock": "the lock file RUN/.lock (taken by the Run's open)",
    "synthformer.train.tracking": "RUN/tensorboard/ and RUN/trackers/: the writers the Trainer opens for its logs",
}
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


def test_only_the_run_lifecycle_module_writes_under_a_run_directory() -> None:
    assert (PACKAGE_DIR / "train" / "run.py").is_file()
    assert writers_outside(PACKAGE_DIR, set(ALLOWED)) == [], (
        "only synthformer.train.run writes under a run directory: open or receive the Run and ask it "
        "(run.write_extra, run.append_extra_jsonl, run.extra_dir; open_extras(path) for a finished run)")


def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "pkg"
    (pkg / "train").mkdir(parents=True)
    for init in (pkg / "__init__.py", pkg / "train" / "__init__.py"):
        init.write_text("")
    for name, text in files.items():
        (pkg / name).write_text(textwrap.dedent(text))
    return pkg


def test_the_scanner_finds_writes_of_run_files_and_spares_reads(tmp_path: Path) -> None:
    """A planted package: one module per way of writing a run file, one that only reads, and the allowed one."""
    pkg = _plant(tmp_path, {
        "train/run.py": "def start(rd):\n    atomic_write_text(rd.config_path, 'x')\n",
        "train/checkpoint.py": "def save_checkpoint(path):\n    save_checkpoint(path)\n",
        "atomic.py": "def f(rd):\n    atomic_write_text(rd.model_config_path, '{}')\n",
        "receiver.py": "def f(rd):\n    rd.metrics_path.write_text('')\n",
        "context.py": "def f(rd, tok):\n    with atomic_output(rd.tokenizer_path) as tmp:\n        tok.save(tmp)\n",
        "opened.py": "def f(rd):\n    with open(rd.eval_path('test'), 'w') as fh:\n        fh.write('x')\n",
        "primitive.py": """\
            from pkg.train import checkpoint
            def f(run, rd):
                run.save_checkpoint(0, None)  # the Run's method: through the lifecycle module
                save_checkpoint(rd.path, 0, None)
                checkpoint.save_checkpoint(rd.path, 0, None)
        """,
        "reads.py": """\
            def f(rd):
                if rd.config_path.is_file():
                    return load_tokenizer(rd.tokenizer_path), rd.labels_path.read_text(), open(rd.metrics_path)
        """,
    })
    found = writers_outside(pkg, {"pkg.train.run"})
    assert [f.split(" ", 1)[0] for f in found] == ["pkg.atomic:2", "pkg.context:2", "pkg.opened:2",
                                                  "pkg.primitive:4", "pkg.primitive:5", "pkg.receiver:2"]
    assert "atomic_write_text() of atomic_write_text(rd.model_config_path" in found[0]
    # the allowed module is the one exception; without it, its write is found as any other
    unguarded = writers_outside(pkg, set())
    assert "pkg.train.run:2 atomic_write_text() of atomic_write_text(rd.config_path, 'x')" in unguarded


def test_the_scanner_finds_any_write_under_a_run_directory(tmp_path: Path) -> None:
    """Extra files written past the Run: through a name, an attribute of ``self``, a record's ``run_dir``, a helper
    of another module (two calls deep), an opened run, a study's run folder, a library handed the folder; and the
    clean ways: the Run's extra-file API, the folder it hands out, paths that are no run's, a run's path as text."""
    pkg = _plant(tmp_path, {
        "helpers.py": """\
            def write_json(path, data):
                path.write_text(str(data))
            def write_both(folder, data):
                write_json(folder / "a.json", data)
                write_json(folder / "b.json", data)
        """,
        "named.py": "def f(run_dir):\n    atomic_write_text(Path(run_dir) / 'notes.txt', 'mine')\n",
        "clock.py": """\
            class Clock:
                def __init__(self, run_dir):
                    self.path = Path(run_dir) / "clock.jsonl"
                def record(self):
                    with open(self.path, "a") as fh:
                        fh.write("{}")
        """,
        "record.py": "def f(record):\n    atomic_write_text(Path(record.run_dir) / 'result.json', '{}')\n",
        "deep.py": """\
            from pkg.helpers import write_both, write_json
            def f(loaded):
                out = loaded.run_dir / "analysis"
                write_json(out / "analysis.json", {})
                write_both(data={}, folder=out)
        """,
        "opened.py": """\
            def f(path, rd: RunDir, v):
                with Run.open(path) as run:
                    (run.path / "x").write_text("")
                RunDir(path).path.joinpath("y").mkdir()
                for p in rd.path.iterdir():
                    p.unlink()
                shutil.rmtree(run_dir_of(path, v, 0) / "old")
                writer = SummaryWriter(log_dir=str(rd.tensorboard_path))
        """,
        "clean.py": """\
            from pkg.helpers import write_json
            def f(run: Run, run_dir, out, trainer, model):
                run.write_extra("notes.json", "{}")
                run.append_extra_jsonl("clock.jsonl", {"step": 1})
                folder = open_extras(run_dir).extra_dir("analysis")
                write_json(folder / "analysis.json", {})
                (folder / "figure.png").write_bytes(b"")
                atomic_write_text(out / "table.md", f"runs in {run_dir}")
                torch.save(model.state_dict(), out / "weights.pt")
                trainer.save()
                loaded = load_run(run_dir)
                write_json(out / loaded.name, {"run_dir": str(run_dir)})
                with open(run_dir / "metrics.jsonl") as fh, (Path(run_dir) / "x").open() as other:
                    return fh.read(), other.read(), (run_dir / "y").read_text()
        """,
    })
    found = writers_outside(pkg, set())
    assert [f.split(" ", 1)[0] for f in found] == [
        "pkg.clock:5", "pkg.deep:4", "pkg.deep:5", "pkg.named:2", "pkg.opened:3", "pkg.opened:4", "pkg.opened:6",
        "pkg.opened:7", "pkg.opened:8", "pkg.record:2"]
    assert "pkg.deep:5 write_both() (writes its folder) of write_both(data={}, folder=out)" in found
    assert "pkg.clock:5 open() of open(self.path, 'a')" in found
