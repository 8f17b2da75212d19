"""The suite of docs/extending.md ("A task suite"), written into a folder as the page lays it out: importing it
registers its task type and generator, its documented tests pass, and its run config resolves and trains, with no
edit anywhere in synthformer."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from synthformer.tasks import (
    get_generator,
    get_task_type,
    list_generators,
    list_task_types,
    load_raw_data,
    load_run_config,
    train_run,
    unregister_generator,
    unregister_task_type,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"
FILES = {"parity/__init__.py", "parity/data.py", "parity/generator.py", "parity/metrics.py", "parity/task_type.py",
         "test_parity.py"}


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("\n## A task suite\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def _files() -> dict[str, str]:
    """Each python block of the section under the file name that introduces it (`` `parity/data.py` ...:``)."""
    return dict(re.findall(r"`([\w/]+\.py)`[^\n]*(?:\n[^\n`]+)*\n\n```python\n(.*?)```", _section(), flags=re.S))


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    files = _files()
    assert set(files) == FILES, "the section's files changed: update FILES"
    for name, code in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(code, encoding="utf-8")
    (config,) = re.findall(r"```yaml\n(.*?)```", _section(), flags=re.S)
    (tmp_path / "parity.yaml").write_text(config, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    # the registry and the module cache as they were: other tests see no parity
    if "parity" in list_task_types():
        unregister_task_type("parity")
    if "parity" in list_generators():
        unregister_generator("parity")
    for module in [m for m in sys.modules if m.split(".")[0] in ("parity", "test_parity")]:
        del sys.modules[module]


def test_importing_the_suite_registers_its_task_type_and_generator(suite: Path) -> None:
    assert "parity" not in list_task_types()
    importlib.import_module("parity")
    assert get_task_type("parity").default_generator == "parity"
    assert "balanced_accuracy" in get_task_type("parity").metrics
    assert get_generator("parity")[0].task_type == "parity"


def test_the_documented_tests_of_the_suite_pass(suite: Path) -> None:
    tests = importlib.import_module("test_parity")
    names = [n for n in dir(tests) if n.startswith("test_")]
    assert len(names) == 2
    for name in names:
        getattr(tests, name)()


def test_the_run_config_naming_the_suite_resolves_and_trains(suite: Path) -> None:
    importlib.import_module("parity")
    run = load_run_config(suite / "parity.yaml", ["train.steps=2", "train.batch_size=4", "train.eval_steps=1",
                                                  "model.d_model=16", "model.n_heads=2", "model.n_layers=1",
                                                  "model.d_ff=32", "task.generator_options.num_train=16",
                                                  "task.generator_options.num_valid=8"])
    assert (run.task.type, run.task.generator) == ("parity", "parity")  # the type's default generator
    raw = load_raw_data(run.task)
    assert raw.label_set == ["even", "odd"] and len(raw.splits["train"][0][0].split()) == 24
    result = train_run(run, suite / "runs" / "parity")
    assert 0.0 <= result.metrics["eval_balanced_accuracy"] <= 1.0
