"""Evaluation shared by 2 processes (torchrun, gloo) gives the one-process metrics: each process scores its part
of the same sample and the sums and decoded hypotheses are gathered (synthformer.train.sharding)."""

from __future__ import annotations

import json

import pytest

from synthformer.train.sharding import EvalShard
from tests.two_processes import ONE_LAUNCH


def test_shard_parts_cover_the_sample_in_order():
    items = list(range(9))
    parts = [list(EvalShard(r, 2).part(items)) for r in (0, 1)]
    assert parts == [[0, 1, 2, 3], [4, 5, 6, 7, 8]]  # contiguous, in order, sizes differing by at most one
    assert [len(EvalShard(r, 4).part(range(2))) for r in range(4)] == [0, 1, 0, 1]  # a process may get nothing
    whole = EvalShard()
    assert whole.part(items) is items and whole.sum(1.5, 2) == (1.5, 2) and whole.concat(["a"]) == ["a"]
    with pytest.raises(ValueError, match="rank 2 of world_size 2"):
        EvalShard(2, 2)
    # the trainer passes its shard to eval functions that take one (the pipeline's), others run as before
    from synthformer.tasks.run.evaluation import EvalFn
    from synthformer.train.sharding import accepts_shard

    assert accepts_shard(EvalFn(lambda model, shard: {})) and accepts_shard(lambda model, **kw: {})
    assert not accepts_shard(lambda model: {}) and not accepts_shard(print)


@ONE_LAUNCH
def test_two_processes_evaluate_like_one(two_processes, tmp_path):
    job = two_processes.root / "sharded_eval"  # sharded_eval_script.py's job in the suite's one torchrun launch
    ranks = [json.loads((job / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0] == ranks[1]  # every process ends with the metrics of the whole sample

    from tests.tasks.sharded_eval_script import evaluate_all

    (tmp_path / "one").mkdir()
    one = evaluate_all(tmp_path / "one", EvalShard())
    two = ranks[0]
    # the same sample: the same counts, exactly
    assert two["lm"]["tokens"] == one["lm"]["tokens"] == 9 * 16  # 3 batches of 3 blocks of 16 tokens
    assert two["seq2seq"]["decoded"] == one["seq2seq"]["decoded"] == 7
    # the same decoded outputs, in order, hence the same BLEU / chrF / exact match
    assert two["hypotheses"] == one["hypotheses"] and len(one["hypotheses"]) == 7 and any(one["hypotheses"])
    for name in ("bleu", "chrf", "exact_match"):
        assert two["seq2seq"][name] == pytest.approx(one["seq2seq"][name], abs=1e-9), name
    # losses: the same sums in another order (float32 forward passes over other batch compositions)
    for task in ("lm", "seq2seq"):
        assert two[task]["loss"] == pytest.approx(one[task]["loss"], rel=1e-5), task
    assert two["lm"]["bits_per_character"] == pytest.approx(one["lm"]["bits_per_character"], rel=1e-5)


def test_trainer_eval_sample_is_the_one_process_sample():
    """The trainer's own eval loss (``eval_data``) scores the first ``eval_steps x batch_size`` examples (or
    batches of an iterable), whatever the number of processes that then share them."""
    from synthformer.train.evaluation import eval_sample
    from synthformer.train.loader import eval_batches

    data = list(range(20))
    sample = eval_sample(data, eval_steps=2, batch_size=3)
    assert list(sample) == list(range(6)) and eval_sample(data, 0, 3) is data and eval_sample(data, 9, 3) is data
    parts = [sorted(int(x) for b in eval_batches(sample, batch_size=3, rank=r, world_size=2) for x in b)
             for r in (0, 1)]
    assert sorted(parts[0] + parts[1]) == list(range(6)) and not set(parts[0]) & set(parts[1])

    class Batches:  # an iterable of ready batches (no __len__): its first eval_steps batches, on every pass
        def __iter__(self):
            return iter([{"x": i} for i in range(5)])

    limited = eval_sample(Batches(), eval_steps=2, batch_size=3)
    assert [b["x"] for b in limited] == [0, 1] and [b["x"] for b in limited] == [0, 1]


@pytest.mark.parametrize(("eval_batch", "world", "expected"), [(None, 1, 3), (None, 2, 6), (5, 2, 3)])
def test_the_sample_is_counted_in_global_batches_unless_eval_batch_size_fixes_it(monkeypatch, eval_batch, world,
                                                                                  expected):
    """Without ``eval.batch_size`` the periodic sample is ``eval_steps`` global batches (per-process
    ``train.batch_size`` x processes): 1 x 8 and 2 x 4 score the same examples, the case issue 32 measured (2
    processes reported half the one-process eval_tokens); an explicit ``eval.batch_size`` fixes it for any N."""
    from types import SimpleNamespace

    from synthformer.tasks.run import evaluation

    seen = {}

    def fake_split(run, data, model, split, **kwargs):
        seen.update(kwargs)
        return {}, []

    monkeypatch.setattr(evaluation, "evaluate_split", fake_split)
    task_type = SimpleNamespace(training_evaluation=lambda run: (["loss"], None, None))
    run = SimpleNamespace(task=SimpleNamespace(task_type=task_type), train=SimpleNamespace(eval_steps=3),
                          eval=SimpleNamespace(batch_size=eval_batch))
    shard = EvalShard(0, world)
    evaluation.make_eval_fn(run, data=None)(None, shard=shard)
    assert seen["max_batches"] == expected and seen["shard"] is shard
