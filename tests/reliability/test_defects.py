"""Issue 14's reproduced defects, each a test that failed before its fix (the layer's messages are checked for
every registered kind in ``tests/attention/test_properties.py``; the fully-masked-query output in the same file)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from synthformer.cli.main import main
from tests.tasks.helpers import classification_config, lm_config, write_yaml

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
    from synthformer.tasks import RunConfig, train_run
    from synthformer.train import from_dict
    from synthformer.train.recording import format_metrics

    def every_step(trainer) -> None:
        trainer.heartbeat_s = 0.0  # the default is 60 s; here a line after every step

    with caplog.at_level("INFO"):
        train_run(from_dict(RunConfig, lm_config(tmp_path)), tmp_path / "run", progress=False,
                  on_trainer=every_step)
    beats = [r.getMessage() for r in caplog.records if "tokens/s, elapsed" in r.getMessage()]
    assert len(beats) == 6  # one per step of the 6
    assert re.fullmatch(r"step 6/6 \(100%\): loss \d+\.\d{4}, [\d,]+ tokens/s, elapsed \d+s, ETA 0s", beats[-1])
    # a beat right after a logged step (step 6 is one) reports that step's window, never "loss -, 0 tokens/s"
    assert all(" loss -" not in b and " 0 tokens/s" not in b for b in beats)
    evals = [r.getMessage() for r in caplog.records if " eval: " in r.getMessage()]
    assert evals and all(not re.search(r"\d\.\d{5,}", e) for e in evals)  # no 16-digit floats
    assert format_metrics({"eval_loss": 1.234567891, "eval_tokens": 12345, "eval_ppl": 12345.678}) == \
        "eval_loss 1.2346, eval_tokens 12,345, eval_ppl 12345.68"


def test_compare_without_a_terminal_prints_a_line_per_model_and_heartbeats(tmp_path: Path, capsys,
                                                                           monkeypatch) -> None:
    from synthformer.train import Trainer

    init = Trainer.__init__

    def every_step(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        self.heartbeat_s = 0.0  # the default is 60 s; here a line after every step

    monkeypatch.setattr(Trainer, "__init__", every_step)
    tiny = ["model.d_model=16", "model.n_heads=2", "model.n_layers=1", "model.d_ff=32", "task.max_len=16",
            "train.batch_size=4", "task.generator_options.max_train_chars=20000",
            "task.generator_options.max_eval_chars=2000"]
    assert main(["compare", *tiny, "--steps", "3", "--kinds", "V", "R", "--out", str(tmp_path / "cmp")]) == 0
    out, err = capsys.readouterr()
    finished = [line for line in out.splitlines() if re.match(r"  \[\d/2\] ", line)]
    assert [line.split()[1] for line in finished] == ["V:", "R:"]  # one line as each model finishes
    beats = [line for line in err.splitlines() if "tokens/s, elapsed" in line]
    assert len(beats) == 6 and "step 3/3 (100%)" in beats[-1]  # at the default log level, on stderr


def _long_examples(tmp_path: Path, max_len: int, **task) -> dict:
    config = classification_config(tmp_path)
    config["task"].update(max_len=max_len, **task)
    return config


def test_a_run_that_would_cut_most_examples_refuses_to_start_unless_truncation_is_asked_for(tmp_path: Path,
                                                                                          capsys) -> None:
    cfg = write_yaml(tmp_path / "cut.yaml", _long_examples(tmp_path, max_len=4))
    assert main(["train", str(cfg), "--run-dir", str(tmp_path / "run"), "--no-progress"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("synthformer train: ")]
    assert len(errors) == 1  # one line (the rest of stderr is the INFO log of loading)
    err = errors[0]
    assert re.search(r"error: task\.max_len: [\d,]+ of [\d,]+ training examples \(\d+%\) are longer than the model "
                     r"allows \(max_len=4\) and would be cut; .*task\.overflow: truncate", err), err
    assert not (tmp_path / "run").exists()  # refused before anything was written

    cfg = write_yaml(tmp_path / "cut.yaml", _long_examples(tmp_path, max_len=4, overflow="truncate"))
    assert main(["train", str(cfg), "--run-dir", str(tmp_path / "run"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    summary = re.search(r"data: train: ([\d,]+) examples, ([\d,]+) \((\d+\.\d)%\) truncated to max_len=4", out)
    assert summary, out
    total, cut, percent = int(summary[1].replace(",", "")), int(summary[2].replace(",", "")), float(summary[3])
    assert cut > total / 2 and abs(100 * cut / total - percent) < 0.1


def test_a_run_with_few_long_examples_starts_and_reports_them(tmp_path: Path, capsys) -> None:
    cfg = write_yaml(tmp_path / "ok.yaml", _long_examples(tmp_path, max_len=64))
    assert main(["train", str(cfg), "--run-dir", str(tmp_path / "run"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"data: train: [\d,]+ examples\n", out), out  # nothing cut: just the count


def test_lra_listops_files_are_read_without_parentheses_as_lra_does(tmp_path: Path) -> None:
    """Found by the check above: the LRA-format reader kept "(" and ")" as tokens, so 81% of the shared sample's
    examples were longer than max_len 2000 and were silently cut."""
    from synthformer.data import ListOpsExample, write_listops_tsv
    from synthformer.tasks import load_run_config, prepare_data

    source = "( ( [MAX 2 ) ( ( [MIN 4 ) 7 ) ] ) 9 ) ]"
    for split in ("train", "val"):
        write_listops_tsv([ListOpsExample(source, 9), ListOpsExample("[MIN 3 1 ]", 1)] * 2, tmp_path / f"{split}.tsv")
    cfg = write_yaml(tmp_path / "lo.yaml", {
        "task": {"type": "classification", "format": "listops_tsv", "train": str(tmp_path / "train.tsv"),
                 "valid": str(tmp_path / "val.tsv"), "tokenizer": "word",
                 "tokenizer_options": {"split": "whitespace"}, "max_len": 12},
        "model": {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32}})
    data = prepare_data(load_run_config(cfg), splits=("train",))
    assert data.raw.splits["train"][0][0] == "[MAX 2 [MIN 4 7 ] 9 ]"
    assert data.datasets["train"].length_report.truncated == 0  # 8 tokens (not 16) fit max_len 12
