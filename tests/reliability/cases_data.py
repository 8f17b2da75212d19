"""Bad data files, in every format the readers accept (``data/readers.py``, ``data/glue.py``, ``data/listops.py``,
``data/dialogue.py``, through the task types): missing, a folder, unreadable, empty, binary and wrongly encoded
(Latin-1, UTF-16) for each, then what only one format can get wrong (a cut JSON line, an unclosed CSV quote, a
misaligned parallel pair, a bad ListOps header, ...), and bad data met by a run that already exists
(``--overwrite``, ``--resume``, ``eval``, ``compare --config``).

A case trains (or evaluates) on the data; the error must name the file (and the line where one applies)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from tests.tasks.helpers import LM_TEXT, PERSONACHAT_LINES, SST_LINES, write_yaml

from .harness import BINARY, LATIN1, UTF16, Case, Env, case

Argv = Callable[[Env], Sequence[Any]]
_PAIRS = [("ein haus", "a house"), ("zwei katzen", "two cats"), ("der hund", "the dog"), ("ein baum", "a tree")] * 4
_TEXTS = [(text.partition(" ")[2], int(text[0])) for text in SST_LINES[:16]]


@dataclass(frozen=True)
class Format:
    """One data format: the task section that reads it (``@`` stands for the data folder), the file the cases
    corrupt, its valid content, the other files the format needs, and what the error says of an empty file."""

    name: str
    kind: str
    task: dict[str, Any]
    file: str
    good: str
    empty: str
    siblings: dict[str, str] = field(default_factory=dict)
    text: bool = True
    """False: bytes are data (the byte LM), so binary and other encodings are not bad input."""


def _lines(rows: list[str], header: str | None = None) -> str:
    return "".join(f"{row}\n" for row in ([header] if header else []) + rows)


def _jsonl(records: list[dict[str, Any]]) -> str:
    return _lines([json.dumps(r) for r in records])


_LM = {"type": "lm", "train": "@/corpus.txt", "valid_fraction": 0.1, "tokenizer": "char", "max_len": 16}
_S2S = {"type": "seq2seq", "valid_fraction": 0.25, "tokenizer": "char", "max_len": 16}
_CLS = {"type": "classification", "valid_fraction": 0.25, "tokenizer": "word", "max_len": 16,
        "overflow": "truncate"}
_T2T = {"type": "text_to_text", "train": "@", "tokenizer": "char", "max_len": 48, "max_target_len": 16,
        "overflow": "truncate"}
_RTE = [f"{i}\tA cat sat on the mat.\tA cat sat.\t{'entailment' if i % 2 else 'not_entailment'}" for i in range(8)]
_BOOLQ = [{"passage": "Cats sleep a lot.", "question": "do cats sleep", "label": i % 2 == 0, "idx": i}
          for i in range(8)]
_DIALOGUE = {"type": "dialogue", "valid_fraction": 0.25, "tokenizer": "word", "max_len": 32, "max_target_len": 16,
             "options": {"history": 2}, "overflow": "truncate"}
_TURNS = [["hi ! how are you ?", "i am great .", "do you ski ?", "i like to ski ."]] * 8
_LISTOPS = ["( ( [MAX 2 9 ] ) )\t9", "( ( [MIN 4 7 ] ) )\t4", "( ( [SM 1 2 ] ) )\t3", "( ( [MED 1 5 8 ] ) )\t5"] * 3

FORMATS: dict[str, Format] = {f.name: f for f in [
    Format("lm-text", "lm", _LM, "corpus.txt", LM_TEXT, "file is empty"),
    Format("lm-bytes", "lm", {**_LM, "train": "@/corpus.bin", "tokenizer": "byte"}, "corpus.bin", LM_TEXT,
           "file is empty", text=False),
    Format("seq2seq-parallel", "seq2seq", {**_S2S, "train": "@/train", "format": "parallel", "source_lang": "de",
                                           "target_lang": "en"},
           "train.de", _lines([s for s, _ in _PAIRS]), "has 0", {"train.en": _lines([t for _, t in _PAIRS])}),
    Format("seq2seq-tsv", "seq2seq", {**_S2S, "train": "@/pairs.tsv"}, "pairs.tsv",
           _lines([f"{s}\t{t}" for s, t in _PAIRS]), "no sentence pairs"),
    Format("seq2seq-jsonl", "seq2seq", {**_S2S, "train": "@/pairs.jsonl"}, "pairs.jsonl",
           _jsonl([{"source": s, "target": t} for s, t in _PAIRS]), "no examples"),
    Format("seq2seq-csv", "seq2seq", {**_S2S, "train": "@/pairs.csv"}, "pairs.csv",
           _lines([f"{s},{t}" for s, t in _PAIRS], "source,target"), "no examples"),
    Format("classification-jsonl", "cls", {**_CLS, "train": "@/reviews.jsonl"}, "reviews.jsonl",
           _jsonl([{"text": t, "label": y} for t, y in _TEXTS]), "no examples"),
    Format("classification-csv", "cls", {**_CLS, "train": "@/reviews.csv"}, "reviews.csv",
           _lines([f'"{t}",{y}' for t, y in _TEXTS], "text,label"), "no examples"),
    Format("classification-tsv", "cls", {**_CLS, "train": "@/reviews.tsv"}, "reviews.tsv",
           _lines([f"{t}\t{y}" for t, y in _TEXTS], "text\tlabel"), "no examples"),
    Format("classification-label-text", "cls", {**_CLS, "train": "@/sst.txt", "format": "label_text"}, "sst.txt",
           _lines(SST_LINES), "no examples"),
    Format("classification-listops", "cls", {**_CLS, "train": "@/basic_train.tsv", "format": "listops_tsv",
                                             "tokenizer": "word"},
           "basic_train.tsv", _lines(_LISTOPS, "Source\tTarget"), "expected the header"),
    Format("glue-tsv", "seq2seq", {**_T2T, "options": {"tasks": ["rte"]}}, "RTE/train.tsv",
           _lines(_RTE, "index\tsentence1\tsentence2\tlabel"), "empty file"),
    Format("superglue-jsonl", "seq2seq", {**_T2T, "options": {"tasks": ["boolq"]}}, "BoolQ/train.jsonl",
           _jsonl(_BOOLQ), "no examples"),
    Format("summarization-jsonl", "seq2seq", {**_S2S, "type": "summarization", "train": "@/samsum.jsonl",
                                              "source_field": "document", "target_field": "summary",
                                              "tokenizer": "word", "overflow": "truncate"},
           "samsum.jsonl", _jsonl([{"document": f"{s} . {t}", "summary": t} for s, t in _PAIRS]), "no examples"),
    Format("dialogue-parlai", "seq2seq", {**_DIALOGUE, "format": "parlai", "train": "@/train.txt"}, "train.txt",
           _lines(PERSONACHAT_LINES * 4), "no dialogues"),
    Format("dialogue-jsonl", "seq2seq", {**_DIALOGUE, "format": "jsonl", "train": "@/chats.jsonl"}, "chats.jsonl",
           _jsonl([{"persona": ["i like to ski."], "turns": t} for t in _TURNS]), "no dialogues"),
    Format("dialogue-dailydialog", "seq2seq", {**_DIALOGUE, "format": "dailydialog",
                                               "train": "@/dialogues_train.txt"},
           "dialogues_train.txt", _lines([" __eou__ ".join(t) + " __eou__" for t in _TURNS]), "no dialogues"),
]}


def _task(task: dict[str, Any], env: Env) -> dict[str, Any]:
    folder = str(env.tmp / "data")
    return {k: (folder + v[1:] if isinstance(v, str) and v.startswith("@") else v) for k, v in task.items()}


def data_config(env: Env, fmt: Format, content: bytes | str | None, *, file: str | None = None,
                directory: bool = False, deny: bool = False, task: dict[str, Any] | None = None) -> Any:
    """Write the format's files with ``content`` in ``file`` (default: the one the format's cases corrupt;
    None: leave it missing) and a config reading them; return the config's path."""
    for name, text in {fmt.file: fmt.good, **fmt.siblings}.items():
        env.write(f"data/{name}", text)
    path = env.tmp / "data" / (file or fmt.file)
    path.unlink(missing_ok=True)
    if directory:
        path.mkdir(parents=True)
    elif content is not None:
        env.write(f"data/{file or fmt.file}", content)
    if deny:
        env.deny(path)
    config = env.config_dict(fmt.kind)
    config["task"] = _task({**fmt.task, **(task or {})}, env)
    config.pop("eval", None)  # the trained configs' decoding settings; the defaults fit every format
    return write_yaml(env.tmp / "config.yaml", config)


