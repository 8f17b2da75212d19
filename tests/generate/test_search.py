"""Greedy and beam search for the encoder-decoder."""

from __future__ import annotations

import functools
import itertools
import math

import pytest
import torch

from synthformer.generate import beam_search, beam_search_loop, gnmt_length_penalty, greedy_search
from tests.models.helpers import BATCHES, EOS, PAD, tiny_model, train

#: every test of the module in one xdist worker: the trained models are cached per process (``_train_once``, about
#: 2 s of CPU each), so spread over the workers each trained its own copies of the same three models
pytestmark = pytest.mark.xdist_group("search-models")


def _trained(kind: str = "V", ffn: str = "relu"):
    """A seq2seq model trained briefly on the copy task: its outputs depend on the source and end with <eos>
    at different lengths, so the search loops meet both ends (an <eos>, the length limit). Trained once per
    process and kind (``_trained()`` and ``_trained("V")`` are the same model; tests put it back in eval mode)."""
    return _train_once(kind, ffn)


@functools.cache
def _train_once(kind: str, ffn: str):
    model = tiny_model("seq2seq", decoder_kind=kind, ffn=ffn)
    train(model, "seq2seq", steps=120, lr=1e-2)
    return model.eval()


def _src(batch: int = 8, seed: int = 99) -> tuple[torch.Tensor, torch.Tensor]:
    b = BATCHES["seq2seq"](torch.Generator().manual_seed(seed), batch=batch)
    return b["src_ids"], b["src_padding_mask"]


def test_gnmt_length_penalty():
    assert gnmt_length_penalty(1, 0.6) == pytest.approx(1.0)
    assert gnmt_length_penalty(7, 0.6) == pytest.approx(2.0**0.6)
    assert gnmt_length_penalty(30, 0.0) == 1.0


@pytest.mark.parametrize("kind", ["V", "R+V"])
def test_beam_one_equals_greedy(kind):
    model = _trained(kind)
    src, mask = _src()
    greedy = greedy_search(model, src, mask, max_new_tokens=7)
    beam = beam_search(model, src, mask, beam_size=1, max_new_tokens=7)
    assert torch.equal(greedy.tokens, beam.tokens)
    assert torch.equal(greedy.lengths, beam.lengths)
    ended = greedy.tokens[torch.arange(8), greedy.lengths - 1] == EOS
    assert ended.any() and (~ended).any(), "the test should exercise both <eos> and the length limit"
    # beam scores are length-normalized log-probabilities
    penalty = gnmt_length_penalty(greedy.lengths.float(), 0.6)
    torch.testing.assert_close(beam.scores, greedy.scores / penalty)


def test_greedy_output_format():
    out = greedy_search(_trained(), *_src(), max_new_tokens=7)
    assert (out.lengths < 7).any()
    for row, n in zip(out.tokens.tolist(), out.lengths.tolist(), strict=True):
        assert EOS not in row[: n - 1]  # a sequence stops at its first <eos>
        assert n == 7 or row[n - 1] == EOS
        assert all(t == PAD for t in row[n:])
    assert out.to_lists(strip_eos=EOS)[0] == [t for t in out.tokens[0, : out.lengths[0]].tolist() if t != EOS]


@pytest.mark.parametrize("decode", ["greedy", "beam"])
def test_cached_and_recomputed_decoding_agree(decode):
    model = _trained("D+V", "conv_relu")
    assert model.supports_cache
    src, mask = _src()
    if decode == "greedy":
        a, b = (greedy_search(model, src, mask, max_new_tokens=9, use_cache=c) for c in (True, False))
    else:
        a, b = (beam_search(model, src, mask, beam_size=3, max_new_tokens=9, use_cache=c) for c in (True, False))
    assert torch.equal(a.tokens, b.tokens)
    torch.testing.assert_close(a.scores, b.scores, atol=1e-5, rtol=0)


def test_beam_search_is_batch_independent():
    model = _trained("R+V")
    src, mask = _src()
    together = beam_search(model, src, mask, beam_size=4, max_new_tokens=9)
    for i in range(src.shape[0]):
        n_src = int((~mask[i]).sum())
        alone = beam_search(model, src[i : i + 1, :n_src], beam_size=4, max_new_tokens=9)  # no padding at all
        n = int(alone.lengths[0])
        assert together.lengths[i] == n
        assert together.tokens[i, :n].tolist() == alone.tokens[0, :n].tolist()
        assert together.scores[i].item() == pytest.approx(alone.scores[0].item(), abs=1e-5)


