"""Every ``synthformer`` command the documentation shows runs: the fenced shell blocks of README.md and docs/*.md,
the examples of every ``--help`` and the commands in the configs' header comments (``doc_commands.py`` reads them
as a shell would: continued lines, ``for`` loops over every value, variables, ``torchrun``/``accelerate``/``srun``
launchers).

The rule. Each page (and each help text) runs its commands in order, as a user would type them, in a scratch folder
of its own (``configs/`` is the repository's; placeholders ``CONFIG`` and ``DIR`` are a tiny LM config and a
folder), through ``synthformer.cli.main.main`` in this process:

- ``prepare`` runs for real (it needs no model: seconds) on tiny files made under the names the commands use (C4's
  ``c4/en/*.json.gz``, ``../shared/data/...``), with ``task.vocab_size`` lowered to 300 where the config would train
  a larger vocabulary than the tiny files can give (T5's 32,100 SentencePiece pieces), and what they give accepted
  (``--accept-smaller-vocab``); a prepare with the tokenizer of an earlier (tiny) run takes its size. It must exit 0
  and leave a corpus (or, with ``--check``, find one).
- every other verb runs its own parsing and checks, loads its run config with the command's overrides (the first
  thing ``train``, ``study``, ``compare`` and ``convert`` do; the cross-field rules included, such as
  ``task.prepared`` excluding ``task.train``), and must reach the call that does the work (training, a dry run's
  plan, evaluation, generation, a comparison, a study, analysis, export, conversion, the benchmark), which is
  replaced by a stub: those need GPUs, downloads or hours, and run in their own tests on tiny data.

So a command that could never run (an option or override that is refused, a config key that does not exist, a
``prepare`` without data) fails here, naming the page, the line and the error. ``task.hf_name=null`` in the C4
prepare command of docs/data.md and ``prepare --help`` failed this way (the shipped config names ``task.prepared``,
which excludes ``task.train``); the last test keeps that so.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from synthformer.data import build_tokenizer
from tests.reliability.harness import run_cli
from tests.tasks.helpers import LM_TEXT

from .doc_commands import ROOT, Command, all_commands, commands_in_shell

WORDS = LM_TEXT.split()
PLACEHOLDERS = {"CONFIG": "tiny.yaml", "DIR": "prepared/doc"}
#: The largest vocabulary the tiny files can train (T5's configs ask 32,100).
TINY_VOCAB = 300


class Reached(Exception):  # noqa: N818 - not an error: the command got to its work
    """Raised by a stub: the command was valid up to the work it would do."""


def _stubs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace each verb's work by a stub that raises :class:`Reached` naming it."""
    import synthformer.analysis
    import synthformer.bench.calibrate
    import synthformer.bench.cli
    import synthformer.bench.lra_cli
    import synthformer.bench.plan
    import synthformer.cli.convert
    import synthformer.cli.export
    import synthformer.cli.synthesize
    import synthformer.data.catalog
    import synthformer.study
    import synthformer.tasks
    from synthformer.tasks import load_run_config

    def stub(name: str) -> Any:
        def reached(*args: Any, **kwargs: Any) -> Any:
            raise Reached(name)
        return reached

    def convert(folder: str, run_dir: str, config: str, *, overrides: Any = (), **kwargs: Any) -> Any:
        run = load_run_config(config, list(overrides))  # what convert_t5 does first with its config
        Path(run_dir).mkdir(parents=True, exist_ok=True)  # the run's config, which the next command may name
        Path(run_dir, "config.yaml").write_text(Path(config).read_text(encoding="utf-8"), encoding="utf-8")
        raise Reached(f"convert ({run.task.type})")

    for module, name in ((synthformer.tasks, "train_run"), (synthformer.tasks, "evaluate_run"),
                         (synthformer.tasks, "load_run"), (synthformer.tasks, "run_comparison"),
                         (synthformer.study, "run_study"), (synthformer.analysis, "analyze"),
                         (synthformer.bench.plan, "plan_run"), (synthformer.bench.cli, "run_table"),
                         (synthformer.bench.lra_cli, "run_lra_table2"), (synthformer.bench.calibrate, "calibrate"),
                         (synthformer.data.catalog, "status"), (synthformer.data.catalog, "fetch")):
        monkeypatch.setattr(module, name, stub(name))
        face = sys.modules[".".join(module.__name__.split(".")[:2])]  # where other packages import it from
        if getattr(face, name, None) is not None and face is not module:
            monkeypatch.setattr(face, name, getattr(module, name))
    # data get: as on a machine with the network (the fetch itself is the stub above)
    monkeypatch.setattr(synthformer.data.catalog, "fetch_blocker", lambda: None)
    monkeypatch.setattr(synthformer.data, "fetch_blocker", lambda: None)
    monkeypatch.setattr(synthformer.cli.export, "import_hf", lambda *a: stub("export_run"))
    monkeypatch.setattr(synthformer.cli.convert, "import_hf", lambda *a: convert)
    monkeypatch.setattr(synthformer.cli.synthesize, "import_hf", lambda *a: stub("synthesize_folder"))


