"""Tiny configs and data files shared by the task and CLI tests (no shared data folder needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

# Real-looking text with enough repetition that a few steps already lower the loss.
LM_TEXT = (
    "def add(a, b):\n    return a + b\n\n"
    "def sub(a, b):\n    return a - b\n\n"
    "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n\n"
) * 40

TINY_MODEL: dict[str, Any] = {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "dropout": 0.0}
TINY_TRAIN: dict[str, Any] = {"steps": 6, "batch_size": 8, "lr": 3e-3, "save_every": 3, "log_every": 2,
                              "eval_every": 3, "eval_steps": 2}

SST_LINES = [
    "1 a stirring , funny and finally transporting re-imagining",
    "0 apparently reassembled from the cutting-room floor",
    "1 a gorgeous , witty , seductive movie",
    "0 the story is lame and the acting is wooden",
    "1 one of the best films of the year",
    "0 a dull , pretentious mess",
] * 8


def write_yaml(path: Path, data: dict[str, Any]) -> Path:
    """Write ``data`` as YAML to ``path``; return the path."""
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def lm_config(tmp: Path, **train: Any) -> dict[str, Any]:
    """A character LM on a small text file in ``tmp`` (10% held out)."""
    text = tmp / "corpus.txt"
    if not text.exists():
        text.write_text(LM_TEXT, encoding="utf-8")
    return {
        "task": {"type": "lm", "train": str(text), "valid_fraction": 0.1, "tokenizer": "char", "max_len": 16},
        "model": {**TINY_MODEL, "decoder_kind": "R+V"},
        "train": {**TINY_TRAIN, **train},
    }


def seq2seq_config(**train: Any) -> dict[str, Any]:
    """Digit-string reversal, generated (no files)."""
    return {
        "task": {"type": "seq2seq", "generator": "algorithmic:reverse",
                 "generator_options": {"num_train": 64, "num_valid": 8, "num_test": 8, "max_len": 5}, "max_len": 8},
        "model": {**TINY_MODEL, "encoder_kind": "D", "decoder_kind": "R"},
        "train": {**TINY_TRAIN, **train},
        "eval": {"train_decode_examples": 4, "beam": 2},
    }


def classification_config(tmp: Path, **train: Any) -> dict[str, Any]:
    """SST-2-style ``label text`` files in ``tmp``."""
    for name, lines in (("train.txt", SST_LINES), ("dev.txt", SST_LINES[:12]), ("test.txt", SST_LINES[12:24])):
        (tmp / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {
        "task": {"type": "classification", "format": "label_text", "train": str(tmp / "train.txt"),
                 "valid": str(tmp / "dev.txt"), "test": str(tmp / "test.txt"), "tokenizer": "word",
                 "tokenizer_options": {"split": "whitespace"}, "max_len": 16},
        "model": {**TINY_MODEL, "encoder_kind": "R+V"},
        "train": {**TINY_TRAIN, **train},
    }


def span_config(tmp: Path, **changes: Any) -> dict[str, Any]:
    """T5 span corruption on a small text file in ``tmp``; ``changes`` are ``section.key`` (or ``section``)
    replacements."""
    text = tmp / "corpus.txt"
    if not text.exists():
        text.write_text(LM_TEXT, encoding="utf-8")
    cfg: dict[str, Any] = {
        "task": {"type": "span_corruption", "train": str(text), "valid_fraction": 0.1, "tokenizer": "char",
                 "max_len": 24, "options": {"num_sentinels": 10}},
        "model": {**TINY_MODEL, "encoder_kind": "R+V"},
        "train": dict(TINY_TRAIN),
    }
    for key, value in changes.items():
        section, _, name = key.partition(".")
        if name:
            cfg[section][name] = value
        else:
            cfg[section] = value
    return cfg


RTE_ROWS = [("The cat sat on the mat.", "A cat sat.", "entailment"),
            ("It rained all day in Paris.", "Paris was dry.", "not_entailment"),
            ("Anna bought three apples.", "Anna bought fruit.", "entailment"),
            ("The museum closed in 1990.", "The museum is open.", "not_entailment")] * 5
SST_ROWS = [("a gorgeous , witty , seductive movie ", 1), ("a dull , pretentious mess ", 0),
            ("one of the best films of the year ", 1), ("the acting is wooden ", 0)] * 8


def glue_dir(tmp: Path) -> Path:
    """RTE and SST-2 in the official GLUE TSV layout (train 20 / 32, dev 8 / 8)."""
    root = tmp / "glue"
    for split, n_rte, n_sst in (("train", 20, 32), ("dev", 8, 8)):
        (root / "RTE").mkdir(parents=True, exist_ok=True)
        (root / "SST-2").mkdir(parents=True, exist_ok=True)
        rows = ["index\tsentence1\tsentence2\tlabel"]
        rows += [f"{i}\t{a}\t{b}\t{c}" for i, (a, b, c) in enumerate(RTE_ROWS[:n_rte])]
        (root / "RTE" / f"{split}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
        rows = ["sentence\tlabel"] + [f"{s}\t{label}" for s, label in SST_ROWS[:n_sst]]
        (root / "SST-2" / f"{split}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


def t2t_config(tmp: Path, **task: Any) -> dict[str, Any]:
    """Text-to-text RTE + SST-2 on tiny GLUE-layout files in ``tmp``; ``task`` updates the task section."""
    return {
        "task": {"type": "text_to_text", "train": str(glue_dir(tmp)), "options": {"tasks": ["rte", "sst2"]},
                 "tokenizer": "char", "max_len": 48, "max_target_len": 16,
                 "overflow": "truncate", **task},  # char-level at 48: most of the tiny sentences are cut
        "model": {**TINY_MODEL, "encoder_kind": "R+V"},
        "train": {**TINY_TRAIN, "eval_steps": 0},
        "eval": {"beam": 1, "train_decode_examples": 4},
    }


SUMMARY_ROWS = [
    ("Amanda: I baked cookies. Do you want some?\nJerry: Sure! Bring them tomorrow.",
     "Amanda baked cookies and will bring Jerry some tomorrow."),
    ("Olivia: Who are you voting for?\nOliver: Liberals as always.\nOlivia: Me too!",
     "Olivia and Oliver are voting for liberals."),
    ("Tim: Are you coming to the party tonight?\nKim: No, I have to study for my exam.",
     "Kim will not come to the party. She has to study."),
    ("Anna: The train is late again.\nBen: I will pick you up at the station.",
     "Ben will pick Anna up at the station because her train is late."),
] * 6


def summarization_config(tmp: Path, **eval_: Any) -> dict[str, Any]:
    """Dialogue -> summary JSONL files in ``tmp`` (SAMSum's shared layout: ``document`` / ``summary``)."""
    import json

    splits = (("train.jsonl", SUMMARY_ROWS), ("valid.jsonl", SUMMARY_ROWS[:4]), ("test.jsonl", SUMMARY_ROWS[4:8]))
    for name, rows in splits:
        (tmp / name).write_text("".join(json.dumps({"id": str(i), "document": d, "summary": s}) + "\n"
                                        for i, (d, s) in enumerate(rows)), encoding="utf-8")
    return {
        "task": {"type": "summarization", "train": str(tmp / "train.jsonl"), "valid": str(tmp / "valid.jsonl"),
                 "test": str(tmp / "test.jsonl"), "source_field": "document", "target_field": "summary",
                 "tokenizer": "word", "max_len": 24, "max_target_len": 16},
        "model": {**TINY_MODEL, "encoder_kind": "R+V", "decoder_kind": "D"},
        "train": dict(TINY_TRAIN),
        "eval": {"beam": 2, "train_decode_examples": 2, **eval_},
    }


PERSONACHAT_LINES = [
    "1 your persona: i like to ski.",
    "2 your persona: i have two dogs.",
    "3 hi ! how are you today ?\ti am great . i just walked my two dogs .",
    "4 nice . i love dogs .\tdo you ski ? i like to ski in winter .",
    "1 your persona: i am a nurse.",
    "2 hello , what do you do ?\ti am a nurse at a hospital .",
    "3 that sounds hard .\tit is , but i like to help people .",
]


def dialogue_config(tmp: Path, **eval_: Any) -> dict[str, Any]:
    """PersonaChat-style ParlAI text in ``tmp`` (train: the lines repeated, valid/test: the lines once); METEOR
    left out (it starts a Java process: slow for a tiny test)."""
    (tmp / "train.txt").write_text("\n".join(PERSONACHAT_LINES * 5) + "\n", encoding="utf-8")
    for name in ("valid.txt", "test.txt"):
        (tmp / name).write_text("\n".join(PERSONACHAT_LINES) + "\n", encoding="utf-8")
    return {
        "task": {"type": "dialogue", "format": "parlai", "train": str(tmp / "train.txt"),
                 "valid": str(tmp / "valid.txt"), "test": str(tmp / "test.txt"), "tokenizer": "word",
                 "max_len": 32, "max_target_len": 16, "options": {"history": 2}},
        "model": {**TINY_MODEL, "encoder_kind": "D+V", "decoder_kind": "R"},
        "train": dict(TINY_TRAIN),
        "eval": {"beam": 2, "train_decode_examples": 3, "metrics": ["loss", "bleu", "rouge_l", "cider", "distinct"],
                 **eval_},
    }


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def superglue_dir(tmp: Path) -> Path:
    """Every SuperGLUE task but COPA in the official JSONL layout, a few made-up records each (train and val; AX-b and
    AX-g one labelled file)."""
    root = tmp / "superglue"
    nli = [("A man sleeps.", "A person rests.", "entailment"), ("A dog runs.", "A cat sleeps.", "not_entailment")]
    passage = {"text": "Ann ran home. Bob stayed.", "questions": [
        {"question": "Who ran?", "idx": 0, "answers": [{"text": "Ann", "idx": 0, "label": 1},
                                                       {"text": "Bob", "idx": 1, "label": 0}]},
        {"question": "Who stayed?", "idx": 1, "answers": [{"text": "Bob", "idx": 2, "label": 1}]}]}
    record = {"passage": {"text": "Tom met Ann in Paris.\n@highlight\nAnn left", "entities": [
        {"start": 0, "end": 2}, {"start": 8, "end": 10}, {"start": 15, "end": 19}]},
        "qas": [{"query": "@placeholder is a city.", "idx": 0, "answers": [{"start": 15, "end": 19, "text": "Paris"}]},
                {"query": "@placeholder left.", "idx": 1, "answers": [{"start": 8, "end": 10, "text": "Ann"}]}]}
    wsc = [{"text": "Ann told Bea that she won.", "target": {"span1_index": i, "span1_text": name, "span2_index": 3,
                                                             "span2_text": "she"}, "label": label}
           for i, name, label in ((0, "Ann", True), (2, "Bea", False))]
    for split in ("train", "val"):
        _jsonl(root / "BoolQ" / f"{split}.jsonl", [{"passage": "The sky is blue.", "question": "is the sky blue",
                                                     "label": i % 2 == 0, "idx": i} for i in range(4)])
        _jsonl(root / "CB" / f"{split}.jsonl", [{"premise": p, "hypothesis": h, "label": label, "idx": i}
                                                 for i, (p, h, label) in enumerate(
                                                     [(*nli[0][:2], "entailment"), (*nli[1][:2], "contradiction"),
                                                      ("Kids play.", "Kids play ball.", "neutral")])])
        _jsonl(root / "WiC" / f"{split}.jsonl", [{"word": "bank", "sentence1": "a river bank", "sentence2": s2,
                                                  "label": label, "idx": i} for i, (s2, label) in
                                                 enumerate([("the bank of the river", True), ("a bank loan", False)])])
        _jsonl(root / "RTE" / f"{split}.jsonl", [{"premise": p, "hypothesis": h, "label": label, "idx": i}
                                                  for i, (p, h, label) in enumerate(nli * 2)])
        _jsonl(root / "MultiRC" / f"{split}.jsonl", [{"idx": k, "version": 1.1, "passage": passage} for k in range(2)])
        _jsonl(root / "ReCoRD" / f"{split}.jsonl", [{**record, "idx": k} for k in range(2)])
        _jsonl(root / "WSC" / f"{split}.jsonl", [{**row, "idx": i} for i, row in enumerate(wsc * 2)])
    _jsonl(root / "AX-b" / "AX-b.jsonl", [{"sentence1": p, "sentence2": h, "label": label, "idx": str(i)}
                                          for i, (p, h, label) in enumerate(nli)])
    _jsonl(root / "AX-g" / "AX-g.jsonl", [{"premise": f"{who} slept.", "hypothesis": "Someone slept.",
                                           "label": "entailment", "idx": i, "pair_id": i}
                                          for i, who in enumerate(["He", "She"])])
    return root


def retrieval_config(tmp: Path, **train: Any) -> dict[str, Any]:
    """LRA Retrieval-style pairs (``label id1 id2 text1 text2``) in ``tmp``, a dual encoder on bytes."""
    rows = [f"{i % 2}\tP{i}\tQ{i}\tpaper {i} on parsing\tpaper {i % 3}" for i in range(24)]
    (tmp / "pairs.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return {
        "task": {"type": "retrieval", "train": str(tmp / "pairs.tsv"), "valid": str(tmp / "pairs.tsv"),
                 "tokenizer": "byte", "max_len": 24},
        "model": {**TINY_MODEL, "encoder_kind": "R+V"},
        "train": {**TINY_TRAIN, **train},
    }


def pretrained_finetuning_yaml(tmp: Path, corpus: Path, kind: str) -> Path:
    """Pretrain a tiny char-level span-corruption run on ``corpus`` (encoder kind ``kind``) into ``tmp/pre`` through
    the CLI, and write ``tmp/ft.yaml``: :func:`t2t_config` finetuning from it (its tokenizer comes from the run)."""
    from synthformer.cli.main import main

    pre = write_yaml(tmp / "pre.yaml", {
        "task": {"type": "span_corruption", "train": str(corpus), "valid_fraction": 0.1, "tokenizer": "char",
                 "max_len": 48, "options": {"num_sentinels": 20}},
        "model": {**TINY_MODEL, "encoder_kind": kind},
        "train": dict(TINY_TRAIN),
    })
    assert main(["train", str(pre), "--run-dir", str(tmp / "pre"), "--no-progress", "-q"]) == 0
    ft_cfg = t2t_config(tmp)
    del ft_cfg["task"]["tokenizer"]
    ft_cfg["model"]["encoder_kind"] = kind
    ft_cfg["init_from"] = str(tmp / "pre")
    return write_yaml(tmp / "ft.yaml", ft_cfg)
