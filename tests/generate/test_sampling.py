"""Sampling from the language model."""

from __future__ import annotations

import pytest
import torch

from synthformer.generate import filter_logits, sample
from synthformer.models import TransformerLM
from tests.models.helpers import BOS, EOS, PAD, tiny_model

PROMPTS = [[BOS, 5, 6], [BOS], [BOS, 7, 8, 9, 10]]


def _lm(kind: str = "R+V", **kw) -> TransformerLM:
    return tiny_model("lm", decoder_kind=kind, ffn="conv_relu", tie_embeddings=False, **kw)


def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_sampling_is_reproducible_with_a_seed():
    model = _lm()
    a = sample(model, PROMPTS, max_new_tokens=10, generator=_seeded(1), top_k=8, top_p=0.95)
    b = sample(model, PROMPTS, max_new_tokens=10, generator=_seeded(1), top_k=8, top_p=0.95)
    c = sample(model, PROMPTS, max_new_tokens=10, generator=_seeded(2), top_k=8, top_p=0.95)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.scores, b.scores)
    assert not torch.equal(a.tokens, c.tokens)
    assert a.tokens.shape == (3, 10)


@pytest.mark.parametrize("kind", ["V", "R", "D", "FR", "R+V", "D+V"])
def test_sampling_with_and_without_cache_agree(kind):
    model = _lm(kind)
    cached = sample(model, PROMPTS, max_new_tokens=8, generator=_seeded(3), use_cache=True)
    recomputed = sample(model, PROMPTS, max_new_tokens=8, generator=_seeded(3), use_cache=False)
    assert torch.equal(cached.tokens, recomputed.tokens)
    torch.testing.assert_close(cached.scores, recomputed.scores, atol=1e-5, rtol=0)


def test_variable_length_prompts_equal_separate_runs():
    # greedy (temperature 0) is deterministic, so each prompt must continue the same alone or in a batch
    model = _lm("R")
    together = sample(model, PROMPTS, max_new_tokens=6, temperature=0.0, eos_id=-1)
    for i, prompt in enumerate(PROMPTS):
        alone = sample(model, torch.tensor([prompt]), max_new_tokens=6, temperature=0.0, eos_id=-1)
        assert torch.equal(together.tokens[i], alone.tokens[0])
        assert together.scores[i].item() == pytest.approx(alone.scores[0].item(), abs=1e-5)


def test_greedy_continuation_is_the_argmax_of_the_full_forward():
    model = _lm("D").eval()
    prompt = torch.tensor([[BOS, 5, 9]])
    out = sample(model, prompt, max_new_tokens=5, temperature=0.0, eos_id=-1)
    seq = torch.cat([prompt, out.tokens], dim=1)
    with torch.no_grad():
        logits = model(input_ids=seq[:, :-1])["logits"]
    assert torch.equal(logits[0, 2:].argmax(-1), out.tokens[0])
    expected_score = logits[0, 2:].log_softmax(-1).gather(-1, out.tokens[0, :, None]).sum()
    assert out.scores[0].item() == pytest.approx(expected_score.item(), abs=1e-5)


def test_top_k_one_is_greedy():
    model = _lm()
    greedy = sample(model, PROMPTS, max_new_tokens=6, temperature=0.0)
    top1 = sample(model, PROMPTS, max_new_tokens=6, top_k=1, generator=_seeded(0))
    assert torch.equal(greedy.tokens, top1.tokens)


def test_eos_stops_a_sequence():
    model = _lm()
    with torch.no_grad():
        model.lm_head.bias = None
        model.lm_head.weight.zero_()
        model.lm_head.weight[EOS] = 0.0
    # all logits equal: sample until <eos> appears, then padding
    out = sample(model, [[BOS]] * 8, max_new_tokens=20, generator=_seeded(4))
    for row, n in zip(out.tokens.tolist(), out.lengths.tolist(), strict=True):
        if EOS in row:
            assert row.index(EOS) == n - 1 and all(t == PAD for t in row[n:])
        else:
            assert n == 20


def test_filter_logits_by_hand():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    inf = float("-inf")
    assert filter_logits(logits, top_k=2).tolist() == [[2.0, 1.0, inf, inf]]
    probs = logits.softmax(-1)[0].tolist()  # about 0.64, 0.24, 0.09, 0.03
    assert probs[0] < 0.7 < probs[0] + probs[1]
    assert filter_logits(logits, top_p=0.7).tolist() == [[2.0, 1.0, inf, inf]]
    assert filter_logits(logits, top_p=0.5).tolist() == [[2.0, inf, inf, inf]]  # the best token always stays
    assert torch.equal(filter_logits(logits, top_p=1.0), logits)
    shuffled = logits[:, [2, 0, 3, 1]]
    assert filter_logits(shuffled, top_p=0.7).tolist() == [[inf, 2.0, inf, 1.0]]


def test_sampling_argument_errors():
    model = _lm()
    with pytest.raises(ValueError, match="exceeds the model's max_len 24"):
        sample(model, PROMPTS, max_new_tokens=21)
    with pytest.raises(ValueError, match="temperature must be >= 0"):
        sample(model, PROMPTS, max_new_tokens=2, temperature=-1.0)
    with pytest.raises(ValueError, match="at least one token"):
        sample(model, [[]], max_new_tokens=2)
