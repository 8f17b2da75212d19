"""GLUE / SuperGLUE as text-to-text examples: the task table, the official-file readers and the Hugging Face path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synthformer.data.errors import DataError
from synthformer.tasks.suites.glue.reader import (
    GLUE_TASKS,
    TextToTextExample,
    get_glue_task,
    glue_split_path,
    load_hf_glue,
    read_glue_split,
)

# Official GLUE row counts (header excluded): task -> (train, dev).
OFFICIAL_COUNTS = {
    "rte": (2490, 277),
    "mrpc": (3668, 408),
    "cola": (8551, 1043),
    "stsb": (5749, 1500),
    "sst2": (67349, 872),
    "qnli": (104743, 5463),
}


@pytest.fixture(scope="module")
def glue_dir(shared_data: Path) -> Path:
    path = shared_data / "glue"
    if not path.is_dir():
        pytest.skip("shared GLUE data not available")
    return path


def _write(path: Path, lines: list[str], *, bom: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(("\ufeff" if bom else "") + "".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _rte(tmp_path: Path, rows: list[str], split: str = "dev") -> Path:
    _write(tmp_path / "RTE" / f"{split}.tsv", ["index\tsentence1\tsentence2\tlabel", *rows])
    return tmp_path


# ---- the task table ----

def test_task_names_and_benchmarks() -> None:
    glue = {n for n, t in GLUE_TASKS.items() if t.benchmark == "glue"}
    superglue = {n for n, t in GLUE_TASKS.items() if t.benchmark == "super_glue"}
    assert glue == {"cola", "sst2", "mrpc", "qqp", "stsb", "mnli", "qnli", "rte", "wnli"}
    assert superglue == {"boolq", "cb", "wic", "copa", "multirc", "record", "wsc", "super_glue_rte", "axb", "axg"}
    assert {n for n, t in GLUE_TASKS.items() if t.eval_only} == {"axb", "axg"}
    assert GLUE_TASKS["record"].labels is None and not GLUE_TASKS["record"].is_regression
    assert GLUE_TASKS["mnli"].dev_splits == ("dev_matched", "dev_mismatched")
    assert GLUE_TASKS["mrpc"].metrics == ("f1", "accuracy")
    assert GLUE_TASKS["cb"].metrics == ("accuracy", "f1_macro")
    assert GLUE_TASKS["stsb"].labels is None and GLUE_TASKS["stsb"].is_regression


@pytest.mark.parametrize(("task", "fields", "expected"), [
    ("cola", {"sentence": "A b."}, "cola sentence: A b."),
    ("mnli", {"premise": "P.", "hypothesis": "H."}, "mnli hypothesis: H. premise: P."),
    ("qnli", {"question": "Q?", "sentence": "S."}, "qnli question: Q? sentence: S."),
    ("boolq", {"question": "q", "passage": "p"}, "boolq passage: p question: q"),
    ("wic", {"word": "w", "sentence1": "a", "sentence2": "b"}, "wic sentence1: a sentence2: b word: w"),
    ("copa", {"premise": "p", "choice1": "a", "choice2": "b", "question": "cause"},
     "copa choice1: a choice2: b premise: p question: cause"),
])
def test_source_text(task: str, fields: dict[str, str], expected: str) -> None:
    assert get_glue_task(task).source_text(fields) == expected


def test_source_text_missing_field() -> None:
    with pytest.raises(KeyError, match="missing input field 'premise'"):
        get_glue_task("mnli").source_text({"hypothesis": "h"})


@pytest.mark.parametrize(("task", "label", "name"), [
    ("cola", 0, "unacceptable"), ("sst2", 1, "positive"), ("mrpc", 1, "equivalent"), ("qqp", 0, "not_duplicate"),
    ("mnli", 2, "contradiction"), ("qnli", 1, "not_entailment"), ("rte", 0, "entailment"), ("wnli", 1, "entailment"),
    ("boolq", 1, "True"), ("cb", 1, "contradiction"), ("wic", 0, "False"), ("copa", 1, "choice2"),
])
def test_verbalize_classes(task: str, label: int, name: str) -> None:
    assert get_glue_task(task).verbalize(label) == name


@pytest.mark.parametrize(("score", "text"), [
    (3.84, "3.8"), (3.9, "4.0"), (5.0, "5.0"), (0.0, "0.0"), (2.25, "2.2"), (4.79, "4.8"),
    # halves of 0.2 round to even, like T5's tf.round: 0.1*5 = 0.5 -> 0; 0.3*5 = 1.5 -> 2; 0.5*5 = 2.5 -> 2
    (0.1, "0.0"), (0.3, "0.4"), (0.5, "0.4"), (0.7, "0.8"),
])
def test_verbalize_stsb_rounds_to_nearest_fifth(score: float, text: str) -> None:
    assert get_glue_task("stsb").verbalize(score) == text


@pytest.mark.parametrize("label", [2, -1, True, 1.0])
def test_verbalize_rejects_non_class(label: object) -> None:
    with pytest.raises(ValueError, match="class index"):
        get_glue_task("rte").verbalize(label)  # type: ignore[arg-type]


def test_unknown_task_suggests_closest() -> None:
    with pytest.raises(ValueError, match=r"unknown GLUE task 'rtee' \(did you mean 'rte'\?\); valid: cola, sst2"):
        get_glue_task("rtee")
    assert get_glue_task("RTE") is GLUE_TASKS["rte"]


def test_split_paths(tmp_path: Path) -> None:
    assert glue_split_path("mnli", tmp_path, "dev") == tmp_path / "MNLI" / "dev_matched.tsv"
    assert glue_split_path("mnli", tmp_path, "dev_mismatched") == tmp_path / "MNLI" / "dev_mismatched.tsv"
    assert glue_split_path("sst2", tmp_path, "train") == tmp_path / "SST-2" / "train.tsv"
    assert glue_split_path("boolq", tmp_path, "dev") == tmp_path / "BoolQ" / "val.jsonl"
    with pytest.raises(ValueError, match="no public labels"):
        glue_split_path("rte", tmp_path, "test")
    with pytest.raises(ValueError, match="unknown split 'valid'; valid: train, dev"):
        glue_split_path("rte", tmp_path, "valid")


# ---- the shared real data ----

@pytest.mark.parametrize("split", ["train", "dev"])
@pytest.mark.parametrize("task", sorted(OFFICIAL_COUNTS))
def test_shared_row_counts(glue_dir: Path, task: str, split: str) -> None:
    path = glue_split_path(task, glue_dir, split)
    if task == "qnli" and split == "train":  # the shared data has QNLI's dev set only: a located error
        assert not path.is_file()
        with pytest.raises(DataError, match="QNLI/train.tsv"):
            read_glue_split(task, glue_dir, split)
        return
    examples = read_glue_split(task, glue_dir, split)
    assert len(examples) == OFFICIAL_COUNTS[task][split == "dev"]
    assert all(e.task == task and e.source.startswith(task + " ") for e in examples)


def test_shared_rte_first_dev_example(glue_dir: Path) -> None:
    first = read_glue_split("rte", glue_dir, "dev")[0]
    assert first == TextToTextExample(
        task="rte",
        source="rte sentence1: Dana Reeve, the widow of the actor Christopher Reeve, has died of lung cancer at age "
               "44, according to the Christopher Reeve Foundation. sentence2: Christopher Reeve had an accident.",
        target="not_entailment", label=1, line=2)


def test_shared_layouts(glue_dir: Path) -> None:
    mrpc = read_glue_split("mrpc", glue_dir, "dev")  # BOM header, an unbalanced quote in the first row
    assert mrpc[0].source.endswith('sentence2: "The foodservice pie business does not fit our long-term growth '
                                   'strategy.')
    # label counts: the ones ../shared/data/SOURCES.md documents for these files (MRPC dev 279/129, QNLI dev
    # 2,702 entailment, SST-2 train 37,569 positive), counted there independently of this reader
    assert sum(e.label for e in mrpc) == 279 and mrpc[0].target == "equivalent"
    cola = read_glue_split("cola", glue_dir, "dev")  # no header: the first example is line 1
    assert (cola[0].line, cola[0].source) == (1, "cola sentence: The sailors rode the breeze clear of the rocks.")
    assert cola[-1].line == OFFICIAL_COUNTS["cola"][1]  # no header: the last example's line is the dev count
    stsb = read_glue_split("stsb", glue_dir, "dev")
    assert (stsb[0].label, stsb[0].target) == (5.0, "5.0")
    assert all(0.0 <= e.label <= 5.0 and e.target == f"{round(e.label * 5) / 5:.1f}" for e in stsb)
    qnli = read_glue_split("qnli", glue_dir, "dev")
    assert sum(e.target == "entailment" for e in qnli) == 2702
    sst2 = read_glue_split("sst2", glue_dir, "train")
    assert sum(e.label for e in sst2) == 37569


# ---- malformed files ----

def test_wrong_field_count_names_line(tmp_path: Path) -> None:
    _rte(tmp_path, ["0\ta\tb\tentailment", "1\ta\tb"])
    with pytest.raises(DataError, match=r"RTE/dev\.tsv:3: expected 4 tab-separated fields, found 3"):
        read_glue_split("rte", tmp_path, "dev")


def test_bad_label_and_empty_text(tmp_path: Path) -> None:
    _rte(tmp_path, ["0\ta\tb\tentailment", "1\ta\tb\tneutral"])
    with pytest.raises(DataError, match=r"dev\.tsv:3: label 'neutral' is not one of entailment, not_entailment"):
        read_glue_split("rte", tmp_path, "dev")
    _rte(tmp_path, ["0\ta\t  \tentailment"])
    with pytest.raises(DataError, match=r"dev\.tsv:2: empty text in field 'sentence2'"):
        read_glue_split("rte", tmp_path, "dev")
    _write(tmp_path / "SST-2" / "dev.tsv", ["sentence\tlabel", "good\t1", "bad\t2"])
    with pytest.raises(DataError, match=r"SST-2/dev\.tsv:3: label '2' is not a class index \(0, 1\)"):
        read_glue_split("sst2", tmp_path, "dev")


def test_missing_file_column_and_bad_utf8(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"RTE/train\.tsv: file not found"):
        read_glue_split("rte", tmp_path, "train")
    _write(tmp_path / "RTE" / "dev.tsv", ["index\tsentence1\thypothesis\tlabel", "0\ta\tb\tentailment"])
    with pytest.raises(DataError, match=r"dev\.tsv:1: missing column 'sentence2'"):
        read_glue_split("rte", tmp_path, "dev")
    path = tmp_path / "RTE" / "dev.tsv"
    path.write_bytes(b"index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n1\t\xff\tb\tentailment\n")
    with pytest.raises(DataError, match=r"dev\.tsv:3: invalid UTF-8"):
        read_glue_split("rte", tmp_path, "dev")
    _rte(tmp_path, [])
    with pytest.raises(DataError, match="no examples"):
        read_glue_split("rte", tmp_path, "dev")


def test_stsb_scores_and_columns_by_name(tmp_path: Path) -> None:
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"
    _write(tmp_path / "STS-B" / "dev.tsv", [header, "0\tg\tf\ty\t0\tn\tn\tA.\tB.\t3.840"])
    [example] = read_glue_split("stsb", tmp_path, "dev")
    assert (example.source, example.target, example.label) == ("stsb sentence1: A. sentence2: B.", "3.8", 3.84)
    _write(tmp_path / "STS-B" / "dev.tsv", [header, "0\tg\tf\ty\t0\tn\tn\tA.\tB.\thigh"])
    with pytest.raises(DataError, match=r"dev\.tsv:2: score 'high' is not a number"):
        read_glue_split("stsb", tmp_path, "dev")
    _write(tmp_path / "STS-B" / "dev.tsv", [header, "0\tg\tf\ty\t0\tn\tn\tA.\tB.\t5.5"])
    with pytest.raises(DataError, match=r"dev\.tsv:2: score 5\.5 is not in \[0, 5\]"):
        read_glue_split("stsb", tmp_path, "dev")


def test_cola_without_header(tmp_path: Path) -> None:
    _write(tmp_path / "CoLA" / "train.tsv", ["gj04\t1\t\tGood one.", "gj04\t0\t*\tOne bad."])
    examples = read_glue_split("cola", tmp_path, "train")
    assert [(e.target, e.line) for e in examples] == [("acceptable", 1), ("unacceptable", 2)]
    _write(tmp_path / "CoLA" / "train.tsv", ["gj04\t1\t\tGood one.", "gj04\t0\tOne bad."])
    with pytest.raises(DataError, match=r"train\.tsv:2: expected 4 tab-separated fields, found 3"):
        read_glue_split("cola", tmp_path, "train")


def test_mnli_qqp_wnli_official_layouts(tmp_path: Path) -> None:
    mnli_header = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse"
                   "\tsentence2_parse\tsentence1\tsentence2\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label")
    row = "0\t1\t1n\tfiction\tx\tx\tx\tx\tThe premise.\tThe hypothesis.\tneutral\tneutral\tneutral\tneutral\tneutral"
    _write(tmp_path / "MNLI" / "dev_matched.tsv", [mnli_header, row + "\tneutral"])
    _write(tmp_path / "MNLI" / "dev_mismatched.tsv", [mnli_header, row + "\tcontradiction"])
    [matched] = read_glue_split("mnli", tmp_path, "dev")
    assert (matched.source, matched.target, matched.label) == (
        "mnli hypothesis: The hypothesis. premise: The premise.", "neutral", 1)
    assert read_glue_split("mnli", tmp_path, "dev_mismatched")[0].label == 2
    _write(tmp_path / "QQP" / "train.tsv", ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate",
                                             '5\t11\t12\tWhy "so?\tHow so?\t1'])
    [qqp] = read_glue_split("qqp", tmp_path, "train")
    assert (qqp.source, qqp.target) == ('qqp question1: Why "so? question2: How so?', "duplicate")
    _write(tmp_path / "WNLI" / "dev.tsv", ["index\tsentence1\tsentence2\tlabel", "0\tA.\tB.\t1", "1\tC.\tD.\t0"])
    assert [e.target for e in read_glue_split("wnli", tmp_path, "dev")] == ["entailment", "not_entailment"]


# ---- SuperGLUE JSONL ----

def _jsonl(path: Path, rows: list[object]) -> None:
    _write(path, [json.dumps(row) for row in rows])


def test_superglue_jsonl(tmp_path: Path) -> None:
    _jsonl(tmp_path / "BoolQ" / "val.jsonl", [{"question": "is it", "passage": "It is.", "idx": 0, "label": True}])
    _jsonl(tmp_path / "CB" / "train.jsonl", [{"premise": "P", "hypothesis": "H", "label": "contradiction", "idx": 0}])
    _jsonl(tmp_path / "WiC" / "val.jsonl", [{"word": "bank", "sentence1": "a bank", "sentence2": "the bank",
                                              "start1": 2, "end1": 6, "start2": 4, "end2": 8, "idx": 0,
                                              "label": False}])
    _jsonl(tmp_path / "COPA" / "val.jsonl", [{"premise": "It rained.", "choice1": "Wet.", "choice2": "Dry.",
                                               "question": "effect", "idx": 0, "label": 0}])
    assert read_glue_split("boolq", tmp_path, "dev") == [
        TextToTextExample("boolq", "boolq passage: It is. question: is it", "True", 1, 1)]
    cb = read_glue_split("cb", tmp_path, "train")[0]
    assert (cb.source, cb.target, cb.label) == ("cb hypothesis: H premise: P", "contradiction", 1)
    wic = read_glue_split("wic", tmp_path, "val")[0]
    assert (wic.source, wic.target) == ("wic sentence1: a bank sentence2: the bank word: bank", "False")
    copa = read_glue_split("copa", tmp_path, "dev")[0]
    assert (copa.source, copa.target) == (
        "copa choice1: Wet. choice2: Dry. premise: It rained. question: effect", "choice1")


def test_superglue_jsonl_errors(tmp_path: Path) -> None:
    path = tmp_path / "CB" / "val.jsonl"
    _write(path, ['{"premise": "P", "hypothesis": "H", "label": "neutral"}', '{"premise": "P", '])
    with pytest.raises(DataError, match=r"CB/val\.jsonl:2: invalid JSON"):
        read_glue_split("cb", tmp_path, "dev")
    _jsonl(path, [{"premise": "P", "hypothesis": "H", "label": "maybe"}])
    with pytest.raises(DataError, match=r"val\.jsonl:1: label 'maybe' is not a class of cb"):
        read_glue_split("cb", tmp_path, "dev")
    _jsonl(path, [{"premise": "P", "label": "neutral"}])
    with pytest.raises(DataError, match=r"val\.jsonl:1: missing field 'hypothesis'"):
        read_glue_split("cb", tmp_path, "dev")
    _jsonl(path, [{"premise": "P", "hypothesis": "H", "label": True}])  # a bool is no CB class
    with pytest.raises(DataError, match="not a class of cb"):
        read_glue_split("cb", tmp_path, "dev")


# ---- Hugging Face (no network: load_dataset is replaced by a local datasets.Dataset) ----

@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    datasets = pytest.importorskip("datasets")
    datasets.disable_progress_bars()
    calls: dict[str, object] = {"rows": {}}

    def load_dataset(path: str, name: str, *, split: str, **kwargs: object) -> object:
        calls.update(path=path, name=name, split=split, kwargs=kwargs)
        return datasets.Dataset.from_dict(calls["rows"])

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls


def test_hf_rte_and_mnli_splits(fake_hub: dict[str, object]) -> None:
    fake_hub["rows"] = {"sentence1": ["A.", "B."], "sentence2": ["C.", "D."], "label": [0, 1], "idx": [0, 1]}
    examples = load_hf_glue("rte", "dev", cache_dir="/nowhere")
    assert (fake_hub["path"], fake_hub["name"], fake_hub["split"]) == ("glue", "rte", "validation")
    assert fake_hub["kwargs"] == {"cache_dir": "/nowhere"}
    assert examples == [TextToTextExample("rte", "rte sentence1: A. sentence2: C.", "entailment", 0, 1),
                        TextToTextExample("rte", "rte sentence1: B. sentence2: D.", "not_entailment", 1, 2)]
    fake_hub["rows"] = {"premise": ["P."], "hypothesis": ["H."], "label": [2], "idx": [0]}
    assert load_hf_glue("mnli", "dev")[0].target == "contradiction"
    assert fake_hub["split"] == "validation_matched"
    load_hf_glue("mnli", "dev_mismatched", path="nyu-mll/glue")
    assert (fake_hub["path"], fake_hub["split"]) == ("nyu-mll/glue", "validation_mismatched")


def test_hf_stsb_and_superglue(fake_hub: dict[str, object]) -> None:
    fake_hub["rows"] = {"sentence1": ["A."], "sentence2": ["B."], "label": [3.84], "idx": [0]}
    [stsb] = load_hf_glue("stsb", "train")
    assert (stsb.target, stsb.label, fake_hub["split"]) == ("3.8", pytest.approx(3.84), "train")
    fake_hub["rows"] = {"question": ["q"], "passage": ["p"], "label": [1], "idx": [0]}
    [boolq] = load_hf_glue("boolq", "dev")
    assert (fake_hub["path"], fake_hub["name"]) == ("super_glue", "boolq")
    assert (boolq.source, boolq.target) == ("boolq passage: p question: q", "True")


def test_hf_test_split_and_bad_rows(fake_hub: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="no public labels"):
        load_hf_glue("rte", "test")
    fake_hub["rows"] = {"sentence1": ["A.", "B."], "sentence2": ["C.", "D."], "label": [0, -1], "idx": [0, 1]}
    with pytest.raises(DataError, match=r"glue/rte\[train\]:2: label -1: this split has no public labels"):
        load_hf_glue("rte", "train")
    fake_hub["rows"] = {"sentence1": ["A."], "sentence2": [""], "label": [0], "idx": [0]}
    with pytest.raises(DataError, match=r"glue/rte\[train\]:1: empty text in field 'sentence2'"):
        load_hf_glue("rte", "train")
    fake_hub["rows"] = {"sentence": ["A."], "label": [0]}
    with pytest.raises(DataError, match=r"glue/rte\[train\]:1: missing field 'sentence1'"):
        load_hf_glue("rte", "train")
