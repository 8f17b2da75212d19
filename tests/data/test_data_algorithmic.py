"""Algorithmic seq2seq tasks: correct targets, bounds, reproducibility."""

from __future__ import annotations

import pytest

from synthformer.tasks.suites.probes import (
    ALGORITHMIC_TASKS,
    algorithmic_tokenizer,
    generate_algorithmic,
    solve_algorithmic,
)


@pytest.mark.parametrize("task", ALGORITHMIC_TASKS)
def test_targets_are_correct(task: str) -> None:
    pairs = generate_algorithmic(task, 200, min_len=1, max_len=8, seed=0)
    assert len(pairs) == 200
    for src, tgt, _ in pairs:
        if task == "add":
            left, right = src.split("+")
            assert 1 <= len(left) <= 8 and 1 <= len(right) <= 8
            assert left == str(int(left)) and right == str(int(right))  # no leading zeros
            assert int(tgt) == int(left) + int(right)
        else:
            assert 1 <= len(src) <= 8 and src.isdigit()
            expected = {"copy": src, "reverse": src[::-1], "sort": "".join(sorted(src))}[task]
            assert tgt == expected
    assert len({p.source for p in pairs}) > 100  # not degenerate


def test_reproducible_and_seed_dependent() -> None:
    a = generate_algorithmic("reverse", 50, seed=3)
    assert a == generate_algorithmic("reverse", 50, seed=3)
    assert a != generate_algorithmic("reverse", 50, seed=4)


def test_tokenizer_covers_tasks() -> None:
    tok = algorithmic_tokenizer()
    assert tok.vocab_size == 15
    for task in ALGORITHMIC_TASKS:
        for src, tgt, _ in generate_algorithmic(task, 20, seed=1):
            assert tok.unk_id not in tok.encode(src) + tok.encode(tgt)
            assert tok.decode(tok.encode(src)) == src


def test_errors() -> None:
    with pytest.raises(ValueError, match="copy, reverse, sort, add"):
        generate_algorithmic("multiply", 1)
    with pytest.raises(ValueError):
        generate_algorithmic("copy", 1, min_len=5, max_len=2)
    with pytest.raises(ValueError):
        solve_algorithmic("add", "12-3")
