"""Every ``python`` block of README.md and docs/**/*.md runs on its own, in a fresh interpreter (``doc_blocks.py``
finds them; shell blocks run in ``test_doc_commands.py``).

Each block runs in a subprocess, in a scratch folder of its own where the page's *file* blocks are saved under
their names (``my_tasks.py``, ``parity/data.py``: what the user saves) and ``configs/`` and ``../shared`` are the
repository's, as in a checkout. A file block runs by being imported as its module, any other block as a script.
What a page's earlier shell commands or prose leave for a block (an exported folder, a T5 checkpoint, a prepared
corpus, a JSONL file the config reads) is made here, tiny, only for the blocks that name it: :data:`GIVEN` (once
per session, each block getting a copy of its own). The processes are offline (Hugging Face's offline switches)
and single-threaded (the machine is shared), forked from one that imported torch (``block_server.py``: the import
is most of what a small block costs; ``test_a_block_leaves_nothing_for_the_next`` checks the forks are fresh).

A block that is not meant to run is fenced ``text``; a fence without a language fails ``test_every_fence_names_
its_language``, so nothing is left out unseen.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.tasks.helpers import LM_TEXT

from .block_server import BlockRunner
from .doc_blocks import LANGUAGES, ROOT, Block, all_blocks, blocks_of

#: one pytest-xdist worker runs the module: the block server and what GIVEN makes (trained and exported runs, a
#: prepared corpus; the session fixtures) are started and made once instead of once in each worker
pytestmark = pytest.mark.xdist_group("doc-python-blocks")

#: Fences without a language on pages this change may not edit, each with what it needs: kept visible here (and
#: failing once fixed, so the entry goes) instead of skipped.
BARE_FENCES_PENDING = {
    "docs/data.md": "the data page's folder diagram (its `DIR/manifest.json` block) needs a ```text fence; the page "
                    "is being rewritten by another change",
}


def _exported(tmp: Path, name: str) -> Path:
    """A tiny run trained for a few steps and exported as a Hugging Face folder, as ``synthformer export`` writes
    it: ``lm``, a byte-level R+V language model of 64 positions (the pipeline example's prompts and continuations
    fit); ``cls``, a word-level classifier."""
    from synthformer.cli.main import main
    from tests.tasks.helpers import classification_config, lm_config, write_yaml

    made = tmp / f"make-{name}"
    made.mkdir()
    config = lm_config(made) if name == "lm" else classification_config(made)
    if name == "lm":
        config["task"].update(tokenizer="byte", max_len=64)
        config["model"]["max_len"] = 64
    assert main(["train", str(write_yaml(made / "run.yaml", config)), "--run-dir", str(made / "run"), "-q"]) == 0
    assert main(["export", str(made / "run"), str(made / "hf"), "-q"]) == 0
    return made / "hf"


def _t5(tmp: Path) -> Path:
    """A tiny T5 checkpoint, as ``save_pretrained`` writes it (``my-t5/`` of the conversion examples)."""
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(vocab_size=64, d_model=16, d_kv=4, num_heads=4, d_ff=32, num_layers=1, decoder_start_token_id=0)
    T5ForConditionalGeneration(config).save_pretrained(tmp / "made-t5")
    return tmp / "made-t5"


def _pairs(tmp: Path) -> Path:
    """``data/pairs``: the JSONL lines docs/extending.md shows, a few of each label."""
    out = tmp / "made-pairs"
    out.mkdir()
    rows = [{"premise": f"a man rides bike {i}", "hypothesis": "a person is outside", "label": i % 2}
            for i in range(64)]  # two batches of the cls-small preset's 32
    for split in ("train", "valid"):
        (out / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return out


def _prepared_c4(tmp: Path) -> Path:
    """``prepared/c4``: a tiny corpus in C4's file layout through ``synthformer prepare`` (docs/data.md's command)."""
    from synthformer.cli.main import main

    c4 = tmp / "made-c4" / "en"
    c4.mkdir(parents=True)
    for name in ("c4-train.00000-of-01024", "c4-validation.00000-of-00008"):
        with gzip.open(c4 / f"{name}.json.gz", "wt", encoding="utf-8") as fh:
            for d in range(24):
                fh.write(json.dumps({"text": " ".join(WORDS[d * 20:d * 20 + 20])}) + "\n")
    out = tmp / "made-prepared"
    code = main(["prepare", str(ROOT / "configs" / "t5_small_pretrain_c4.yaml"), "--out", str(out), "-q",
                 "task.prepared=null", f"task.train={c4}/c4-train.*.json.gz",
                 f"task.valid={c4}/c4-validation.*.json.gz", "task.vocab_size=300", "--accept-smaller-vocab"])
    assert code == 0
    return out


#: What a block may name that the page's earlier steps make: its path in the scratch folder -> how to make it.
GIVEN: dict[str, Callable[[Path], Path]] = {
    "exported/shk-R": lambda tmp: _exported(tmp, "lm"),
    "exported/cls": lambda tmp: _exported(tmp, "cls"),
    "my-t5": _t5,
    "data/pairs": _pairs,
    "prepared/c4": _prepared_c4,
}
WORDS = LM_TEXT.split()
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
ENV = {**os.environ, **OFFLINE, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1"}  # each block's, with its HF_HOME


def _page_files(block: Block) -> list[Block]:
    text = (ROOT / block.page).read_text(encoding="utf-8")
    return [b for b in blocks_of(text, block.page) if b.file]


def _scratch(tmp: Path, block: Block, files: list[Block], given: Callable[[str], Path]) -> Path:
    """The folder a block runs in: the page's files, configs/, ../shared and what the block names of GIVEN (each a
    copy of its own, so that no block sees what another did to it)."""
    work = tmp / "work"
    work.mkdir()
    (work / "configs").symlink_to(ROOT / "configs")
    if (ROOT.parent / "shared").exists():  # ../shared/data of the docs, seen from the scratch folder
        (tmp / "shared").symlink_to(ROOT.parent / "shared")
    for f in files:
        (work / f.file).parent.mkdir(parents=True, exist_ok=True)
        (work / f.file).write_text(f.code, encoding="utf-8")
    named = block.code + "".join(f.code for f in files)
    for path in GIVEN:
        if path in named:
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(given(path), work / path)
    return work


def run_block(block: Block, tmp: Path, runner: BlockRunner, given: Callable[[str], Path],
              files: list[Block] | None = None) -> subprocess.CompletedProcess[str]:
    """Run one block on its own (see the module docstring)."""
    files = _page_files(block) if files is None else files
    work = _scratch(tmp, block, files, given)
    if block.module:
        argv = [sys.executable, "-c", f"import importlib; importlib.import_module({block.module!r})"]
    else:
        (work / "_doc_block.py").write_text(block.code, encoding="utf-8")
        argv = [sys.executable, "_doc_block.py"]
    env = {**ENV, "HF_HOME": str(tmp / "hf_home")}
    return runner.run(argv, cwd=work, env=env, timeout=600)


@pytest.fixture(scope="session")
def runner() -> Iterator[BlockRunner]:
    """Fresh interpreters for the blocks, forked from one that imported torch (``block_server.py``): the import
    is most of a small block's cost, and no part of what a block is checked for."""
    made = BlockRunner(ENV)
    yield made
    made.close()