def train_on(fmt: Format, content: bytes | str | None, **how: Any) -> Argv:
    """``train`` on the format's data with ``content`` in its file, into a run directory that must stay absent."""
    return lambda env: ["train", data_config(env, fmt, content, **how), "--run-dir", env.fresh_run()]


# -- every format: the same seven ways to be unusable ---------------------------------------------------------


def _generic(fmt: Format) -> list[Case]:
    cat, name, file = f"data: {fmt.name}", fmt.name, fmt.file
    cases = [
        case(cat, f"{name}-missing", train_on(fmt, None), file, "not found"),
        case(cat, f"{name}-directory", train_on(fmt, None, directory=True), file, "is a directory"),
        case(cat, f"{name}-unreadable", train_on(fmt, fmt.good, deny=True), file, "Permission denied"),
        case(cat, f"{name}-empty", train_on(fmt, b""), file, fmt.empty),
    ]
    if fmt.text:
        cases += [
            case(cat, f"{name}-binary", train_on(fmt, BINARY), f"{file}:1", "invalid UTF-8", "0x89"),
            case(cat, f"{name}-latin1", train_on(fmt, LATIN1), f"{file}:2", "invalid UTF-8", "0xe9"),
            case(cat, f"{name}-utf16", train_on(fmt, UTF16), f"{file}:1", "invalid UTF-8", "0xff"),
        ]
    return cases


