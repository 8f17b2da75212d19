"""From a clone with no ``../shared`` folder and no network, every shipped config either plans its run (generated
tasks, the stdlib corpus, Hugging Face sets named by id) or refuses in one line naming its data set and how to
get it: ``synthformer train CONFIG --dry-run`` (which resolves the data without reading it), in this process."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from synthformer.cli.main import main
from synthformer.data.catalog import get_data_set

from .catalog_helpers import no_local_copies

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))
#: Configs whose data is a corpus prepared by ``synthformer prepare`` (their header says how): they refuse with
#: the prepared folder's own one-line message.
PREPARED = {"t5_small_pretrain_c4.yaml", "t5_base_pretrain_c4.yaml"}


def _named(config: Path) -> str | None:
    return (yaml.safe_load(config.read_text(encoding="utf-8")).get("task") or {}).get("data")


def test_the_configs_that_read_files_name_their_data_set() -> None:
    named = [c.name for c in CONFIGS if _named(c)]
    assert len(named) >= 21 and not [c.name for c in CONFIGS if "shared/data" in c.read_text(encoding="utf-8")
                                     .split("task:", 1)[1]]


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
def test_every_config_plans_or_refuses_in_one_line_without_data_or_network(
        config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    work = no_local_copies(monkeypatch, tmp_path, offline=True)
    shutil.copy(config, work / config.name)
    name = _named(config)
    capsys.readouterr()
    code = main(["train", config.name, "--dry-run", "-q"])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("synthformer train: error: ")]
    if name is None and config.name not in PREPARED:
        assert code == 0 and not errors, err
        return
    assert code == 2 and len(errors) == 1 and err.count("\n") == 1, err
    if config.name in PREPARED:
        assert "prepared" in errors[0], errors[0]
        return
    entry = get_data_set(name)
    assert errors[0].startswith(f"synthformer train: error: the run would fail: task.data: the data set {name!r} "
                                f"({entry.title}) is not on this machine and cannot be fetched now "
                                f"(HF_DATASETS_OFFLINE=1); it comes from {entry.source.describe()}."), errors[0]
    assert f"'synthformer data get {name}'" in errors[0] and "task.train=PATH" in errors[0]
