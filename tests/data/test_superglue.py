"""SuperGLUE as T5 casts it: MultiRC, ReCoRD, WSC, SuperGLUE's RTE and the diagnostics AX-b / AX-g, read from the
shared official files, from tiny made-up files in the official layout, and from Hugging Face ``super_glue`` rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synthformer.data.errors import DataError
from synthformer.tasks.suites.glue.reader import glue_split_path, load_hf_glue, read_glue_split
from synthformer.tasks.suites.glue.superglue import mark_pronoun


@pytest.fixture(scope="module")
def superglue_dir(shared_data: Path) -> Path:
    path = shared_data / "superglue"
    if not path.is_dir():
        pytest.skip("shared SuperGLUE data not available")
    return path


def _jsonl(path: Path, rows: list[object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows),
                    encoding="utf-8")
    return path


# ---- the shared official files ----

@pytest.mark.parametrize(("task", "split", "examples", "groups"), [
    ("multirc", "dev", 4848, 953),      # answer options, questions (official val counts)
    ("wsc", "train", 259, None),        # the 259 correct referents of 554 (T5's correct_referent_only)
    ("wsc", "dev", 104, None),          # every dev example
    ("super_glue_rte", "dev", 277, None),
    ("axb", "dev", 1104, None),
    ("axg", "dev", 356, 178),           # gender-swapped pairs
])
def test_shared_counts(superglue_dir: Path, task: str, split: str, examples: int, groups: int | None) -> None:
    read = read_glue_split(task, superglue_dir, split)
    assert len(read) == examples
    assert (len({e.group for e in read}) if groups else None) == groups


def test_shared_formats(superglue_dir: Path) -> None:
    multirc = read_glue_split("multirc", superglue_dir, "dev")[0]
    assert multirc.source.startswith("multirc question: Would the mass of a baseball affect how much force ")
    assert " answer: No paragraph: What causes a change in motion? " in multirc.source
    assert (multirc.target, multirc.label, multirc.group) == ("False", 0, "0-0")
    wsc = read_glue_split("wsc", superglue_dir, "dev")[1]  # span2 "his" at word 39
    assert wsc.source.startswith("wsc: Mr. Moncrieff visited Chester 's luxurious New York apartment")
    assert "he no longer requires *his* financial support." in wsc.source
    assert (wsc.target, wsc.label) == ("Mr. Moncrieff", 1)
    axb = read_glue_split("axb", superglue_dir, "dev")[0]
    assert axb.source == "rte hypothesis: The cat did not sit on the mat. premise: The cat sat on the mat."
    assert axb.target == "not_entailment"
    rte = read_glue_split("super_glue_rte", superglue_dir, "val")[0]
    assert rte.source.startswith("rte hypothesis: Christopher Reeve had an accident. premise: Dana Reeve, ")
    assert glue_split_path("axg", superglue_dir, "dev") == superglue_dir / "AX-g" / "AX-g.jsonl"
    with pytest.raises(ValueError, match="axg: a diagnostic set has no training split"):
        read_glue_split("axg", superglue_dir, "train")


# ---- tiny made-up files in the official layout ----

MULTIRC = {"idx": 7, "version": 1.1, "passage": {"text": "Ann<br>ran <b>home</b>.", "questions": [
    {"question": "Who ran?", "idx": 3, "answers": [{"text": "Ann", "idx": 0, "label": 1},
                                                   {"text": "Bob", "idx": 1, "label": 0}]},
    {"question": "Where?", "idx": 4, "answers": [{"text": "", "idx": 2, "label": 0}]}]}}


def test_multirc_one_example_per_answer_option(tmp_path: Path) -> None:
    _jsonl(tmp_path / "MultiRC" / "train.jsonl", [MULTIRC])
    read = read_glue_split("multirc", tmp_path, "train")
    assert [(e.target, e.label, e.group, e.line) for e in read] == [
        ("True", 1, "7-3", 1), ("False", 0, "7-3", 1), ("False", 0, "7-4", 1)]
    assert read[0].source == "multirc question: Who ran? answer: Ann paragraph: Ann ran home."  # HTML removed


RECORD = {"idx": 2, "source": "Daily mail", "passage": {
    "text": "Tom met Ann in Paris.\n@highlight\nAnn likes Paris\n@highlight\nTom left",
    "entities": [{"start": 0, "end": 2}, {"start": 8, "end": 10}, {"start": 15, "end": 19}, {"start": 0, "end": 2}]},
    "qas": [{"query": "@placeholder is in France.", "idx": 5,
             "answers": [{"start": 15, "end": 19, "text": "Paris"}, {"start": 15, "end": 19, "text": "Paris"}]},
            {"query": "@placeholder met Ann.", "idx": 6,
             "answers": [{"start": 0, "end": 2, "text": "Tom"}, {"start": 8, "end": 10, "text": "Ann"}]}]}


def test_record_official_layout(tmp_path: Path) -> None:
    _jsonl(tmp_path / "ReCoRD" / "train.jsonl", [RECORD])
    _jsonl(tmp_path / "ReCoRD" / "val.jsonl", [RECORD])
    train = read_glue_split("record", tmp_path, "train")
    # entities: the distinct span texts, sorted; @highlight lines become sentences
    assert train[0].source == ("record query: @placeholder is in France. entities: Ann, Paris, Tom passage: "
                               "Tom met Ann in Paris. Ann likes Paris. Tom left")
    assert [(e.target, e.group) for e in train] == [("Paris", "2-5"), ("Ann", "2-6"), ("Tom", "2-6")]  # per answer
    dev = read_glue_split("record", tmp_path, "dev")
    assert [(e.target, e.answers) for e in dev] == [("Paris", ("Paris",)), ("Ann", ("Ann", "Tom"))]  # per query


def test_wsc_official_layout_and_marking(tmp_path: Path) -> None:
    rows = [{"text": "Ann told Bea that she won.", "target": {"span1_index": 0, "span1_text": "Ann",
                                                              "span2_index": 3, "span2_text": "she"},
             "idx": 0, "label": True},
            {"text": "Ann told Bea that she won.", "target": {"span1_index": 2, "span1_text": "Bea",
                                                              "span2_index": 3, "span2_text": "she"},
             "idx": 1, "label": False}]
    _jsonl(tmp_path / "WSC" / "train.jsonl", rows)
    _jsonl(tmp_path / "WSC" / "val.jsonl", rows)
    [train] = read_glue_split("wsc", tmp_path, "train")  # only the correct referent is trained on
    assert (train.source, train.target, train.label) == ("wsc: Ann told Bea that *she* won.", "Ann", 1)
    assert [(e.target, e.label) for e in read_glue_split("wsc", tmp_path, "dev")] == [("Ann", 1), ("Bea", 0)]
    # punctuation glued to the pronoun stays outside the mark; an index one off finds the nearest occurrence
    assert mark_pronoun('"Good for him," he said.', "him", 2, "f", 1) == '"Good for *him* ," he said.'
    assert mark_pronoun("they might use it , but", "it", 2, "f", 1) == "they might use *it* , but"


def test_axb_and_axg_are_cast_as_rte(tmp_path: Path) -> None:
    _jsonl(tmp_path / "AX-b" / "AX-b.jsonl", [{"sentence1": "P.", "sentence2": "H.", "label": "entailment",
                                               "idx": "0", "logic": "Negation"}])
    [axb] = read_glue_split("axb", tmp_path, "dev")
    assert (axb.source, axb.target) == ("rte hypothesis: H. premise: P.", "entailment")
    rows = [{"premise": f"He {i}.", "hypothesis": f"H{i // 2}.", "label": "not_entailment", "idx": i, "pair_id": i}
            for i in range(4)]
    _jsonl(tmp_path / "AX-g" / "AX-g.jsonl", rows)
    assert [e.group for e in read_glue_split("axg", tmp_path, "dev")] == ["pair0", "pair0", "pair1", "pair1"]


@pytest.mark.parametrize(("task", "folder", "rows", "message"), [
    ("multirc", "MultiRC", [MULTIRC, {"idx": 8, "version": 1.1}], r"MultiRC/val\.jsonl:2: missing field 'passage'"),
    ("multirc", "MultiRC", [MULTIRC, '{"idx": 8,'], r"MultiRC/val\.jsonl:2: invalid JSON"),
    ("multirc", "MultiRC", [{**MULTIRC, "passage": {"text": "T", "questions": [
        {"question": "Q", "idx": 0, "answers": [{"text": "A", "idx": 0, "label": 2}]}]}}],
     r"val\.jsonl:1: label 2 is not a truth value"),
    ("record", "ReCoRD", [{**RECORD, "passage": {"text": "Tom", "entities": [{"start": 0, "end": 3}]}}],
     r"ReCoRD/val\.jsonl:1: entities: .* is no span of the passage"),
    ("record", "ReCoRD", [{**RECORD, "qas": [{"query": "Who?", "idx": 0, "answers": [{"text": "Tom"}]}]}],
     r"val\.jsonl:1: query 'Who\?' has no '@placeholder'"),
    ("record", "ReCoRD", [{**RECORD, "qas": [{"query": "@placeholder left", "idx": 0}]}],
     r"val\.jsonl:1: a query without answers"),
    ("wsc", "WSC", [{"text": "Ann won.", "target": {"span1_index": 0, "span1_text": "Ann", "span2_index": 1,
                                                    "span2_text": "she"}, "idx": 0, "label": True}],
     r"WSC/val\.jsonl:1: span2_text 'she' is not a word of the text"),
    ("wsc", "WSC", [{"text": "Ann won.", "idx": 0, "label": True}], r"val\.jsonl:1: missing field 'target'"),
])
def test_malformed_lines_are_located(tmp_path: Path, task: str, folder: str, rows: list[object],
                                     message: str) -> None:
    _jsonl(tmp_path / folder / "val.jsonl", rows)
    with pytest.raises(DataError, match=message):
        read_glue_split(task, tmp_path, "dev")


def test_axg_pairs_must_share_their_hypothesis(tmp_path: Path) -> None:
    rows = [{"premise": "He ran.", "hypothesis": h, "label": "entailment", "idx": i, "pair_id": i}
            for i, h in enumerate(["A.", "B."])]
    _jsonl(tmp_path / "AX-g" / "AX-g.jsonl", rows)
    with pytest.raises(DataError, match=r"AX-g\.jsonl:2: hypothesis differs from the line before"):
        read_glue_split("axg", tmp_path, "dev")


# ---- Hugging Face super_glue layout (no network: load_dataset is replaced by local rows) ----

@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    datasets = pytest.importorskip("datasets")
    datasets.disable_progress_bars()
    calls: dict[str, object] = {"rows": []}

    def load_dataset(path: str, name: str, *, split: str, **kwargs: object) -> object:
        calls.update(path=path, name=name, split=split)
        return calls["rows"]  # a list of dicts iterates like a Dataset

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls


def test_hf_layouts(fake_hub: dict[str, object]) -> None:
    fake_hub["rows"] = [{"paragraph": "P.", "question": "Q?", "answer": "A", "label": 1,
                         "idx": {"paragraph": 0, "question": 1, "answer": 2}}]
    [multirc] = load_hf_glue("multirc", "dev")
    assert (multirc.source, multirc.group, fake_hub["split"]) == (
        "multirc question: Q? answer: A paragraph: P.", "0-1", "validation")
    fake_hub["rows"] = [{"passage": "Tom ran.\n@highlight\nAnn", "query": "@placeholder ran.",
                         "entities": ["Ann", "Tom"], "entity_spans": {}, "answers": ["Tom"],
                         "idx": {"passage": 0, "query": 3}}]
    [record] = load_hf_glue("record", "dev")
    assert (record.source, record.target, record.group) == (
        "record query: @placeholder ran. entities: Ann, Tom passage: Tom ran. Ann", "Tom", "0-3")
    fake_hub["rows"] = [{"text": "Ann said she won.", "span1_index": 0, "span2_index": 2, "span1_text": "Ann",
                         "span2_text": "she", "idx": 0, "label": 1}]
    [wsc] = load_hf_glue("wsc", "train")
    assert (fake_hub["name"], wsc.source, wsc.target) == ("wsc.fixed", "wsc: Ann said *she* won.", "Ann")
    fake_hub["rows"] = [{"sentence1": "P.", "sentence2": "H.", "label": 1, "idx": 0}]
    [axb] = load_hf_glue("axb", "dev")  # the diagnostics' labelled rows are HF's test split
    assert (fake_hub["split"], axb.source, axb.target) == ("test", "rte hypothesis: H. premise: P.", "not_entailment")
    fake_hub["rows"] = [{"paragraph": "P.", "question": "Q?", "answer": "A", "label": -1,
                         "idx": {"paragraph": 0, "question": 1, "answer": 2}}]
    with pytest.raises(DataError, match=r"super_glue/multirc\[train\]:1: label -1"):
        load_hf_glue("multirc", "train")
