"""From a clone with no ``../shared`` folder and no network, every shipped config plans its run: ``synthformer train
CONFIG --dry-run`` (which resolves the data without reading it), in this process. Where its data is not there
(a named data set that cannot be fetched now, a corpus not prepared yet) the plan has one ``missing:`` line naming
it and how to get it, in the words the run would refuse with, and still exits 0 (a dry run plans a run to come)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from synthformer.cli.main import main
from synthformer.data.catalog import get_data_set

from .catalog_helpers import no_local_copies

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))
#: Configs whose data is a corpus prepared by ``synthformer prepare`` (their header says how): their plan names
#: the missing prepared folder in its own one-line message.
PREPARED = {"t5_small_pretrain_c4.yaml", "t5_base_pretrain_c4.yaml"}


def _named(config: Path) -> str | None:
    return (yaml.safe_load(config.read_text(encoding="utf-8")).get("task") or {}).get("data")


def test_the_configs_that_read_files_name_their_data_set() -> None:
    named = [c.name for c in CONFIGS if _named(c)]
    assert len(named) >= 21 and not [c.name for c in CONFIGS if "shared/data" in c.read_text(encoding="utf-8")
                                     .split("task:", 1)[1]]


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
def test_every_config_plans_and_names_missing_data_in_one_line_without_data_or_network(
        config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    work = no_local_copies(monkeypatch, tmp_path, offline=True)
    shutil.copy(config, work / config.name)
    name = _named(config)
    capsys.readouterr()
    code = main(["train", config.name, "--dry-run", "-q"])
    out, err = capsys.readouterr()
    missing = [line[len("missing:    "):] for line in out.splitlines() if line.startswith("missing:")]
    assert code == 0 and "error" not in err, err
    if name is None and config.name not in PREPARED:
        assert not missing, out
        return
    assert len(missing) == 1, out
    if config.name in PREPARED:
        assert "prepared" in missing[0], missing[0]
        return
    entry = get_data_set(name)
    assert missing[0].startswith(f"task.data: the data set {name!r} ({entry.title}) is not on this machine and "
                                 f"cannot be fetched now (HF_DATASETS_OFFLINE=1); it comes from "
                                 f"{entry.source.describe()}."), missing[0]
    assert f"'synthformer data get {name}'" in missing[0] and "task.train=PATH" in missing[0]
