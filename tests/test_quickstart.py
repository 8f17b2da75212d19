"""The README's quick start is what CI runs (.ci/run reads it through .ci/quickstart.py), and it is complete:
it installs every extra whose modules the tests import, and its test command is the plain ``python -m pytest``."""

from __future__ import annotations

import ast
import importlib.util
import re
import shlex
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest itself depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SCRIPT = ROOT / ".ci" / "quickstart.py"


def _load_quickstart():
    """.ci/quickstart.py as a module (.ci is no package: it is loaded from its path)."""
    spec = importlib.util.spec_from_file_location("ci_quickstart", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


quickstart = _load_quickstart()


def _argv(command: str) -> list[str]:
    """A command's words as the shell splits them, without its trailing comment."""
    return shlex.split(command, comments=True)


def _installed_extras(commands: list[str]) -> set[str]:
    """Extras of this project that the quick start's pip installs name (``-e ".[dev,hf]"`` -> {dev, hf})."""
    extras: set[str] = set()
    for command in commands:
        words = _argv(command)
        if "pip" not in words or "install" not in words:
            continue
        for word in words:
            match = re.fullmatch(r"\.\[([\w,\s-]+)\]", word)
            if match:
                extras.update(name.strip() for name in match.group(1).split(","))
    return extras


def _extra_modules() -> dict[str, str]:
    """Top-level import name -> the extra of pyproject.toml that provides it."""
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    dist_to_modules: dict[str, set[str]] = {}
    for module, dists in packages_distributions().items():
        for dist in dists:
            dist_to_modules.setdefault(_normalize(dist), set()).add(module)
    table: dict[str, str] = {}
    for extra, requirements in optional.items():
        for requirement in requirements:
            dist = _normalize(re.match(r"[A-Za-z0-9._-]+", requirement).group(0))
            # an extra that is not installed here still maps to its usual import name
            for module in dist_to_modules.get(dist, {dist.replace("-", "_")}):
                table[module] = extra
    return table


def _normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _imports(source: str) -> tuple[set[str], dict[str, str]]:
    """(modules imported by import statements, {module: reason} of ``pytest.importorskip`` calls), top level."""
    imported: set[str] = set()
    skipped: dict[str, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.partition(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "importorskip" and node.args:
            module = ast.literal_eval(node.args[0]).partition(".")[0]
            reasons = [ast.literal_eval(kw.value) for kw in node.keywords if kw.arg == "reason"]
            skipped[module] = reasons[0] if reasons else ""
    return imported - set(skipped), skipped


def test_quickstart_is_the_single_marked_block_of_the_readme():
    text = README.read_text()
    assert text.count(quickstart.START) == 1 and text.count(quickstart.END) == 1
    commands = quickstart.extract(text)
    block = text.split(quickstart.START)[1].split(quickstart.END)[0]
    # every non-blank line of the fenced block is one command, in the README's order
    lines = [line.rstrip() for line in block.splitlines() if line.strip() and not line.startswith(("```", "#"))]
    assert commands == lines
    assert [_argv(c) for c in commands[-2:]] == [["synthformer", "compare"], ["python", "-m", "pytest"]]
    assert all("pip" in _argv(c) and "install" in _argv(c) for c in commands[:-2])


def test_quickstart_installs_every_extra_the_tests_import():
    installed = _installed_extras(quickstart.extract(README.read_text()))
    extra_of = _extra_modules()
    assert {"transformers", "peft", "datasets", "hypothesis"} <= set(extra_of)  # the table sees the extras
    sources = {path: path.read_text() for path in sorted((ROOT / "tests").rglob("*.py"))}
    # test_readme.py runs the README's Python snippets: their imports are the tests' imports too
    sources[README] = "\n".join(re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S))
    missing: list[str] = []
    for path, source in sources.items():
        imported, skipped = _imports(source)
        for module in sorted(imported):
            if module in extra_of and extra_of[module] not in installed:
                missing.append(f"{path.relative_to(ROOT)} imports {module} (extra {extra_of[module]!r})")
        for module, reason in sorted(skipped.items()):
            extra = extra_of.get(module)
            # a test may skip without an extra only if it says which extra would run it
            if extra and extra not in installed and extra not in reason:
                missing.append(f"{path.relative_to(ROOT)} skips without {module}, reason not naming {extra!r}")
    assert not missing, "the quick start does not install what the tests need:\n" + "\n".join(missing)
    assert {"dev", "hf"} <= installed


def test_ci_reads_the_commands_from_the_readme():
    run = (ROOT / ".ci" / "run").read_text()
    assert ".ci/quickstart.py README.md" in run
    for command in quickstart.extract(README.read_text()):
        # a copy of a README command in .ci/run is what let the two drift apart before
        assert _argv(command) and shlex.join(_argv(command)) not in run and command not in run


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# title\n\n```bash\npython -m pytest\n```\n", "exactly one line"),
        ("<!-- quickstart -->\n```bash\npython -m pytest\n```\n", "'<!-- /quickstart -->'"),
        ("<!-- /quickstart -->\n```bash\nls\n```\n<!-- quickstart -->\n", "must come after"),
        ("<!-- quickstart -->\n```bash\n# only a comment\n\n```\n<!-- /quickstart -->\n", "holds no command"),
        ("<!-- quickstart -->\npip install x\n<!-- /quickstart -->\n", "fenced"),
        ("<!-- quickstart -->\n```bash\nls\n```\n```bash\nls\n```\n<!-- /quickstart -->\n", "fenced"),
    ],
)
def test_extraction_fails_loudly_on_a_readme_without_a_quickstart(tmp_path, text, message):
    with pytest.raises(quickstart.QuickstartError, match=re.escape(message)):
        quickstart.extract(text)
    readme = tmp_path / "README.md"
    readme.write_text(text)
    # the command line form, as .ci/run calls it: non-zero status, nothing on stdout, the reason on stderr
    result = subprocess.run([sys.executable, str(SCRIPT), str(readme)], capture_output=True, text=True)
    assert result.returncode == 1 and result.stdout == "" and message in result.stderr


def test_extraction_keeps_continued_lines_as_one_command(tmp_path):
    text = "<!-- quickstart -->\n```bash\npip install \\\n  -e .\n\n# a note\npython -m pytest  # tests\n```\n"
    text += "<!-- /quickstart -->\n"
    assert quickstart.extract(text) == ["pip install \\\n  -e .", "python -m pytest  # tests"]
    readme = tmp_path / "README.md"
    readme.write_text(text)
    result = subprocess.run([sys.executable, str(SCRIPT), str(readme)], capture_output=True, text=True, check=True)
    assert result.stdout.split("\0") == ["pip install \\\n  -e .", "python -m pytest  # tests", ""]


def test_ci_runs_the_readmes_triton_tests_after_the_quick_start_as_written():
    text = README.read_text()
    commands = quickstart.extract(text, "triton-tests")
    assert [_argv(c)[:4] for c in commands] == [["python", "-m", "pip", "install"], ["python", "-m", "pytest",
                                                                                   "tests/attention/test_triton.py"]]
    assert "gpu" in commands[0] and "gpu" not in _installed_extras(quickstart.extract(text))
    run = (ROOT / ".ci" / "run").read_text()
    assert ".ci/quickstart.py --block triton-tests README.md" in run
    # nothing installed between the README's install and its tests but what the README says
    assert all(command not in run for command in commands) and "'.[gpu]'" not in run
