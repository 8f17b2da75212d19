"""ListOps: the evaluator against hand computations and the LRA sample, generator bounds, the file format."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from synthformer.data import DataError
from synthformer.tasks.suites.lra import (
    evaluate_source,
    generate_listops,
    listops_tokenizer,
    read_listops_tsv,
    tokenize_source,
    write_listops_splits,
    write_listops_tsv,
)
from synthformer.tasks.suites.lra.listops import (
    LISTOPS_VOCAB,
    ListOpsExample,
    ListOpsNode,
    apply_operator,
    evaluate,
    expression_depth,
    expression_length,
    generate_expression,
    parse_source,
    to_source,
)

SMALL = {"min_length": 10, "max_length": 60, "max_depth": 4, "max_args": 5}


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("[MAX 2 9 4 ]", 9),
        ("[MIN 2 9 4 ]", 2),
        ("[SM 7 8 9 ]", 4),  # 24 mod 10
        ("[MED 1 9 4 ]", 4),  # odd count: middle value
        ("[MED 1 2 5 9 ]", 3),  # even count: floor of the mean of 2 and 5
        ("[MED 0 1 ]", 0),  # floor(0.5)
        ("[MAX 2 [SM 4 9 ] ]", 3),
        ("[MIN [MAX 1 8 ] [MED 3 7 6 ] [SM 5 5 ] 9 ]", 0),
        ("7", 7),
    ],
)
def test_evaluator_by_hand(source: str, value: int) -> None:
    assert evaluate_source(source) == value
    assert evaluate(parse_source(source)) == value


@pytest.mark.parametrize("bad", ["[MAX 1 2", "[MAX 1 2 ] ]", "1 2", "[FOO 1 ]", "[MAX 1 ] 3", ""])
def test_evaluator_rejects_malformed(bad: str) -> None:
    with pytest.raises(ValueError):
        evaluate_source(bad)


def test_median_against_statistics() -> None:
    rng = random.Random(3)
    for _ in range(200):
        values = [rng.randrange(10) for _ in range(rng.randint(1, 10))]
        s = sorted(values)
        m = len(s) // 2
        expected = s[m] if len(s) % 2 else (s[m - 1] + s[m]) // 2
        assert apply_operator("[MED", values) == expected


def test_lra_text_format() -> None:
    expr = ListOpsNode("[MAX", (2, ListOpsNode("[SM", (4, 9))))
    assert to_source(expr) == "( ( ( [MAX 2 ) ( ( ( [SM 4 ) 9 ) ] ) ) ] )"
    assert tokenize_source(to_source(expr)) == ["[MAX", "2", "[SM", "4", "9", "]", "]"]
    assert parse_source(to_source(expr)) == expr
    assert expression_length(expr) == 7 and expression_depth(expr) == 3


def test_evaluator_agrees_with_lra_sample(shared_data: Path) -> None:
    folder = shared_data / "lra_listops_sample"
    if not folder.is_dir():
        pytest.skip("lra_listops_sample not available")
    for split in ("val", "test"):
        examples = read_listops_tsv(folder / f"basic_{split}.tsv")
        assert len(examples) == 200
        for ex in examples:
            assert evaluate_source(ex.source) == ex.target
            # our writer reproduces LRA's text exactly
            assert to_source(parse_source(ex.source)) == ex.source


def test_generated_examples_respect_bounds() -> None:
    examples = generate_listops(300, seed=0, **SMALL)
    assert len(examples) == 300
    for ex in examples:
        expr = parse_source(ex.source)
        assert 10 <= len(tokenize_source(ex.source)) == expression_length(expr) <= 60
        assert expression_depth(expr) <= 4
        assert isinstance(expr, ListOpsNode)  # the root is always an operator

        def arity_ok(e: object) -> bool:
            return not isinstance(e, ListOpsNode) or (2 <= len(e.args) <= 5 and all(map(arity_ok, e.args)))

        assert arity_ok(expr)
        assert evaluate_source(ex.source) == ex.target
    assert set(Counter(ex.target for ex in examples)) == set(range(10))  # every label occurs


def test_lra_default_lengths() -> None:
    examples = generate_listops(3, seed=1)  # LRA defaults: 500-2000 tokens, depth 10, 10 args
    for ex in examples:
        expr = parse_source(ex.source)
        assert 500 <= expression_length(expr) <= 2000
        assert expression_depth(expr) <= 10


def test_seeded_generation_is_reproducible() -> None:
    a = generate_listops(20, seed=7, **SMALL)
    state = random.getstate()
    b = generate_listops(20, seed=7, **SMALL)
    assert random.getstate() == state  # the global RNG is untouched
    assert a == b
    assert a != generate_listops(20, seed=8, **SMALL)


def test_generator_validates_bounds() -> None:
    with pytest.raises(ValueError, match="no expression"):
        generate_listops(1, min_length=10_000, max_length=20_000, max_depth=3, max_args=3)
    with pytest.raises(ValueError):
        generate_listops(1, min_length=50, max_length=40)
    with pytest.raises(OverflowError):
        generate_expression(random.Random(0), max_depth=10, max_args=10, leaf_prob=0.0, max_length=50)


def test_tsv_round_trip_and_tokenizer(tmp_path: Path) -> None:
    examples = generate_listops(25, seed=2, **SMALL)
    path = write_listops_tsv(examples, tmp_path / "basic_train.tsv")
    raw = path.read_bytes()
    assert raw.startswith(b"Source\tTarget\r\n") and raw.count(b"\r\n") == 26
    assert read_listops_tsv(path, check_targets=True) == examples
    tok = listops_tokenizer()
    assert tok.vocab_size == 4 + len(LISTOPS_VOCAB) == 19
    ids = tok.encode(examples[0].source)
    assert tok.unk_id not in ids
    assert tok.decode(ids) == " ".join(tokenize_source(examples[0].source))
    paths = write_listops_splits(tmp_path / "lo", 5, 2, 2, seed=0, **SMALL)
    assert sorted(paths) == ["test", "train", "val"]
    assert len(read_listops_tsv(paths["val"])) == 2


@pytest.mark.parametrize(
    ("content", "line", "words"),
    [
        ("Wrong\tHeader\r\n[MAX 1 2 ]\t2\r\n", 1, "header"),
        ("Source\tTarget\r\n[MAX 1 2 ]\t2\r\n[MAX 1 2 ]\r\n", 3, "2 tab-separated columns"),
        ("Source\tTarget\r\n[MAX 1 2 ]\t12\r\n", 2, "digit 0-9"),
        ("Source\tTarget\r\n[MAX 1 2 ]\t2\r\n[MIN 1 2 ]\t2\r\n", 3, "evaluates to 1"),
        ("Source\tTarget\r\n[MAX 1 2\t2\r\n", 2, "invalid ListOps expression"),
        ("Source\tTarget\r\n", 1, "no examples"),
    ],
)
def test_tsv_errors(tmp_path: Path, content: str, line: int, words: str) -> None:
    path = tmp_path / "basic_bad.tsv"
    path.write_bytes(content.encode())
    with pytest.raises(DataError) as info:
        read_listops_tsv(path, check_targets=True)
    assert f"basic_bad.tsv:{line}:" in str(info.value)
    assert words in str(info.value)


def test_listops_example_is_classification_record() -> None:
    ex = ListOpsExample("( ( [MAX 3 ) ] )", 3)
    text, label = ex
    assert text.startswith("(") and label == 3
