"""``synthformer prepare`` for the ``dialogue`` type: the prepared exchanges are the in-memory path's item for item
(the source fitted to ``max_len`` when read), whole dialogues per held-out split, the history window checked, and
prepare -> train -> eval through the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from synthformer.cli.main import main
from synthformer.common.config import ConfigError, from_dict
from synthformer.data import SentinelTokenizer, build_tokenizer
from synthformer.data.prepared import PreparedCorpus
from synthformer.tasks import RunConfig, TaskConfig, prepare_data
from synthformer.tasks.prepared import prepare_corpus
from synthformer.tasks.suites.dialogue.dataset import SPEAKER_TOKENS, encode_source, fit_stored_source
from synthformer.tasks.suites.dialogue.reader import Exchange

from .helpers import dialogue_config, write_yaml

pytestmark = pytest.mark.usefixtures("restore_logging")

_DIALOGUES = [  # PERSONACHAT_LINES as jsonl records (the partner speaks first)
    {"persona": ["i like to ski.", "i have two dogs."],
     "turns": ["hi ! how are you today ?", "i am great . i just walked my two dogs .", "nice . i love dogs .",
               "do you ski ? i like to ski in winter ."]},
    {"persona": ["i am a nurse."],
     "turns": ["hello , what do you do ?", "i am a nurse at a hospital .", "that sounds hard .",
               "it is , but i like to help people ."]},
]


def _files(tmp: Path, fmt: str) -> dict[str, Any]:
    """dialogue_config's files (train: the dialogues 5 times, valid / test: once) in ``fmt``; its config with a
    max_len that makes the fitting cut persona and history ids."""
    cfg = dialogue_config(tmp)
    if fmt == "jsonl":
        for name, times in (("train", 5), ("valid", 1), ("test", 1)):
            path = tmp / f"{name}.jsonl"
            path.write_text("".join(json.dumps(d) + "\n" for d in _DIALOGUES * times), encoding="utf-8")
            cfg["task"][name] = str(path)
    cfg["task"].update(format=fmt, max_len=12, max_target_len=8, overflow="truncate")
    return cfg


def _prepared_config(cfg: dict[str, Any], folder: Path) -> dict[str, Any]:
    task = {k: v for k, v in cfg["task"].items() if k not in ("train", "valid", "test", "format")}
    return {**cfg, "task": {**task, "prepared": str(folder)}}


def _word_tokenizer() -> Any:
    return build_tokenizer("word", [t for d in _DIALOGUES for t in (*d["persona"], *d["turns"])])


def test_stored_sources_fit_as_encode_source_fits() -> None:
    tok = SentinelTokenizer(_word_tokenizer(), SPEAKER_TOKENS)
    exchange = Exchange(("i like to ski.", "i have two dogs."), ("hi ! how are you today ?", "i am great .",
                                                              "nice . i love dogs ."), "")
    stored = encode_source(tok, exchange, None)[0][:-1]
    for max_len in (2, 5, 9, 14, 40):  # history only, persona cut, both cut, nothing cut
        assert fit_stored_source(tok, stored, max_len) == encode_source(tok, exchange, max_len)[0], max_len


@pytest.mark.parametrize("fmt", ["parlai", "jsonl"])
def test_prepared_exchanges_are_the_in_memory_examples(tmp_path: Path, fmt: str) -> None:
    cfg = _files(tmp_path, fmt)
    prepare_corpus(from_dict(TaskConfig, cfg["task"]), tmp_path / "prep", shard_tokens=64)  # several shards
    tok = PreparedCorpus.open(tmp_path / "prep").tokenizer()
    assert isinstance(tok, SentinelTokenizer) and tok.num_sentinels == SPEAKER_TOKENS
    memory = prepare_data(from_dict(RunConfig, cfg), tok)  # the in-memory path with the corpus's tokenizer
    prepared = prepare_data(from_dict(RunConfig, _prepared_config(cfg, tmp_path / "prep")))
    assert prepared.tokenizer == tok and set(prepared.datasets) == {"train", "valid", "test"}
    for split in ("train", "valid", "test"):
        a, b = prepared.datasets[split], memory.datasets[split]
        assert len(a) == len(b) and a.length_report == b.length_report
        for i in range(len(b)):
            assert all(torch.equal(a[i][k], b[i][k]) for k in ("src_ids", "tgt_ids", "labels")), (split, i)
    assert memory.datasets["train"].length_report.truncated > 0  # the fitting did cut
    # the references of scoring: the stored responses decoded
    valid = prepared.datasets["valid"]
    assert [valid.raw_examples[i][1] for i in valid.indices] == [d["turns"][k] for d in _DIALOGUES for k in (1, 3)]


def test_held_out_exchanges_keep_their_dialogue_and_history_must_match(tmp_path: Path) -> None:
    path = tmp_path / "chats.jsonl"
    records = [{"persona": [f"my number is {n} ."], "turns": [f"hi {n}", "hello", "bye", f"ciao {n}"]}
               for n in range(30)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    task = {"type": "dialogue", "train": str(path), "valid_fraction": 0.3, "tokenizer": "byte", "max_len": 32,
            "options": {"history": 3}}
    prepare_corpus(from_dict(TaskConfig, task), tmp_path / "prep")
    cfg = {"task": {"type": "dialogue", "prepared": str(tmp_path / "prep"), "max_len": 32,
                    "options": {"history": 3}}}
    data = prepare_data(from_dict(RunConfig, cfg))
    owner: dict[str, str] = {}
    for split in ("train", "valid"):
        for source, _ in data.datasets[split].raw_examples:
            number = source.split()[source.split().index("is") + 1]  # the dialogue's persona
            assert owner.setdefault(number, split) == split, number
    assert len(owner) == 30 and 0 < list(owner.values()).count("valid") < 30
    cfg["task"]["options"] = {"history": 2}
    with pytest.raises(ConfigError, match=r"task.options.history: 2, but the prepared corpus .* history 3"):
        prepare_data(from_dict(RunConfig, cfg))


def test_prepare_train_eval_from_the_prepared_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _files(tmp_path, "parlai")
    prep = tmp_path / "prep"
    assert main(["prepare", str(write_yaml(tmp_path / "prep.yaml", cfg)), "--out", str(prep), "--no-progress",
                 "-q"]) == 0
    run_dir = tmp_path / "run"
    train_cfg = write_yaml(tmp_path / "train.yaml", _prepared_config(cfg, prep))
    assert main(["train", str(train_cfg), "--run-dir", str(run_dir), "-q"]) == 0
    assert (run_dir / "synthformer_tokenizer.json").read_bytes() == (prep / "tokenizer.json").read_bytes()
    assert main(["eval", str(run_dir)]) == 0
    assert "split test" in capsys.readouterr().out
    metrics = json.loads((run_dir / "eval_test.json").read_text())["metrics"]
    assert {"loss", "bleu_1", "rouge_l", "cider"} <= set(metrics) and metrics["decoded"] == 4