GENERIC_CASES: list[Case] = [c for fmt in FORMATS.values() for c in _generic(fmt)]

# -- what one format can get wrong ----------------------------------------------------------------------------
MALFORMED = "data: malformed records"


def _bad(fmt: str, id: str, content: str | bytes, *expect: str, **how: Any) -> Case:
    return case(MALFORMED, f"{fmt}-{id}", train_on(FORMATS[fmt], content, **how), *expect)


_GOOD_JSONL = FORMATS["classification-jsonl"].good
MALFORMED_CASES: list[Case] = [
    _bad("lm-text", "valid-binary", BINARY, "valid.txt:1", "invalid UTF-8", file="valid.txt",
         task={"valid": "@/valid.txt", "valid_fraction": 0.0}),
    _bad("seq2seq-parallel", "line-counts-differ", _lines(["ein haus", "der hund"]), "train.en", "train.de",
         "line counts differ"),
    _bad("seq2seq-parallel", "empty-line", _lines([s for s, _ in _PAIRS[:3]] + [""] + [s for s, _ in _PAIRS[4:]]),
         "train.de:4", "empty line"),
    _bad("seq2seq-tsv", "one-column", _lines(["ein haus\ta house", "zwei katzen"]), "pairs.tsv:2",
         "expected at least 2 tab-separated columns, found 1"),
    _bad("seq2seq-tsv", "empty-target", _lines(["ein haus\ta house", "zwei katzen\t "]), "pairs.tsv:2",
         "empty source or target"),
    _bad("seq2seq-jsonl", "cut-last-line", FORMATS["seq2seq-jsonl"].good + '{"source": "ein ha', "pairs.jsonl:17",
         "invalid JSON"),
    _bad("seq2seq-jsonl", "not-an-object", _lines(['["ein haus", "a house"]']), "pairs.jsonl:1",
         "expected a JSON object, got list"),
    _bad("seq2seq-jsonl", "missing-field", _jsonl([{"source": "ein haus", "traget": "a house"}]), "pairs.jsonl:1",
         "missing field 'target'", "traget"),
    _bad("seq2seq-jsonl", "number-source", _jsonl([{"source": 5, "target": "a house"}]), "pairs.jsonl:1",
         "'source' must be a string", "int"),
    _bad("seq2seq-csv", "unclosed-quote", _lines(['"ein haus,a house', "der hund,the dog"], "source,target"),
         "pairs.csv", "malformed CSV"),
    _bad("seq2seq-csv", "missing-column", _lines(["ein haus,a house"], "source,translation"), "pairs.csv:1",
         "missing column 'target'", "translation"),
    _bad("classification-jsonl", "null-label", _jsonl([{"text": "fine", "label": None}]), "reviews.jsonl:1",
         "label field 'label'", "None"),
    _bad("classification-jsonl", "bool-label", _jsonl([{"text": "fine", "label": True}]), "reviews.jsonl:1",
         "label field 'label'", "True"),
    _bad("classification-jsonl", "cut-last-line", _GOOD_JSONL + '{"text": "a dull', "reviews.jsonl:17",
         "invalid JSON"),
    _bad("classification-jsonl", "one-class", _jsonl([{"text": t, "label": 1} for t, _ in _TEXTS]),
         "train split", "at least 2 classes", "['1']"),
    _bad("classification-jsonl", "unseen-valid-label", _jsonl([{"text": "fine", "label": "maybe"}]), "dev.jsonl:1",
         "'maybe'", "never occurs in the training split", file="dev.jsonl",
         task={"valid": "@/dev.jsonl", "valid_fraction": 0.0}),
    _bad("classification-csv", "text-after-quote", _lines(['"fine"x,1'], "text,label"), "reviews.csv:2",
         "malformed CSV"),
    _bad("classification-csv", "short-row", _lines(['"fine",1', '"only text"'], "text,label"), "reviews.csv:3",
         "expected at least 2 columns, found 1"),
    _bad("classification-tsv", "missing-header-column", _lines(["fine\t1"], "review\tlabel"), "reviews.tsv:1",
         "missing column 'text'", "review"),
    _bad("classification-label-text", "label-only", _lines(["1 a gorgeous movie", "0"]), "sst.txt:2",
         "expected 'label text'", "'0'"),
    _bad("classification-label-text", "blank-line", _lines(["1 a gorgeous movie", "   ", "0 a mess"]), "sst.txt:2",
         "empty line"),
    _bad("classification-label-text", "test-latin1", LATIN1, "test.txt:2", "invalid UTF-8", file="test.txt",
         task={"test": "@/test.txt"}),
    _bad("classification-listops", "no-header", _lines(_LISTOPS), "basic_train.tsv:1", "expected the header"),
    _bad("classification-listops", "target-not-digit", _lines(["( [MAX 2 9 ] )\t11"], "Source\tTarget"),
         "basic_train.tsv:2", "target must be a digit 0-9", "'11'"),
    _bad("classification-listops", "three-columns", _lines(["( [MAX 2 9 ] )\t9\textra"], "Source\tTarget"),
         "basic_train.tsv:2", "expected 2 tab-separated columns, found 3"),
    _bad("glue-tsv", "missing-column", _lines(["0\ta\tb\tentailment"], "index\tsentence1\tsentence2\tgold"),
         "RTE/train.tsv:1", "missing column 'label'", "gold"),
    _bad("glue-tsv", "unknown-label", _lines(["0\ta\tb\tmaybe"], "index\tsentence1\tsentence2\tlabel"),
         "RTE/train.tsv:2", "'maybe'"),
    _bad("glue-tsv", "field-count", _lines(["0\ta\tentailment"], "index\tsentence1\tsentence2\tlabel"),
         "RTE/train.tsv:2", "expected 4 tab-separated fields, found 3"),
    _bad("superglue-jsonl", "cut-line", FORMATS["superglue-jsonl"].good + '{"passage": "Ca', "BoolQ/train.jsonl:9",
         "invalid JSON"),
    _bad("superglue-jsonl", "missing-label", _jsonl([{"passage": "p", "question": "q", "idx": 0}]),
         "BoolQ/train.jsonl:1", "missing field 'label'"),
    _bad("summarization-jsonl", "missing-field", _jsonl([{"document": "a long chat", "sumary": "chat"}]),
         "samsum.jsonl:1", "missing field 'summary'", "sumary"),
    _bad("dialogue-parlai", "no-tab", _lines(["1 your persona: i ski.", "2 hi there"]), "train.txt:2",
         "no tab found"),
    _bad("dialogue-jsonl", "one-turn", _jsonl([{"turns": ["hi !"]}]), "chats.jsonl:1", "at least 2 turns, got 1"),
    _bad("dialogue-dailydialog", "empty-turn", _lines(["Hi . __eou__ __eou__ Bye . __eou__"]),
         "dialogues_train.txt:1", "empty turn"),
    _bad("superglue-jsonl", "label-not-class", _jsonl([{"passage": "p", "question": "q", "label": "yes"}]),
         "BoolQ/train.jsonl:1", "'yes'"),
]

