"""A run directory edited after training: an edited ``model_config.json`` fails in one line naming the parameter and
both shapes and changes nothing; an edited ``config.yaml`` that disagrees is named in a warning and
``model_config.json`` wins. (Each test failed before its fix, as docs/reliability.md's table of defects records.)"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from synthformer.cli.main import main
from tests.tasks.helpers import lm_config, write_yaml

pytestmark = pytest.mark.usefixtures("restore_logging")


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("trained")
    cfg = write_yaml(tmp / "lm.yaml", lm_config(tmp))
    assert main(["train", str(cfg), "--run-dir", str(tmp / "run"), "--no-progress", "-q"]) == 0
    return tmp / "run"


@pytest.mark.parametrize("verb", [["eval"], ["generate", "--prompt", "def "]])
def test_an_edited_model_config_gives_one_line_naming_parameter_and_shapes(trained: Path, tmp_path: Path,
                                                                           verb: list[str], capsys) -> None:
    wide = tmp_path / "wide"
    shutil.copytree(trained, wide)
    path = wide / "model_config.json"
    config = json.loads(path.read_text())
    config["d_model"] = 24  # trained with 16
    path.write_text(json.dumps(config))
    before = {p: p.read_bytes() for p in wide.rglob("*") if p.is_file()}
    assert main([verb[0], str(wide), *verb[1:], "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert re.search(r"the weights do not fit the model: \S+: checkpoint \[\d+(, \d+)*\], model \[\d+(, \d+)*\]", err)
    assert "model_config.json" in err and "edited" in err
    assert {p: p.read_bytes() for p in wide.rglob("*") if p.is_file()} == before  # nothing changed


def test_an_edited_config_yaml_is_named_and_model_config_json_wins(trained: Path, tmp_path: Path, caplog) -> None:
    import yaml

    from synthformer.tasks import load_run

    edited = tmp_path / "edited"
    shutil.copytree(trained, edited)
    config = yaml.safe_load((edited / "config.yaml").read_text())
    config["model"]["d_model"] = 24
    (edited / "config.yaml").write_text(yaml.safe_dump(config))
    with caplog.at_level("WARNING"):
        loaded = load_run(edited)
    assert loaded.model_config.d_model == 16  # the trained weights' size
    assert "model.d_model: config.yaml 24, model_config.json 16" in caplog.text
    assert "built from model_config.json" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        load_run(trained)
    assert "disagrees" not in caplog.text
