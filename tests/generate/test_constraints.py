"""Minimum length and n-gram repetition blocking in greedy and beam search: each changes the output as documented."""

from __future__ import annotations

import pytest
import torch

from synthformer.generate import beam_search, beam_search_loop, greedy_loop, greedy_search
from synthformer.generate.constraints import banned_ngram_tokens
from tests.models.helpers import BATCHES, tiny_model

EOS, BOS, PAD = 0, 1, 1  # the toy vocabulary: 0 = <eos>, 1 = <bos> (never chosen), 2.. = words


class PreferenceStepper:
    """Log-probabilities that do not depend on the prefix: ``<eos>`` first, then token 2, then 3, then 4."""

    def __init__(self, probs: list[float]) -> None:
        self.logp = torch.tensor(probs).log()

    def __call__(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.logp.expand(tokens.shape[0], -1).clone()  # (N, V)

    def select(self, index: torch.Tensor) -> None:
        pass  # no state


PROBS = [0.5, 1e-9, 0.3, 0.15, 0.05]  # <eos> most likely, then "2", "3", "4"


def _greedy(**constraints) -> list[int]:
    out = greedy_loop(PreferenceStepper(PROBS), 1, BOS, EOS, PAD, 8, **constraints)
    return out.tokens[0, : out.lengths[0]].tolist()


def _beam(**constraints) -> list[int]:
    out = beam_search_loop(PreferenceStepper(PROBS), 1, BOS, EOS, PAD, 2, 0.0, 8, **constraints)
    return out.tokens[0, : out.lengths[0]].tolist()


def test_banned_ngram_tokens() -> None:
    assert banned_ngram_tokens([5, 6, 7, 5], 2) == {6}  # "5 6" occurred and 5 is the last token
    assert banned_ngram_tokens([5, 6, 5, 6], 3) == {5}  # "6 5 ?" -> "6 5 6" occurred
    assert banned_ngram_tokens([5, 6, 7], 3) == set()
    assert banned_ngram_tokens([5, 6], 1) == {5, 6}
    assert banned_ngram_tokens([], 2) == set()


@pytest.mark.parametrize("search", [_greedy, _beam])
def test_min_length_delays_eos(search) -> None:
    assert search() == [EOS]  # unconstrained: <eos> at once
    out = search(min_length=3)
    assert len(out) == 4 and out[-1] == EOS and EOS not in out[:-1]  # 3 tokens, then <eos>


@pytest.mark.parametrize("search", [_greedy, _beam])
def test_no_repeat_ngram_size_blocks_repeats(search) -> None:
    assert search(min_length=5) == [2, 2, 2, 2, 2, EOS]  # the favourite word over and over
    out = search(min_length=5, no_repeat_ngram_size=2)
    assert out[-1] == EOS
    body = out[:-1]
    bigrams = list(zip(body, body[1:], strict=False))
    assert len(bigrams) == len(set(bigrams))  # no bigram twice
    out = search(min_length=3, no_repeat_ngram_size=1)  # no token twice: the three words once each (in a
    assert sorted(out[:-1]) == [2, 3, 4] and out[-1] == EOS  # beam, orders of equal probability tie)


def test_constraints_on_a_model_and_their_errors() -> None:
    torch.manual_seed(0)
    model = tiny_model("seq2seq").eval()
    batch = BATCHES["seq2seq"](torch.Generator().manual_seed(3), batch=4)
    src, mask = batch["src_ids"], batch["src_padding_mask"]
    eos = model.config.eos_id
    for search in (greedy_search, lambda *a, **k: beam_search(*a, beam_size=3, **k)):
        out = search(model, src, mask, max_new_tokens=7, min_length=4, no_repeat_ngram_size=2)
        for seq in out.to_lists():
            assert eos not in seq[:4]  # at least 4 tokens before <eos>
            body = [t for t in seq if t != eos]
            bigrams = list(zip(body, body[1:], strict=False))
            assert len(bigrams) == len(set(bigrams))
    with pytest.raises(ValueError, match="min_length 7 leaves no room for <eos> within max_new_tokens 7"):
        greedy_search(model, src, mask, max_new_tokens=7, min_length=7)
    with pytest.raises(ValueError, match="no_repeat_ngram_size must be an integer >= 0, got -1"):
        beam_search(model, src, mask, max_new_tokens=7, no_repeat_ngram_size=-1)
