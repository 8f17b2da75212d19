"""Left padding with positions from the padding (Hugging Face's ``position_ids`` convention) in the native models
and decoders: a left-padded row gets the logits, tokens and log-probabilities it gets alone, for every kind whose
logits read positions (R, Fix, FR, the length axis of D, FD and the appendix kinds, mixtures) and both kinds of
absolute position embedding."""

from __future__ import annotations

import pytest
import torch

from synthformer.attention import SynthesizerAttention
from synthformer.generate import sample
from synthformer.models import LMConfig, build_model, positions_from_padding
from tests.hf.helpers import SMALL, decoding_kinds, spread

PROMPTS = [[5, 6, 7], [8, 9, 10, 11, 12, 13], [14]]


def tiny(kind: str, **overrides) -> torch.nn.Module:
    torch.manual_seed(0)
    return spread(build_model(LMConfig(**{**SMALL, "n_layers": 2, "decoder_kind": kind, **overrides})))


def left_padded(prompts: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, W) ids, left-padded with 0, and the padding mask (B, W), True at padding."""
    width = max(map(len, prompts))
    ids = torch.zeros(len(prompts), width, dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) :] = torch.tensor(p)
    return ids, ids == 0


@pytest.mark.parametrize("kind", decoding_kinds())
def test_a_left_padded_row_gets_its_own_logits_in_the_forward_and_in_decoding(kind):
    positions_kind = "learned" if kind in ("R", "D", "Conv") else "sinusoidal"
    model = tiny(kind, positions=positions_kind, ffn="conv_relu" if kind == "FR" else "relu")
    ids, pad = left_padded(PROMPTS)
    positions = positions_from_padding(pad)  # (B, W)
    with torch.no_grad():
        full = model(ids, padding_mask=pad, positions=positions)["logits"]  # (B, W, V)
        derived = model(ids, padding_mask=pad)["logits"]  # positions from the padding mask when not given
        columns = torch.arange(ids.shape[1]).expand_as(ids)  # (B, W)
        shifted = model(ids, padding_mask=pad, positions=columns)["logits"]  # what left padding used to give
        cache = model.init_cache(len(PROMPTS))
        first, cache = model.decode_step(ids[:, :4], cache, padding_mask=pad[:, :4], positions=positions[:, :4])
        rest = [model.decode_step(ids[:, t : t + 1], cache, padding_mask=pad[:, : t + 1])[0] for t in range(4, 6)]
        decoded = torch.cat([first, *rest], dim=1)  # (B, W, V)
        for row, prompt in enumerate(PROMPTS):
            alone = model(torch.tensor([prompt]))["logits"][0]  # (len, V)
            real = slice(ids.shape[1] - len(prompt), None)
            torch.testing.assert_close(full[row, real], alone, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(decoded[row, real], alone, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(derived[~pad], full[~pad])
    assert not torch.allclose(shifted[0, 3:], full[0, 3:], atol=1e-3)  # the positions do matter


@pytest.mark.parametrize("kind", ["V", "R", "FR", "D", "FD", "Conv", "R+V"])
def test_plain_positions_through_the_reference_path_equal_the_fast_paths(kind):
    # given positions take the materialized path; with the columns as positions it must give the fast paths' output
    torch.manual_seed(0)
    attn = SynthesizerAttention(16, 2, 12, kind=kind, causal=True).eval()
    x = torch.randn(3, 10, 16)
    pad = torch.zeros(3, 10, dtype=torch.bool)
    pad[1, 7:] = True
    plain = torch.arange(10).expand(3, 10)
    with torch.no_grad():  # padded queries read position 0 with positions: only the real rows must agree
        torch.testing.assert_close(attn(x, pad, positions=plain)[~pad], attn(x, pad)[~pad], atol=1e-5, rtol=1e-5)


def test_bad_positions_are_refused_with_the_value_and_the_rule():
    attn = SynthesizerAttention(16, 2, 12, kind="R", causal=True)
    x = torch.randn(1, 4, 16)
    with pytest.raises(ValueError, match=r"positions\[0, 2\] = 3: expected 0 <= position <= 2"):
        attn(x, positions=torch.tensor([[0, 1, 3, 3]]))
    with pytest.raises(ValueError, match=r"shape \(batch, keys\) = \(1, 4\)"):
        attn(x, positions=torch.tensor([[0, 1, 2]]))
    with pytest.raises(TypeError, match="integer tensor"):
        attn(x, positions=torch.zeros(1, 4))
    pad = torch.tensor([[True, False, False, False]])  # a padded key's position does not matter
    attn(x, pad, positions=torch.tensor([[7, 0, 1, 2]]))


@pytest.mark.parametrize("kind", ["R", "FR", "D+V", "GLU"])
def test_left_padded_sampling_gives_each_row_what_it_gets_alone(kind):
    model = tiny(kind)
    greedy = sample(model, PROMPTS, max_new_tokens=6, temperature=0, eos_id=-1, left_pad=True)
    for row, prompt in enumerate(PROMPTS):
        alone = sample(model, [prompt], max_new_tokens=6, temperature=0, eos_id=-1)
        assert greedy.tokens[row].tolist() == alone.tokens[0].tolist()
        torch.testing.assert_close(greedy.scores[row], alone.scores[0], atol=1e-5, rtol=1e-5)
    # sampling: the same draws with and without the cache, each row scored as its unpadded sequence
    drawn = [sample(model, PROMPTS, max_new_tokens=6, temperature=1.5, eos_id=-1, left_pad=True, use_cache=cached,
                    generator=torch.Generator().manual_seed(3)) for cached in (True, False)]
    assert torch.equal(drawn[0].tokens, drawn[1].tokens)
    for row, prompt in enumerate(PROMPTS):
        new = drawn[0].tokens[row]
        with torch.no_grad():
            logp = model(torch.tensor([prompt + new.tolist()]))["logits"][0].log_softmax(-1)  # (len, V)
        own = logp[len(prompt) - 1 : -1].gather(1, new[:, None]).sum()
        torch.testing.assert_close(drawn[0].scores[row], own, atol=1e-5, rtol=1e-5)


def test_left_padded_sampling_stops_rows_at_eos_and_pads_after():
    model = tiny("R")
    free = sample(model, PROMPTS, max_new_tokens=6, temperature=0, eos_id=-1, left_pad=True)
    stop = int(free.tokens[1, 2])
    out = sample(model, PROMPTS, max_new_tokens=6, temperature=0, eos_id=stop, pad_id=0, left_pad=True)
    row = out.tokens[1].tolist()
    assert row[: row.index(stop) + 1] == free.tokens[1, : row.index(stop) + 1].tolist()
    assert int(out.lengths[1]) == row.index(stop) + 1 and set(row[row.index(stop) + 1 :]) <= {0}
