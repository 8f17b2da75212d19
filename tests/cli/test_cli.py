"""The command line: train -> eval -> generate for each task type, compare, errors, help (the resume of a killed run:
tests/reliability/test_two_processes.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from synthformer.cli import compare as compare_cli
from synthformer.cli.main import build_parser, main
from tests.tasks.helpers import classification_config, lm_config, seq2seq_config, write_yaml

VERBS = ("train", "prepare", "eval", "generate", "compare", "study", "analyze", "bench", "export", "convert",
         "synthesize", "data")


pytestmark = pytest.mark.usefixtures("restore_logging")


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------------------------------------------
# help


@pytest.mark.parametrize("verb", VERBS)
def test_help_of_every_verb_has_examples(verb: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main([verb, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert (
        f"usage: synthformer {verb}" in out
        and "examples:" in out
        and f"synthformer {verb}" in out.split("examples:")[1]
    )


def test_top_level_help_lists_the_verbs(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert all(verb in out for verb in VERBS)
    subparsers = build_parser()._subparsers._group_actions[0].choices  # noqa: SLF001 - argparse internals
    assert set(subparsers) == set(VERBS)


def test_console_script_is_installed() -> None:
    proc = subprocess.run(["synthformer", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "compare" in proc.stdout


def test_compare_parser_constants_match_the_library() -> None:
    from synthformer.tasks import COMPARE_TASKS, DEFAULT_KINDS

    assert set(compare_cli.COMPARE_TASK_NAMES) == set(COMPARE_TASKS)
    assert tuple(compare_cli.DEFAULT_KINDS) == tuple(DEFAULT_KINDS) == ("V", "R", "D", "R+V")


# ---------------------------------------------------------------------------------------------------------------
# train -> eval -> generate, one per task type


def test_lm_train_eval_generate(tmp_path: Path, capsys) -> None:
    cfg = write_yaml(tmp_path / "lm.yaml", lm_config(tmp_path))
    run_dir = tmp_path / "run"
    code, out, err = run_cli(capsys, "train", cfg, "model.decoder_kind=D", "--run-dir", run_dir, "-q")
    assert code == 0, err
    assert "trained 6 steps" in out and "bits_per_character" in out
    assert json.loads((run_dir / "model_config.json").read_text())["decoder_kind"] == "D"  # the override arrived

    code, out, err = run_cli(capsys, "eval", run_dir)
    assert code == 0, err
    assert "split valid" in out and "perplexity" in out and "bits_per_character" in out
    metrics = json.loads((run_dir / "eval_valid.json").read_text())["metrics"]
    assert metrics["bits_per_character"] > 0

    code, out, err = run_cli(
        capsys, "generate", run_dir, "--prompt", "class ", "--max-new-tokens", "8", "--top-k", "5", "--seed", "3"
    )
    assert code == 0, err
    assert out.startswith("class ") and len(out.rstrip("\n")) == len("class ") + 8


def test_seq2seq_train_eval_generate(tmp_path: Path, capsys) -> None:
    cfg = write_yaml(tmp_path / "rev.yaml", seq2seq_config())
    run_dir = tmp_path / "run"
    code, out, err = run_cli(capsys, "train", cfg, "--run-dir", run_dir, "-q")
    assert code == 0, err
    code, out, err = run_cli(capsys, "eval", run_dir, "--beam", "3")
    assert code == 0, err
    assert "split test" in out and "exact_match" in out and "chrf_signature  nrefs:1" in out
    report = json.loads((run_dir / "eval_test.json").read_text())
    assert report["beam"] == 3 and report["length_penalty"] == 0.6
    inputs = tmp_path / "in.txt"
    inputs.write_text("123\n98765\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "generate", run_dir, "--input", inputs, "--beam", "2")
    assert code == 0, err
    assert len(out.splitlines()) == 2  # one output line per input line


def test_classification_train_eval_generate(tmp_path: Path, capsys) -> None:
    cfg = write_yaml(tmp_path / "cls.yaml", classification_config(tmp_path))
    run_dir = tmp_path / "run"
    code, out, err = run_cli(capsys, "train", cfg, "--run-dir", run_dir, "-q")
    assert code == 0, err
    code, out, err = run_cli(capsys, "eval", run_dir, "--split", "test")
    assert code == 0, err
    assert "accuracy" in out and (run_dir / "eval_test.json").is_file()
    code, out, err = run_cli(capsys, "generate", run_dir, "--prompt", "a witty movie")
    assert code == 0, err
    label, prob = out.strip().split("\t")
    assert label in ("0", "1") and 0.5 <= float(prob) <= 1.0


# ---------------------------------------------------------------------------------------------------------------
# resume


# The resume of a killed command-line run (refused without --resume, continued with it) is checked on the killed
# process of tests/reliability/test_two_processes.py: one process to start and kill, not two.


def test_interrupt_prints_how_to_resume(tmp_path: Path, capsys, monkeypatch) -> None:
    import synthformer.tasks

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(synthformer.tasks, "train_run", interrupted)
    cfg = write_yaml(tmp_path / "lm.yaml", lm_config(tmp_path))
    code, _, err = run_cli(capsys, "train", cfg, "train.lr=1e-3", "--run-dir", tmp_path / "r")
    assert code == 130
    assert "interrupted" in err and f"synthformer train {cfg} train.lr=1e-3 --run-dir {tmp_path / 'r'} --resume" in err


# ---------------------------------------------------------------------------------------------------------------
# compare


def test_compare_tiny_prints_the_table(tmp_path: Path, capsys) -> None:
    out_dir = tmp_path / "cmp"
    tiny = [
        "model.d_model=16",
        "model.n_heads=2",
        "model.n_layers=1",
        "model.d_ff=32",
        "task.max_len=16",
        "train.batch_size=4",
        "task.generator_options.max_train_chars=20000",
        "task.generator_options.max_eval_chars=2000",
    ]
    code, out, err = run_cli(capsys, "compare", *tiny, "--steps", "5", "--kinds", "V", "R+V", "--out", out_dir)
    assert code == 0, err
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("kind"))
    assert lines[header].split()[:4] == ["kind", "params", "steps", "val"]
    assert [line.split()[0] for line in lines[header + 2 : header + 4]] == ["V", "R+V"]
    assert all(line.split()[2] == "5" for line in lines[header + 2 : header + 4])
    assert any(line.startswith("baseline: unigram bits/char = ") for line in lines)
    result = json.loads((out_dir / "comparison.json").read_text())
    assert [r["kind"] for r in result["rows"]] == ["V", "R+V"] and result["baseline"]["value"] > 0
    assert (out_dir / "V" / "config.yaml").is_file()  # every variant is a complete run directory
    # the variants differ only in their attention
    configs = [json.loads((out_dir / k / "model_config.json").read_text()) for k in ("V", "R+V")]
    assert {k for k in configs[0] if configs[0][k] != configs[1][k]} == {"decoder_kind"}

    # a second comparison into the same place refuses to replace it
    code, _, err = run_cli(capsys, "compare", *tiny, "--steps", "5", "--kinds", "V", "--out", out_dir)
    assert code == 2 and "already holds a run" in err


def test_compare_rejects_unknown_kind_before_training(tmp_path: Path, capsys) -> None:
    code, _, err = run_cli(capsys, "compare", "--kinds", "V", "Q", "--out", tmp_path / "c")
    assert code == 2 and "'Q' is not a known token mixer" in err
    assert not (tmp_path / "c").exists()


# ---------------------------------------------------------------------------------------------------------------
# errors: a message naming the problem and exit status 2, never a traceback


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "{cfg}", "model.n_layres=2"], "unknown key 'model.n_layres' (did you mean 'n_layers'?)"),
        (["train", "{cfg}", "train.steps=many"], "train.steps: expected int, got 'many'"),
        (["train", "{cfg}", "train.steps"], "expected the form key=value"),
        (["train", "{tmp}/missing.yaml"], "config file not found"),
        (["train", "{cfg}", "task.train={tmp}/nope.txt", "--run-dir", "{tmp}/r"], "nope.txt: file not found"),
        (["eval", "{tmp}/no_run"], "run directory not found"),
        (["eval", "{tmp}"], "is not a synthformer run directory"),
        (["generate", "{tmp}/no_run", "--prompt", "x"], "run directory not found"),
        (["generate", "{tmp}", "--prompt", "x", "--top-p", "2"], "--top-p must be in (0, 1]"),
        (["compare", "--steps", "0"], "--steps must be >= 1"),
    ],
)
def test_user_errors_exit_2_with_a_message(argv: list[str], message: str, tmp_path: Path, capsys) -> None:
    cfg = write_yaml(tmp_path / "lm.yaml", lm_config(tmp_path))
    argv = [a.format(cfg=cfg, tmp=tmp_path) for a in argv]
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert err.startswith(f"synthformer {argv[0]}: error: ")


def test_usage_errors_exit_2(capsys) -> None:
    for argv in (["train"], ["generate", "run"], ["eval", "run", "--split", "dev"], ["frobnicate"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "overrides"), [
    (["train", "c.yaml", "--run-dir", "r", "train.lr=3e-4"], ["train.lr=3e-4"]),
    (["train", "c.yaml", "a=1", "--resume", "b=2"], ["a=1", "b=2"]),
    (["study", "c.yaml", "--kinds", "V,R", "--seeds", "3", "train.steps=500", "--out", "x"], ["train.steps=500"]),
    (["compare", "--steps", "3", "model.d_model=16"], ["model.d_model=16"]),
])
def test_overrides_after_options_are_still_overrides(argv: list[str], overrides: list[str]) -> None:
    from synthformer.cli.main import _parse

    assert _parse(build_parser(), argv).overrides == overrides


def test_an_unknown_option_after_overrides_is_still_an_error(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["train", "c.yaml", "a=1", "--frobnicate", "b=2"])
    assert "synthformer train: error: unrecognized arguments: --frobnicate" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------------------
# the shipped configs on the shared development data (skipped where that folder does not exist)

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared data folder exists on developer machines only")
@pytest.mark.parametrize("name", ["lm_tiny_shakespeare", "cls_sst2"])
def test_shipped_config_runs_on_the_shared_data(name: str, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(REPO)  # the configs' paths are relative to the repository root
    tiny = [
        "model.d_model=16",
        "model.n_heads=2",
        "model.n_layers=1",
        "model.d_ff=32",
        "train.steps=2",
        "train.eval_every=0",
        "train.eval_steps=1",
        "train.batch_size=4",
        "task.max_len=32",
    ]
    code, out, err = run_cli(capsys, "train", f"configs/{name}.yaml", *tiny, "--run-dir", tmp_path / "run", "-q")
    assert code == 0, err
    assert "trained 2 steps" in out


def test_bench_verb_forwards_to_the_benchmark(capsys):
    from synthformer.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "--help"])
    assert exit_info.value.code == 0
    assert "--preset" in capsys.readouterr().out
    status = main(
        [
            "bench",
            "--preset",
            "lm-small",
            "--set",
            "n_layers=1",
            "d_model=32",
            "--seq-len",
            "8",
            "--batch-size",
            "2",
            "--repeats",
            "1",
            "--warmup",
            "0",
            "--steps",
            "1",
            "--no-progress",
            "--no-memory",
            "--rows",
            "V",
            "R",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    assert "| Transformer |" in out and "| Synthesizer (R) |" in out