@pytest.fixture(scope="session")
def given(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``GIVEN[path]``'s folder, made once per session when a block first names it (a tiny run trained and
    exported costs seconds; every block that names it gets a copy, the same as it would have made)."""
    made: dict[str, Path] = {}
    root = tmp_path_factory.mktemp("given")

    def get(path: str) -> Path:
        if path not in made:
            made[path] = GIVEN[path](root)
        return made[path]

    return get


PYTHON_BLOCKS = [b for b in all_blocks() if b.language == "python"]


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.where for b in PYTHON_BLOCKS])
def test_every_python_block_runs_on_its_own(block: Block, tmp_path: Path, runner: BlockRunner,
                                            given: Callable[[str], Path]) -> None:
    done = run_block(block, tmp_path, runner, given)
    assert done.returncode == 0, f"{block.where} does not run on its own:\n{done.stderr[-3000:]}"


def test_every_fence_names_its_language() -> None:
    bare = sorted({b.page for b in all_blocks() if not b.language})
    assert bare == sorted(BARE_FENCES_PENDING), (
        "fence each block with its language (```text for output, diagrams and signatures): "
        + ", ".join(b.where for b in all_blocks() if not b.language and b.page not in BARE_FENCES_PENDING))
    unknown = [f"{b.where}: {b.language}" for b in all_blocks() if b.language and b.language not in LANGUAGES]
    assert not unknown, f"fences of a language no test knows: {unknown}"


def test_the_blocks_and_files_are_found() -> None:
    pages = {b.page for b in PYTHON_BLOCKS}
    assert {"README.md", "docs/extending.md", "docs/huggingface.md"} <= pages
    files = {b.file for b in all_blocks() if b.file}
    assert {"my_tasks.py", "pairs.yaml", "parity/__init__.py", "parity/data.py", "tied.py"} <= files
    assert sum(b.page == "README.md" for b in PYTHON_BLOCKS) >= 5


@pytest.mark.parametrize(("code", "error"), [
    ("import torch\n", None),
    ("x = torch.zeros(1)\n", "NameError: name 'torch' is not defined"),  # a block that needs an earlier one's import
    ("from helper import VALUE\nassert VALUE == 2\n", "AssertionError"),  # it reads the page's file, saved
])
def test_a_block_runs_alone_with_only_the_pages_files(code: str, error: str | None, tmp_path: Path,
                                                      runner: BlockRunner, given: Callable[[str], Path]) -> None:
    helper = Block("planted.md", 1, "python", "VALUE = 1\n", "helper.py")
    done = run_block(Block("planted.md", 5, "python", code), tmp_path, runner, given, files=[helper])
    assert (done.returncode == 0) == (error is None) and (error or "") in done.stderr, done.stderr[-2000:]


def test_every_shell_block_is_one_the_commands_test_reads() -> None:
    from .doc_commands import _FENCE, doc_files

    shell = {"bash", "sh", "shell", "console"}
    read = {str(p.relative_to(ROOT)) for p in doc_files()}
    for page in {b.page for b in all_blocks() if b.language in shell}:
        assert page in read, f"{page} has shell blocks that test_doc_commands.py does not read"
        blocks = [b for b in all_blocks() if b.page == page and b.language in shell]
        assert len(_FENCE.findall((ROOT / page).read_text(encoding="utf-8"))) == len(blocks), page


def test_a_block_leaves_nothing_for_the_next(tmp_path: Path, runner: BlockRunner,
                                             given: Callable[[str], Path]) -> None:
    """The blocks' interpreters are forked from one server (``block_server.py``): what a block does to its modules,
    environment or working directory is gone for the next, which starts as ``python _doc_block.py`` does."""
    first = "import os\nimport torch\ntorch.planted = 1\nos.environ['PLANTED'] = '1'\nos.chdir('..')\n"
    second = ("import os\nimport sys\nimport torch\n"
              "assert not hasattr(torch, 'planted') and 'PLANTED' not in os.environ\n"
              "assert os.path.isfile('_doc_block.py') and sys.argv == ['_doc_block.py']\n"
              "assert sys.path[0] == os.getcwd() and torch.get_num_threads() == 1 and __name__ == '__main__'\n")
    for n, code in enumerate((first, second)):
        (tmp_path / str(n)).mkdir()
        done = run_block(Block("planted.md", 1 + 8 * n, "python", code), tmp_path / str(n), runner, given, files=[])
        assert done.returncode == 0, done.stderr[-2000:]