def _scratch(root: Path) -> Path:
    """A folder to run a page's commands in, with the files they name; returns the working directory."""
    work = root / "work"
    (work / "c4" / "en").mkdir(parents=True)
    (work / "configs").symlink_to(ROOT / "configs")
    names = ["c4-train.00000-of-01024", "c4-train.00001-of-01024", "c4-validation.00000-of-00008",
             "c4-validation.00001-of-00008"]
    for n, name in enumerate(names):
        with gzip.open(work / "c4" / "en" / f"{name}.json.gz", "wt", encoding="utf-8") as fh:
            for d in range(12):
                text = " ".join(WORDS[(n * 12 + d) * 5 % 300:][:20])
                fh.write(json.dumps({"text": text, "timestamp": "2019-04-25T12:57:54Z", "url": f"u{d}"}) + "\n")
    shared = root / "shared" / "data"  # ../shared/data/... of the configs, seen from work/
    (shared / "tiny_shakespeare").mkdir(parents=True)
    (shared / "tiny_shakespeare" / "input.txt").write_text(  # speeches: paragraphs of a few lines
        "\n\n".join("\n".join(" ".join(WORDS[i + k:i + k + 6]) for k in range(0, 18, 6)) for i in range(0, 900, 18))
        + "\n", encoding="utf-8")
    (shared / "imdb").mkdir()
    (shared / "imdb" / "train.jsonl").write_text(
        "".join(json.dumps({"text": " ".join(WORDS[i:i + 12])}) + "\n" for i in range(0, 600, 12)), encoding="utf-8")
    (work / "runs" / "t5").mkdir(parents=True)
    build_tokenizer("char", [LM_TEXT]).save(work / "runs" / "t5" / "tokenizer.json")
    (work / PLACEHOLDERS["CONFIG"]).write_text(yaml.safe_dump({"task": {
        "type": "lm", "train": "../shared/data/tiny_shakespeare/input.txt", "valid_fraction": 0.2,
        "tokenizer": "char", "max_len": 32}}), encoding="utf-8")
    return work


def _argv(command: Command) -> list[str]:
    """The command's arguments with placeholders filled, and a tiny vocabulary for a prepare that trains one."""
    argv = [PLACEHOLDERS.get(word, word) for word in command.argv]
    if argv[:1] == ["prepare"] and "--check" not in argv and "--tokenizer" not in argv:
        from synthformer.common.config import ConfigError
        from synthformer.tasks import load_run_config

        overrides = [a for a in argv[2:] if "=" in a and not a.startswith("-")]
        try:
            vocab = load_run_config(Path(argv[1]), overrides).task.vocab_size
        except (ConfigError, OSError, ValueError):
            return argv  # the command itself fails on it, with its own message
        if vocab is not None and vocab > TINY_VOCAB:
            # the tiny files give fewer pieces than even this: the stub accepts what they give, as a user may
            argv += [f"task.vocab_size={TINY_VOCAB}", "--accept-smaller-vocab"]
    elif argv[:1] == ["prepare"] and "--tokenizer" in argv:
        argv.append("task.vocab_size=null")  # the stub's earlier run trained a tiny tokenizer: its size is used
    return argv


