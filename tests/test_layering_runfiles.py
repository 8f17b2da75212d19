"""One module writes under a run directory: ``synthformer/train/run.py`` (the :class:`~synthformer.train.Run`).

Everything a run directory holds is written there: the run files :class:`~synthformer.train.RunDir` names, and the
*extra files* of anyone else (a study's clock and result, an analysis' folder), which go through the Run's
extra-file API (``run.write_extra``, ``run.append_extra_jsonl``, ``run.extra_dir``; ``open_extras(path)`` for a
run nobody holds open). The criterion, read from the source with :mod:`ast` (every module of the package, functions
included; tests are not scanned):

* a *run-directory path* is an expression that derives from a run directory. Its sources: a name or attribute
  called ``run_dir`` or ``rundir``; an attribute naming a run file (``rd.config_path``, ``rd.eval_path(split)``,
  ... ``RUN_FILE_ATTRIBUTES``) or a name of one (``RunDir.CONFIG``); ``RunDir(...)``, ``Run.open(...)`` (and
  of a subclass of ``Run``), ``open_extras(...)``; a parameter annotated with one of ``RUN_TYPES``. It derives
  on through assignments (``x = src``, ``for x in src.iterdir()``, ``with ... as x``, ``self.x = src`` for the
  methods of the class), ``/``, ``+``, f-strings, ``Path(...)``/``str(...)``/``os.path.join(...)`` and methods
  called on it (``src.with_suffix(...)``). Other calls end it: ``load_run(run_dir)`` returns no path. The folder
  ``run.extra_dir(name)`` hands out is its caller's (the Run checked that it collides with nothing): writing in
  it is not a write here;
* a *write* is a call of a writer (``PATH_ARGUMENTS``: ``atomic_write_text(path, ...)``, ``rmtree(path)``,
  ``savefig(path)``, ``open(path, "w")``, not ``open(path)``; ``RECEIVER_WRITERS``: ``path.write_text(...)``,
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

import textwrap
from pathlib import Path

from tests.run_writes_scan import writers_outside
from tests.test_layering import PACKAGE_DIR

#: The modules allowed to write under a run directory: the lifecycle module, and the parts of the run's own record
#: that it delegates (each written only for the Run or the Trainer holding it).
ALLOWED: dict[str, str] = {
    "synthformer.train.run": "the lifecycle: the run files and everyone's extra files",
    "synthformer.train.checkpoint": "the checkpoint format in checkpoints/ (save_checkpoint: called by the Run)",
    "synthformer.train.runlock": "the lock file RUN/.lock (taken by the Run's open)",
    "synthformer.train.tracking": "RUN/tensorboard/ and RUN/trackers/: the writers the Trainer opens for its logs",
}

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
