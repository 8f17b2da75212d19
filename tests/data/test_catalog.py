"""Named data sets (``task.data``): found locally, fetched through ``datasets`` from a hub-layout folder (the real
code path, without the network), the same examples either way, ``synthformer data list`` / ``data get``, and the
one-line refusal on a machine with neither a copy nor the network."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from synthformer.cli.main import main
from synthformer.common.config import ConfigError
from synthformer.data.catalog import CATALOG, cache_root, find_local, get_data_set
from synthformer.tasks import load_run_config
from synthformer.tasks.sources import load_raw_data

from .catalog_helpers import HUB_LAYOUTS, no_local_copies

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _splits(config: str, *overrides: str) -> dict[str, list]:
    return load_raw_data(load_run_config(CONFIGS / config, list(overrides)).task).splits


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("name", list(HUB_LAYOUTS))
def test_a_fetched_copy_gives_the_examples_of_the_local_copy(name: str, shared_data: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    config, make = HUB_LAYOUTS[name]
    no_local_copies(monkeypatch, tmp_path, offline=False)
    local, hub, fetched = tmp_path / "local", tmp_path / "hub", tmp_path / "fetched"
    make(shared_data, local, hub)
    assert main(["data", "get", name, "--from", str(hub), "--out", str(fetched)]) == 0
    assert f"{name}: written to {fetched / name}" in capsys.readouterr().out
    monkeypatch.setenv("SYNTHFORMER_DATA", str(local))
    from_local = _splits(config)
    monkeypatch.setenv("SYNTHFORMER_DATA", str(fetched))
    from_fetched = _splits(config)
    assert sorted(from_local) == sorted(from_fetched) and all(from_local.values())
    for split in from_local:
        assert from_fetched[split] == from_local[split], split


@pytest.mark.usefixtures("restore_logging")
def test_tiny_shakespeare_from_its_file_is_the_shared_copy(shared_data: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The URL source read through datasets' text builder (here a local file given instead) writes the file
    byte for byte."""
    no_local_copies(monkeypatch, tmp_path, offline=False)
    source = shared_data / "tiny_shakespeare" / "input.txt"
    assert main(["data", "get", "tiny_shakespeare", "--from", str(source), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "tiny_shakespeare" / "input.txt").read_bytes() == source.read_bytes()


@pytest.mark.usefixtures("restore_logging")
def test_a_run_fetches_a_missing_data_set_into_the_cache(shared_data: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """No copy anywhere: reading the data fetches it (``datasets.load_dataset`` on the source, here a hub-layout
    folder standing for the hub id) into the fetched-copy cache, once; the examples are the local copy's."""
    no_local_copies(monkeypatch, tmp_path, offline=False)
    HUB_LAYOUTS["sst2"][1](shared_data, tmp_path / "local", tmp_path / "hub")
    entry = get_data_set("sst2")
    source = dataclasses.replace(entry.source, location=str(tmp_path / "hub"))
    monkeypatch.setitem(CATALOG, "sst2", dataclasses.replace(entry, source=source))
    task = load_run_config(CONFIGS / "cls_sst2.yaml").task
    assert task.train == str(cache_root() / "sst2" / "stsa.binary.train") and task.missing_data()
    fetched = load_raw_data(task).splits
    assert task.missing_data() == [] and (cache_root() / "sst2" / "stsa.binary.test").is_file()
    assert not list(cache_root().glob(".sst2.partial-*"))
    monkeypatch.setenv("SYNTHFORMER_DATA", str(tmp_path / "local"))
    assert fetched == _splits("cls_sst2.yaml")
    # a later run reads the cache: the source is not read again
    shutil.rmtree(tmp_path / "hub")
    monkeypatch.setenv("SYNTHFORMER_DATA", str(tmp_path / "empty"))
    assert _splits("cls_sst2.yaml") == fetched


def test_the_resolution_order_and_the_users_own_files(shared_data: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    work = no_local_copies(monkeypatch, tmp_path, offline=True)
    entry = get_data_set("sst2")
    assert find_local(entry) is None
    for root in (tmp_path / "mine", work.parent / "shared" / "data", cache_root()):
        (root / "sst2").mkdir(parents=True)
        for name in entry.marker_files:
            (root / "sst2" / name).write_text("1 good\n0 bad\n", encoding="utf-8")
    # the cache last, ../shared/data before it, $SYNTHFORMER_DATA first
    assert find_local(entry).folder == (work.parent / "shared" / "data" / "sst2").resolve()
    monkeypatch.setenv("SYNTHFORMER_DATA", str(tmp_path / "mine"))
    found = find_local(entry)
    assert (found.folder, found.where) == ((tmp_path / "mine" / "sst2").resolve(), "$SYNTHFORMER_DATA")
    task = load_run_config(CONFIGS / "cls_sst2.yaml", ["task.valid=my.dev"]).task
    assert Path(task.train) == found.folder / "stsa.binary.train" and task.valid == "my.dev"
    lra = load_run_config(CONFIGS / "lra_text.yaml").task  # data_splits: LRA validates on IMDb's test set
    assert lra.valid == lra.test and lra.valid.endswith("test.jsonl")


def test_bad_names_and_mixed_sources_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"task\.data: unknown data set 'sst' \(did you mean 'sst2'\?\)"):
        load_run_config(CONFIGS / "cls_sst2.yaml", ["task.data=sst"])
    with pytest.raises(ConfigError, match=r"task\.data: the named data set 'sst2' is the run's data source"):
        load_run_config(CONFIGS / "cls_sst2.yaml", ["task.hf_name=imdb"])
    with pytest.raises(ConfigError, match=r"task\.data_splits: expected train / valid / test -> a split of"):
        load_run_config(CONFIGS / "cls_sst2.yaml", ["task.data_splits={train: dev}"])
    with pytest.raises(ConfigError, match=r"task\.data_splits: set only together with 'data'"):
        load_run_config(CONFIGS / "cls_sst2.yaml", ["task.data=null", "task.train=x", "task.data_splits={}"])


@pytest.mark.usefixtures("restore_logging")
def test_the_one_line_refusal_without_a_copy_or_the_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    work = no_local_copies(monkeypatch, tmp_path, offline=True)
    shutil.copy(CONFIGS / "cls_sst2.yaml", work / "sst2.yaml")
    capsys.readouterr()
    assert main(["train", "sst2.yaml", "train.steps=1"]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and not (work / "runs").exists(), err
    assert err.startswith("synthformer train: error: task.data: the data set 'sst2' (SST-2 (sentences)) is not on "
                          "this machine and cannot be fetched now (HF_DATASETS_OFFLINE=1); it comes from "
                          "hub:SetFit/sst2.")
    assert "'synthformer data get sst2'" in err and "task.train=PATH" in err
    # data get says the same in its own words
    assert main(["data", "get", "sst2"]) == 2
    err = capsys.readouterr().err
    assert err == ("synthformer data: error: cannot fetch sst2 from hub:SetFit/sst2 here (HF_DATASETS_OFFLINE=1); "
                   "run this on a machine with the network, or give a local copy with --from PATH\n")


@pytest.mark.usefixtures("restore_logging")
def test_data_list_names_every_data_set_its_source_and_where_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    no_local_copies(monkeypatch, tmp_path, offline=True)
    (tmp_path / "mine" / "tiny_shakespeare").mkdir(parents=True)
    (tmp_path / "mine" / "tiny_shakespeare" / "input.txt").write_text("To be.\n", encoding="utf-8")
    monkeypatch.setenv("SYNTHFORMER_DATA", str(tmp_path / "mine"))
    capsys.readouterr()
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    for entry in CATALOG.values():
        assert f"{entry.name}  " in out and entry.source.describe() in out
    here = (tmp_path / "mine" / "tiny_shakespeare").resolve()
    assert f"here: {here} ($SYNTHFORMER_DATA)" in out
    assert out.count("not on this machine") == len(CATALOG) - 1
    assert main(["data", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows.keys() == CATALOG.keys() and rows["tiny_shakespeare"]["local"] == str(here)
    assert rows["glue"]["source"] == "hub:nyu-mll/glue (cola, sst2, mrpc, stsb, rte, qnli)"


@pytest.mark.usefixtures("restore_logging")
def test_data_get_refuses_what_it_cannot_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    no_local_copies(monkeypatch, tmp_path, offline=False)
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "train.jsonl").write_text('{"text": "good", "label": 1}\n', encoding="utf-8")
    capsys.readouterr()
    assert main(["data", "get", "nope"]) == 2
    assert "unknown data set 'nope'" in capsys.readouterr().err
    assert main(["data", "get", "sst2", "--from", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err == f"synthformer data: error: --from: no file or folder at {tmp_path / 'missing'}\n"
    # a copy without the splits the layout needs: nothing is left behind that looks like a copy
    assert main(["data", "get", "sst2", "--from", str(tmp_path / "hub"), "--out", str(tmp_path / "out")]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]  # after the progress logs
    assert errors == [f"synthformer data: error: cannot fetch sst2: {tmp_path / 'hub'}: gave no stsa.binary.dev, "
                      "stsa.binary.test for sst2"]
    assert list((tmp_path / "out").iterdir()) == []
