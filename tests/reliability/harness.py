"""The machinery of the bad-input suite (the table itself is in ``bad_inputs.py``): a case, the scratch
environment it runs in, the snapshot of a run directory, and the check every case passes.

A case builds its command line inside a fresh temporary folder (writing the bad file, copying a trained run
directory and corrupting it, ...) and names the substrings the error must contain. :func:`check_case` then runs
``synthformer`` in-process and asserts what issue 14 asks of every bad input: exit status 2, exactly one line
``synthformer VERB: error: ...`` that is the last line of stderr (so a multi-line message fails) and contains the
expected substrings, no traceback, every run directory the case pointed at byte-for-byte and mtime-for-mtime
unchanged, and no run directory created where none was.
"""

from __future__ import annotations

import builtins
import copy
import errno
import hashlib
import io
import logging
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from synthformer.cli.main import main
from tests.tasks.helpers import classification_config, lm_config, seq2seq_config, write_yaml

VERBS = ("train", "prepare", "eval", "generate", "compare", "bench")
DELETE = object()
"""A config value that removes the key (see :meth:`Env.config`)."""

# Bytes that are not UTF-8 text, each in the way a user meets it.
BINARY = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 2  # an image: invalid UTF-8 at offset 0
LATIN1 = "label text\ncaf\xe9 cr\xe8me\n".encode("latin-1")  # 0xe9 at line 2
UTF16 = "text\tlabel\nhello\t1\n".encode("utf-16")  # a BOM (0xff 0xfe) at offset 0


@dataclass(frozen=True)
class Case:
    """One bad input: ``argv`` builds the command line in an :class:`Env` (creating whatever it needs there);
    every string of ``expect`` must be in the error line (``exit_code`` 0: in stderr, for inputs the program
    recovers from with a warning). ``xfail`` marks a case awaiting a fix outside this suite (the reason)."""

    id: str
    category: str
    argv: Callable[[Env], Sequence[Any]]
    expect: tuple[str, ...]
    exit_code: int = 2
    xfail: str | None = None

    def param(self) -> Any:
        """The case as a ``pytest.param`` (strict xfail when it awaits a fix)."""
        marks = [pytest.mark.xfail(strict=True, reason=self.xfail)] if self.xfail else []
        return pytest.param(self, id=self.id, marks=marks)


def case(category: str, id: str, argv: Callable[[Env], Sequence[Any]], *expect: str, exit_code: int = 2,
         xfail: str | None = None) -> Case:
    """Shorthand for :class:`Case` with the expected substrings as trailing arguments."""
    return Case(id, category, argv, expect, exit_code, xfail)


# ---------------------------------------------------------------------------------------------------------------
# trained runs (once per test process)


@dataclass
class Trained:
    """Tiny trained run directories (``lm``, ``seq2seq``, ``cls``) and the configs they were trained with."""

    root: Path
    configs: dict[str, dict[str, Any]]
    runs: dict[str, Path]


_TRAINED: dict[Path, Trained] = {}


def trained_runs(factory: pytest.TempPathFactory) -> Trained:
    """Train the three runs the first time a test process asks (about 1 s each), then hand the same ones out:
    the suite's modules share them, and every case copies the one it uses."""
    base = factory.getbasetemp()
    if base not in _TRAINED:
        root = factory.mktemp("trained")
        configs = {"lm": lm_config(root), "seq2seq": seq2seq_config(), "cls": classification_config(root)}
        runs = {}
        with _logging_restored():
            for kind, config in configs.items():
                path = write_yaml(root / f"{kind}.yaml", config)
                runs[kind] = root / f"run-{kind}"
                assert main(["train", str(path), "--run-dir", str(runs[kind]), "--no-progress", "-q"]) == 0
        _TRAINED[base] = Trained(root, configs, runs)
    return _TRAINED[base]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Trained:
    """The trained runs (import this fixture into a test module to use it)."""
    return trained_runs(tmp_path_factory)


@contextmanager
def _logging_restored() -> Iterator[None]:
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        yield
    finally:
        root.setLevel(level)
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)


# ---------------------------------------------------------------------------------------------------------------
# the environment of one case