def _run(command: Command, capsys: pytest.CaptureFixture[str]) -> str | None:
    """Run one command (see the module docstring); None when it passes, else why not."""
    argv = _argv(command)
    threads = torch.get_num_threads()  # --threads N sets this process's threads: put them back
    capsys.readouterr()
    try:
        code = run_cli(argv)
    except Reached as reached:
        return None if argv[0] != "prepare" else f"prepare stopped at a stub: {reached}"
    finally:
        torch.set_num_threads(threads)
    err = capsys.readouterr().err.strip().splitlines()
    last = err[-1] if err else ""
    if code != 0:
        return f"exit status {code}: {last}"
    if argv[0] != "prepare":
        return f"exit status 0 without reaching its work: {last}"
    out = argv[argv.index("--check") + 1] if "--check" in argv else argv[argv.index("--out") + 1]
    return None if (Path(out) / "manifest.json").is_file() else f"no corpus in {out}"


def _page(command: Command) -> str:
    """The page (``docs/data.md``, ``configs/x.yaml``) or help text a command is written in."""
    return command.where if command.where.endswith("--help") else command.where.rsplit(":", 1)[0]


def _pages() -> Iterator[Any]:
    by_page: dict[str, list[Command]] = {}
    for command in all_commands():
        by_page.setdefault(_page(command), []).append(command)
    for page, commands in by_page.items():
        yield pytest.param(commands, id=page)


def _check_page(commands: list[Command], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                capsys: pytest.CaptureFixture[str]) -> list[str]:
    _stubs(monkeypatch)
    monkeypatch.setenv("SYNTHFORMER_CACHE", str(tmp_path / "cache"))  # data sets fetched on this machine: not seen
    monkeypatch.chdir(_scratch(tmp_path))
    done: set[tuple[str, ...]] = set()
    failures = []
    for command in commands:
        if command.argv in done and command.argv[:1] != ("prepare",):
            continue  # the same command again (a loop's other values may repeat it): checked once
        done.add(command.argv)
        why = _run(command, capsys)
        if why:
            failures.append(f"{command}\n    -> {why}")
    return failures


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("commands", list(_pages()))
def test_every_documented_command_runs(commands: list[Command], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    failures = _check_page(commands, tmp_path, monkeypatch, capsys)
    assert not failures, "documented commands that do not run:\n" + "\n".join(failures)


def test_the_pages_and_every_help_are_read() -> None:
    commands = all_commands()
    pages = {_page(c) for c in commands}
    assert {"README.md", "docs/data.md", "docs/streaming.md", "docs/distributed.md", "docs/results/shakespeare.md",
            "configs/t5_small_pretrain_c4.yaml", "configs/lm_tiny_shakespeare.yaml"} <= pages
    helps = {c.where for c in commands if c.where.endswith("--help")}
    verbs = ("train", "prepare", "eval", "generate", "compare", "study", "analyze", "bench", "export", "convert",
             "data")
    assert {f"synthformer {v} --help" for v in verbs} | {"synthformer --help"} <= helps
    # a loop over kinds gives one command per kind; torchrun's and srun's commands are synthformer's
    looped = [c.argv for c in commands if c.where == "docs/results/shakespeare.md:15"]
    assert [a[2] for a in looped] == ["model.decoder_kind=V", "model.decoder_kind=R", "model.decoder_kind=D",
                                      "model.decoder_kind=R+V"]
    assert any(c.where.startswith("docs/distributed.md") and "--resume" in c.argv for c in commands)


@pytest.mark.usefixtures("restore_logging")
def test_the_rule_catches_the_broken_prepare_command_it_was_written_for(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    broken = commands_in_shell(
        'synthformer prepare configs/t5_small_pretrain_c4.yaml --out prepared/c4 --workers 8 task.hf_name=null \\\n'
        '    task.train="c4/en/c4-train.*-of-01024.json.gz" task.valid="c4/en/c4-validation.0000*-of-00008.json.gz"\n',
        "docs/data.md before")
    # and what a stubbed verb cannot hide: an unknown config key, an option out of range, an unknown option
    broken += commands_in_shell("synthformer train configs/lm_tiny_shakespeare.yaml model.n_head=4 --run-dir runs/x\n"
                                "synthformer eval runs/x --beam 0\n"
                                "synthformer study configs/lm_tiny_shakespeare.yaml --kinds R --epochs 2\n", "made up")
    assert len(broken) == 4
    failures = _check_page(broken, tmp_path, monkeypatch, capsys)
    assert len(failures) == 4 and all("exit status 2" in f for f in failures)
    assert "task.prepared" in failures[0] and "model.n_head" in failures[1]
    assert "--beam" in failures[2] and "unrecognized arguments: --epochs" in failures[3]