def test_beam_search_runs_in_eval_mode_and_restores_training_mode():
    model = _trained()  # the other tests' model (cached): any trained model shows the mode switch
    src, mask = _src()
    model.eval()
    in_eval = beam_search(model, src, mask, beam_size=4)
    model.train()
    try:
        out = beam_search(model, src, mask, beam_size=4)
        assert model.training  # restored after the call
    finally:
        model.eval()  # as the cache hands it to the other tests
    # a model left in training mode decodes exactly as in eval mode (this tiny model has no dropout, so the check
    # is on the mode switch and determinism; how many rows are exact copies depends on the short training run,
    # which differed across installs, not on the search)
    assert out.to_lists() == in_eval.to_lists()
    torch.testing.assert_close(out.scores, in_eval.scores, atol=0, rtol=0)


class TableStepper:
    """A fixed next-token distribution per prefix (vocabulary: 0 = <eos>, 1 = <bos>, 2 = a, 3 = b)."""

    def __init__(self, table: dict[tuple[int, ...], list[float]], rows: int) -> None:
        self.table = table
        self.calls = 0

    def __call__(self, tokens: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        rows = [self.table.get(tuple(t[1:]), self.table["default"]) for t in tokens.tolist()]
        return torch.tensor(rows).log()

    def select(self, index: torch.Tensor) -> None:
        pass  # the table reads the whole prefix: no state to move


# P(next | prefix); BOS never follows
TOY = {
    (): [0.38, 1e-9, 0.60, 0.02],  # "<eos>" now, or "a"
    (2,): [0.60, 1e-9, 0.30, 0.10],  # after "a": "<eos>"
    (3,): [0.50, 1e-9, 0.25, 0.25],
    "default": [0.40, 1e-9, 0.30, 0.30],
}


def test_beam_search_length_penalty_on_a_hand_checked_toy():
    # the two finished hypotheses: "<eos>" (log 0.38, 1 token) and "a <eos>" (log 0.6 + log 0.6, 2 tokens)
    short, long = math.log(0.38), 2 * math.log(0.6)
    assert short > long  # by log-probability alone the empty output wins ...
    assert short / gnmt_length_penalty(1, 0.6) < long / gnmt_length_penalty(2, 0.6)  # ... normalized, "a" wins
    run = lambda alpha: beam_search_loop(TableStepper(TOY, 2), 1, 1, 0, 0, 2, alpha, 5)  # noqa: E731
    with_penalty, without = run(0.6), run(0.0)
    assert with_penalty.tokens.tolist() == [[2, 0]]
    assert with_penalty.scores.item() == pytest.approx(long / ((5 + 2) / 6) ** 0.6, abs=1e-5)
    assert without.tokens[0, : without.lengths[0]].tolist() == [0]
    assert without.scores.item() == pytest.approx(short, abs=1e-5)


def test_wide_beam_finds_the_exhaustive_optimum():
    # random prefix-dependent distributions over 4 tokens (0 = <eos>, 1 = <bos> never chosen), 3 steps
    g = torch.Generator().manual_seed(5)
    table: dict = {"default": [0.25, 1e-9, 0.375, 0.375]}
    for n in range(3):
        for prefix in itertools.product([2, 3], repeat=n):
            p = torch.rand(4, generator=g)
            p[1] = 1e-9
            table[prefix] = (p / p.sum()).tolist()
    best = max(
        (
            sum(math.log(table[seq[:i]][seq[i]]) for i in range(len(seq))) / gnmt_length_penalty(len(seq), 0.6),
            seq,
        )
        for n in range(1, 4)
        for seq in itertools.chain(
            (p + (0,) for p in itertools.product([2, 3], repeat=n - 1)),  # ended by <eos>
            itertools.product([2, 3], repeat=3) if n == 3 else (),  # cut at the length limit
        )
    )
    out = beam_search_loop(TableStepper(table, 64), 1, 1, 0, 0, 64, 0.6, 3)
    assert tuple(out.tokens[0, : out.lengths[0]].tolist()) == best[1]
    assert out.scores.item() == pytest.approx(best[0], abs=1e-5)


def test_search_argument_errors():
    model, (src, _) = _trained(), _src()
    with pytest.raises(ValueError, match="beam_size must be a positive integer, got 0"):
        beam_search(model, src, beam_size=0)
    with pytest.raises(ValueError, match=r"max_new_tokens must be in \[1, 24\]"):
        greedy_search(model, src, max_new_tokens=25)
    with pytest.raises(ValueError, match="alpha"):
        beam_search(model, src, alpha=-1.0)
    with pytest.raises(ValueError, match="use_cache=True but"):
        model.decoder.layers[0].self_attn.init_cache = None  # a mixer without a cache
        try:
            greedy_search(model, src, use_cache=True)
        finally:
            del model.decoder.layers[0].self_attn.init_cache