# -- bad data met by an existing run --------------------------------------------------------------------------
EXISTING = "data: runs that exist"


def _with_run(verb_args: Callable[[Env, Any, Any], list[Any]]) -> Argv:
    """A watched copy of the trained classification run and a config whose training file is binary."""
    def argv(env: Env) -> list[Any]:
        run = env.run("cls")
        config = data_config(env, FORMATS["classification-label-text"], BINARY)
        return verb_args(env, run, config)
    return argv


def _resume_after_data_broke(env: Env) -> list[Any]:
    """``--resume`` with the run's own config, whose training file has become binary since."""
    run = env.run("cls")
    saved = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    saved["task"]["train"] = str(env.write("data/sst.txt", BINARY))
    (run / "config.yaml").write_text(yaml.safe_dump(saved), encoding="utf-8")
    return ["train", write_yaml(env.tmp / "config.yaml", saved), "--run-dir", run, "--resume"]


def _eval_after_data_broke(env: Env) -> list[Any]:
    """The run's own config (``config.yaml``) now names a test file that became Latin-1."""
    run = env.run("cls")
    saved = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    saved["task"]["test"] = str(env.write("data/test.txt", LATIN1))
    (run / "config.yaml").write_text(yaml.safe_dump(saved), encoding="utf-8")
    return ["eval", run]


EXISTING_CASES: list[Case] = [
    case(EXISTING, "data-binary-overwrite", _with_run(lambda env, run, cfg: ["train", cfg, "--run-dir", run,
                                                                              "--overwrite"]),
         "sst.txt:1", "invalid UTF-8"),
    case(EXISTING, "data-binary-resume", _resume_after_data_broke, "sst.txt:1", "invalid UTF-8"),
    case(EXISTING, "data-latin1-eval", _eval_after_data_broke, "test.txt:2", "invalid UTF-8", "0xe9"),
    case(EXISTING, "data-binary-compare",
         _with_run(lambda env, run, cfg: ["compare", "--config", cfg, "--out", env.fresh_run("comparison"),
                                          "--steps", "1", "--kinds", "V", "R"]),
         "sst.txt:1", "invalid UTF-8"),
]

DATA_CASES: list[Case] = [*GENERIC_CASES, *MALFORMED_CASES, *EXISTING_CASES]
