"""The ``summarization`` and ``dialogue`` task types end to end through the command line (train -> eval ->
generate on tiny files), their metrics in ``metrics.jsonl`` (periodic on validation, final on test), the field
layouts, located errors of CSV summaries, and PersonaChat-style splits made by dialogue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synthformer.cli.main import main
from synthformer.common.config import ConfigError
from synthformer.data import DataError
from synthformer.tasks import TaskConfig, load_raw_data

from .helpers import PERSONACHAT_LINES, dialogue_config, summarization_config, write_yaml

pytestmark = pytest.mark.usefixtures("restore_logging")


def _cli(capsys, *argv) -> str:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _metric_records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_summarization_train_eval_generate(tmp_path: Path, capsys) -> None:
    cfg = write_yaml(tmp_path / "sum.yaml", summarization_config(tmp_path))
    run_dir = tmp_path / "run"
    _cli(capsys, "train", cfg, "--run-dir", run_dir, "-q")
    periodic = [r for r in _metric_records(run_dir) if "eval_rouge1" in r]
    assert periodic and all(r["eval_decoded"] == 2 for r in periodic)  # eval.train_decode_examples, greedy

    out = _cli(capsys, "eval", run_dir, "--beam", "1", "--min-length", "5", "--no-repeat-ngram-size", "2")
    assert "split test" in out and "rougeLsum" in out
    report = json.loads((run_dir / "eval_test.json").read_text())
    assert (report["min_length"], report["no_repeat_ngram_size"], report["beam"]) == (5, 2, 1)
    metrics = report["metrics"]
    assert {"rouge1", "rouge2", "rougeL", "rougeLsum", "truncated_examples", "truncated_percent"} <= set(metrics)
    assert metrics["truncated_examples"] == 0 and metrics["decoded"] == 4  # the whole test split
    hypotheses = (run_dir / "eval_test_hypotheses.txt").read_text().splitlines()
    assert all(len(h.split()) >= 5 for h in hypotheses)  # --min-length reached the decoder
    final = _metric_records(run_dir)[-1]
    assert final["test_rouge1"] == metrics["rouge1"] and final["step"] == report["step"]

    out = _cli(capsys, "generate", run_dir, "--prompt", "Anna: The train is late.\nBen: I will pick you up.",
               "--min-length", "6", "--beam", "2")
    assert len(out.split()) >= 6


def test_dialogue_train_eval_generate(tmp_path: Path, capsys) -> None:
    cfg = write_yaml(tmp_path / "dlg.yaml", dialogue_config(tmp_path))
    run_dir = tmp_path / "run"
    _cli(capsys, "train", cfg, "--run-dir", run_dir, "-q")
    assert any("eval_bleu_1" in r and "eval_cider" in r for r in _metric_records(run_dir))

    out = _cli(capsys, "eval", run_dir)
    assert "split test" in out and "bleu_4" in out
    metrics = json.loads((run_dir / "eval_test.json").read_text())["metrics"]
    assert {"loss", "bleu_1", "bleu_4", "rouge_l", "cider", "distinct_1", "distinct_2"} <= set(metrics)
    assert metrics["decoded"] == 4  # the test file's responses: 2 + 2
    assert "test_bleu_1" in _metric_records(run_dir)[-1]

    persona = json.dumps({"persona": ["i like to ski."], "turns": ["hi ! how are you today ?"]})
    out = _cli(capsys, "generate", run_dir, "--prompt", persona, "--max-new-tokens", "6")
    assert len(out.splitlines()) == 1
    out = _cli(capsys, "generate", run_dir, "--prompt", "hello , what do you do ? __eou__ i am a nurse .",
               "--no-repeat-ngram-size", "1", "--max-new-tokens", "8")
    words = out.split()
    assert len(words) == len(set(words))  # no token twice


def test_summarization_field_layouts_and_csv_errors(tmp_path: Path) -> None:
    csv = tmp_path / "cnn.csv"
    csv.write_text(",id,article,highlights\n0,a,The cat sat on the mat all day.,A cat sat.\n"
                   '1,b,"Rain fell in Paris.",Rain.\n', encoding="utf-8")
    task = TaskConfig(type="summarization", train=str(csv), valid=str(csv), options={"fields": "cnn_dailymail"})
    raw = load_raw_data(task)
    assert [tuple(p[:2]) for p in raw.splits["train"]] == [("The cat sat on the mat all day.", "A cat sat."),
                                                           ("Rain fell in Paris.", "Rain.")]
    with pytest.raises(ConfigError, match=r"task.options.fields: expected one of cnn_dailymail, xsum, samsum"):
        TaskConfig(type="summarization", train=str(csv), options={"fields": "cnn"})
    with pytest.raises(ConfigError, match="set one or the other"):
        TaskConfig(type="summarization", train=str(csv), source_field="text", options={"fields": "xsum"})
    bad = tmp_path / "bad.csv"
    bad.write_text("article,summary\nok,fine\n,\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_raw_data(TaskConfig(type="summarization", train=str(bad), valid=str(bad), source_field="article",
                                 target_field="highlights"))
    assert str(err.value).startswith(f"{bad}:") and "highlights" in str(err.value)


def test_dialogue_splits_are_made_of_whole_dialogues(tmp_path: Path) -> None:
    path = tmp_path / "personachat.txt"
    path.write_text("\n".join(PERSONACHAT_LINES * 10) + "\n", encoding="utf-8")  # 20 dialogues

    def splits():
        task = TaskConfig(type="dialogue", train=str(path), valid_fraction=0.25, test_fraction=0.2)
        return load_raw_data(task).splits

    first = splits()
    assert {k: len(v) for k, v in first.items()} == {"train": 12, "test": 4, "valid": 4}
    assert first == splits()  # seeded
    assert TaskConfig(type="dialogue", train=str(path), test_fraction=0.2, valid_fraction=0.1).has_test_split
    with pytest.raises(ConfigError, match="task.options.history: expected the number of turns"):
        TaskConfig(type="dialogue", train=str(path), options={"history": 0})
