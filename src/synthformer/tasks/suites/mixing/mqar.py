"""``generator: mixing:mqar``: multi-query associative recall in Zoology's form (Arora et al. 2023, "Zoology:
measuring and improving recall in efficient language models"; written here from the paper's description, no code
taken).

A sequence is a context of ``num_pairs`` key-value pairs, then ``num_queries`` queries (None: as many as pairs, as
in Zoology), each a key of the context immediately followed by its value; a causal language model is trained and
scored on those values only (the answer positions). With ``seq_len = 16``, 3 pairs and 3 queries::

    k7 v2  k3 v9  k5 v4  _ k3 v9 _ _ k5 v4 k3 v9 _
    '-- context (2 x num_pairs) --' '---- queries, each key followed by its value ----'
                                          ^^        ^^    ^^   answers

Tokens: ``_`` (the filler between queries, id 0), keys ``k1 .. k<vocab/2 - 1>`` (the first half of the vocabulary)
and values ``v0 .. v<vocab/2 - 1>`` (the second half), as in Zoology. In a sequence the keys are distinct and so
are the values (Zoology draws both without replacement). ``seq_len`` is the model's input length: a sequence has
``seq_len + 1`` tokens (the inputs and the next token of the last).

``num_queries`` up to ``(seq_len + 1 - 2 * num_pairs) // 2`` (the tail full of queries) gives more supervised
positions per sequence at the same difficulty of each lookup: a CPU trains thousands of steps where Zoology trains
on 100,000 examples for 64 epochs.

Two choices differ from Zoology, which asks every key once:

* The queried keys are drawn independently (with replacement) from the context's keys. When every key is asked
  once, a model that only excludes the values already answered is right on 1/D, 1/(D-1), ..., 1 of the D queries
  (0.52 of them for 4 pairs), with no lookup at all: V trained here plateaued at 0.49 answer accuracy with 4 pairs,
  vocabulary 64 (2,000 steps), on exactly that shortcut. With independent queries no context-only strategy beats
  ``1 / num_pairs``.
* The queries' positions among the ``seq_len + 1 - 2 * num_pairs`` places after the context are uniform (every
  placement of the query pairs equally likely), where Zoology draws the gaps from a power law that puts most
  queries close to the context. Uniform placement asks the far lookups as often as the near ones.

Trivial baselines: the best context-free guess (the most frequent training value: about ``2 / vocab_size``), and,
reading the context but not comparing keys, one of the context's values at random (``1 / num_pairs``).
"""

from __future__ import annotations

import random
from typing import Any

from synthformer.common import ConfigError

from .mad_options import check_int, context_free_unigram
from .sequences import MixingBenchmark, MixingSequence, register_benchmark

__all__ = ["FILLER", "MQAR", "generate_mqar", "mqar_vocabulary"]

#: The filler token's id (between the queries).
FILLER = 0
MAX_VOCAB = 1 << 16

_DEFAULTS: dict[str, Any] = dict(vocab_size=8192, seq_len=64, num_pairs=4, num_queries=None, num_train=20000,
                                 num_valid=1000, num_test=1000, seed=0)


def _check(opts: dict[str, Any]) -> dict[str, Any]:
    vocab = check_int("mqar", opts, "vocab_size", 4, MAX_VOCAB)
    if vocab % 2:
        raise ConfigError(f"task.generator_options.vocab_size: expected an even number (keys and values take a half "
                          f"each) for mixing:mqar, got {vocab}")
    pairs = check_int("mqar", opts, "num_pairs", 1)
    seq_len = check_int("mqar", opts, "seq_len", 3)
    if pairs > vocab // 2 - 1:
        raise ConfigError(f"task.generator_options.num_pairs: {pairs} distinct keys need vocab_size >= "
                          f"{2 * pairs + 2}, got vocab_size {vocab}")
    room = (seq_len + 1 - 2 * pairs) // 2  # the most query pairs that fit after the context
    queries = opts["num_queries"]
    queries = pairs if queries is None else check_int("mqar", opts, "num_queries", 1)
    if queries > room:
        raise ConfigError(f"task.generator_options.seq_len: {pairs} pairs and {queries} queries take "
                          f"{2 * pairs + 2 * queries} tokens, so seq_len must be at least "
                          f"{2 * pairs + 2 * queries - 1}, got {seq_len}")
    for key in ("num_train", "num_valid", "num_test", "seed"):
        check_int("mqar", opts, key, 0)
    return {**opts, "num_queries": queries}


def mqar_vocabulary(opts: dict[str, Any]) -> list[str]:
    """``_``, then the keys ``k1 .. k<h-1>``, then the values ``v0 .. v<h-1>`` (``h = vocab_size / 2``)."""
    half = int(opts["vocab_size"]) // 2
    return ["_", *(f"k{i}" for i in range(1, half)), *(f"v{i}" for i in range(half))]


def generate_mqar(n: int, seed: int, opts: dict[str, Any]) -> list[MixingSequence]:
    """``n`` sequences of ``seq_len + 1`` tokens (see the module docstring), reproducibly for ``seed``."""
    half, pairs, total = int(opts["vocab_size"]) // 2, int(opts["num_pairs"]), int(opts["seq_len"]) + 1
    queries = int(opts["num_queries"])
    rng = random.Random(seed)
    free = total - 2 * pairs  # places after the context
    out: list[MixingSequence] = []
    for _ in range(n):
        keys = rng.sample(range(1, half), pairs)
        values = [half + v for v in rng.sample(range(half), pairs)]
        tokens = [token for pair in zip(keys, values, strict=True) for token in pair]
        # the tail is `queries` blocks (2 places each) and `free - 2 * queries` fillers: `free - queries` items, of
        # which the blocks are a uniform choice; the i-th block starts i places after its item index
        starts = sorted(rng.sample(range(free - queries), queries))
        starts = [2 * pairs + s + i for i, s in enumerate(starts)]
        tail = [FILLER] * free
        order = [rng.randrange(pairs) for _ in range(queries)]  # the queried pairs, independently
        answers = []
        for start, which in zip(starts, order, strict=True):
            tail[start - 2 * pairs] = keys[which]
            tail[start - 2 * pairs + 1] = values[which]
            answers.append(start + 1)
        out.append(MixingSequence(tuple(tokens + tail), tuple(answers)))
    return out


MQAR = register_benchmark(MixingBenchmark(
    name="mqar", summary="multi-query associative recall (Zoology): the values of keys asked after the context",
    option_defaults=_DEFAULTS, check=_check, vocabulary=mqar_vocabulary, make=generate_mqar,
    length=lambda opts: int(opts["seq_len"]) + 1, context_free=context_free_unigram))
