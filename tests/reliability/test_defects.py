"""Issue 14's reproduced defects, each a test that failed before its fix (the layer's messages are checked for
every registered kind in ``tests/attention/test_properties.py``; the fully-masked-query output in the same file)."""

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


def test_compare_runtime_is_one_measured_number(capsys) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    help_text = capsys.readouterr().out
    in_readme = re.search(r"speed \((\d+) minutes on a 2-core CPU", readme)
    in_help = re.search(r"Python's stdlib \(~(\d+) min\)", help_text)
    with pytest.raises(SystemExit):
        main(["--help"])
    in_main_help = re.search(r"on a built-in task \(~(\d+) min\)", capsys.readouterr().out)
    assert in_readme and in_help and in_main_help
    assert in_readme.group(1) == in_help.group(1) == in_main_help.group(1)


def test_a_run_without_a_progress_bar_logs_heartbeats_and_rounded_evaluations(tmp_path: Path, caplog) -> None:
    from synthformer.tasks import train_run
    from synthformer.tasks.config import RunConfig
    from synthformer.train import from_dict
    from synthformer.train.recording import format_metrics

    def every_step(trainer) -> None:
        trainer.heartbeat_s = 0.0  # the default is 60 s; here a line after every step

    with caplog.at_level("INFO"):
        train_run(from_dict(RunConfig, lm_config(tmp_path)), tmp_path / "run", progress=False,
                  on_trainer=every_step)
    beats = [r.getMessage() for r in caplog.records if "tokens/s, elapsed" in r.getMessage()]
    assert len(beats) == 6  # one per step of the 6
    assert re.fullmatch(r"step 6/6 \(100%\): loss (\d+\.\d{4}|-), [\d,]+ tokens/s, elapsed \d+s, ETA 0s", beats[-1])
    evals = [r.getMessage() for r in caplog.records if " eval: " in r.getMessage()]
    assert evals and all(not re.search(r"\d\.\d{5,}", e) for e in evals)  # no 16-digit floats
    assert format_metrics({"eval_loss": 1.234567891, "eval_tokens": 12345, "eval_ppl": 12345.678}) == \
        "eval_loss 1.2346, eval_tokens 12,345, eval_ppl 12345.68"