@dataclass
class Env:
    """A case's scratch folder, the trained runs, and what the check must watch."""

    tmp: Path
    trained: Trained
    watched: list[Path] = field(default_factory=list)
    """Run directories that must come out unchanged."""
    fresh: list[Path] = field(default_factory=list)
    """Run directories that must not exist afterwards (a failed start leaves no trace)."""
    denied: set[Path] = field(default_factory=set)
    """Files whose opening fails with EACCES (the tests run as root, where chmod 000 blocks nothing)."""

    def run(self, kind: str = "lm", name: str | None = None) -> Path:
        """A copy of a trained run directory, watched."""
        path = self.tmp / (name or f"run-{kind}")
        shutil.copytree(self.trained.runs[kind], path)
        self.watched.append(path)
        return path

    def fresh_run(self, name: str = "new-run") -> Path:
        """A run (or output) directory that does not exist and must still not exist after the command."""
        path = self.tmp / name
        self.fresh.append(path)
        return path

    def write(self, name: str, data: bytes | str) -> Path:
        """Write a file under the scratch folder (parents created); return its path."""
        path = self.tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
        return path

    def config_dict(self, kind: str = "lm", changes: dict[str, Any] | None = None) -> dict[str, Any]:
        """The config ``kind`` was trained with, with dotted ``changes`` (value :data:`DELETE` removes a key)."""
        config = copy.deepcopy(self.trained.configs[kind])
        for key, value in (changes or {}).items():
            *parents, last = key.split(".")
            node = config
            for part in parents:
                node = node.setdefault(part, {})
            if value is DELETE:
                node.pop(last, None)
            else:
                node[last] = value
        return config

    def config(self, kind: str = "lm", changes: dict[str, Any] | None = None, name: str = "config.yaml") -> Path:
        """:meth:`config_dict` written as a YAML file."""
        return write_yaml(self.tmp / name, self.config_dict(kind, changes))

    def deny(self, path: Path) -> Path:
        """Make opening ``path`` fail with ``PermissionError`` during the command; return it."""
        self.denied.add(Path(path).resolve())
        return path


# ---------------------------------------------------------------------------------------------------------------
# the check


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """Every file and folder under ``root``: its content hash and modification time (folders: marked only)."""
    out: dict[str, tuple[str, int]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file():
            out[rel] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
        else:
            out[rel] = ("folder" if path.is_dir() else "other", 0)
    return out


@contextmanager
def denied_files(paths: set[Path]) -> Iterator[None]:
    """Opening any of ``paths`` (with ``open``, ``io.open`` or ``Path.open``) raises EACCES, as a file without
    read permission does for a user who is not root."""
    if not paths:
        yield
        return
    real_open = io.open

    def guarded(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, os.PathLike)) and Path(os.fsdecode(file)).resolve() in paths:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(file))
        return real_open(file, *args, **kwargs)

    io.open = builtins.open = guarded  # pathlib opens through io.open, yaml and torch through open
    try:
        yield
    finally:
        io.open = builtins.open = real_open


def run_cli(argv: Sequence[str], denied: set[Path] | None = None) -> int:
    """``synthformer ARGV`` in-process; argparse's usage errors return their status instead of raising."""
    with _logging_restored(), denied_files(denied or set()):
        try:
            return main(list(argv))
        except SystemExit as exc:
            return int(exc.code or 0)


def check_case(case: Case, env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    """Run ``case`` and assert everything the suite promises (see the module docstring)."""
    argv = [str(a) for a in case.argv(env)]
    before = {path: snapshot(path) for path in env.watched}
    capsys.readouterr()
    code = run_cli(argv, env.denied)
    out, err = capsys.readouterr()
    shown = f"\n--- stderr of synthformer {' '.join(argv)}:\n{err}"
    assert "Traceback" not in err and "Traceback" not in out, shown
    verb = next((a for a in argv if a in VERBS), None)
    prefix = f"synthformer {verb}: error: " if verb else "synthformer: error: "
    errors = [line for line in err.splitlines() if line.startswith(prefix)]
    if case.exit_code == 0:
        assert code == 0 and not errors, shown
        text = err
    else:
        assert code == case.exit_code, f"exit status {code}{shown}"
        assert len(errors) == 1, f"expected one line starting {prefix!r}{shown}"
        assert err.rstrip("\n").splitlines()[-1] == errors[0], f"the error goes on after its first line{shown}"
        text = errors[0]
    missing = [s for s in case.expect if s not in text]
    assert not missing, f"{missing} not in the message{shown}"
    for path, snap in before.items():
        assert snapshot(path) == snap, f"{path} was modified{shown}"
    for path in env.fresh:
        assert not path.exists(), f"{path} was created{shown}"
