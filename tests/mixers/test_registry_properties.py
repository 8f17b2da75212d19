"""The core's registry-wide property tests that apply to the baseline mixers, over every registered baseline.

Parametrized from ``registered_mixers()``, so a whole token mixer registered later is covered automatically.
Properties of causal mixers are parametrized over the mixers that can be causal only (``supports_causal``), so
no instance is generated that would have nothing to check.
"""

from __future__ import annotations

import pytest
import torch

from synthformer.attention import build_mixer, get_mixer, registered_mixers
from synthformer.attention.contract import supports_causal

BASELINES = registered_mixers()
CAUSAL_BASELINES = [name for name in BASELINES if supports_causal(get_mixer(name))]
ENCODER_ONLY_BASELINES = [name for name in BASELINES if name not in CAUSAL_BASELINES]
D_MODEL, HEADS, MAX_LEN = 8, 2, 8


def test_every_baseline_is_registered():
    assert {"LightConv", "DynamicConv", "Linformer"} <= set(BASELINES)


def _build(name: str, causal: bool):
    torch.manual_seed(0)
    return build_mixer(name, D_MODEL, HEADS, MAX_LEN, causal=causal).double()


def _causal_options(name: str) -> list[bool]:
    return [False, True] if name in CAUSAL_BASELINES else [False]


@pytest.fixture(params=BASELINES)
def name(request) -> str:
    return request.param


def test_shapes_and_max_len(name):
    for causal in _causal_options(name):
        mixer = _build(name, causal)
        for length in (1, 5, MAX_LEN):
            assert mixer(torch.randn(2, length, D_MODEL, dtype=torch.float64)).shape == (2, length, D_MODEL)
        with pytest.raises(ValueError, match=f"{MAX_LEN + 1}.*{MAX_LEN}"):
            mixer(torch.randn(1, MAX_LEN + 1, D_MODEL, dtype=torch.float64))


@pytest.mark.parametrize("name", ENCODER_ONLY_BASELINES)
def test_encoder_only_mixers_refuse_causal(name):
    with pytest.raises(ValueError, match="causal"):
        _build(name, True)
    with pytest.raises(ValueError, match="decoding"):
        _build(name, False).init_cache(2)


@pytest.mark.parametrize("name", CAUSAL_BASELINES)
def test_causal_never_reads_the_future(name):
    mixer = _build(name, True)
    x = torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64)
    x2 = x.clone()
    x2[:, 5:] = torch.randn_like(x2[:, 5:])
    torch.testing.assert_close(mixer(x)[:, :5], mixer(x2)[:, :5], atol=1e-12, rtol=0)


def test_padding_content_never_leaks_and_right_padding_equals_unpadded(name):
    for causal in _causal_options(name):
        mixer = _build(name, causal)
        x = torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64)
        mask = torch.zeros(2, MAX_LEN, dtype=torch.bool)
        mask[1, 5:] = True
        x2 = x.clone()
        x2[mask] = torch.randn_like(x2[mask]) * 10
        torch.testing.assert_close(mixer(x, mask)[~mask], mixer(x2, mask)[~mask], atol=1e-10, rtol=0)
        torch.testing.assert_close(mixer(x, mask)[1:, :5], mixer(x[1:, :5]), atol=1e-10, rtol=0)


def test_fully_masked_rows_give_no_nan(name):
    for causal in _causal_options(name):
        mixer = _build(name, causal)
        x = torch.randn(2, 5, D_MODEL, dtype=torch.float64, requires_grad=True)
        mask = torch.zeros(2, 5, dtype=torch.bool)
        mask[1] = True
        y = mixer(x, mask)
        y.sum().backward()
        assert torch.isfinite(y).all() and torch.isfinite(x.grad).all()


@pytest.mark.parametrize("name", CAUSAL_BASELINES)
def test_decoding_equals_the_full_forward(name):
    mixer = _build(name, True)
    x = torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64)
    full = mixer(x)
    cache = mixer.init_cache(2)
    steps = []
    for t in range(MAX_LEN):
        y, cache = mixer(x[:, t : t + 1], cache=cache)
        steps.append(y)
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-10, rtol=0)
    assert cache.nbytes() > 0


def test_unknown_option_lists_the_valid_ones(name):
    with pytest.raises(TypeError, match="bogus"):
        build_mixer(name, D_MODEL, HEADS, MAX_LEN, bogus=1)


def test_gradcheck(name):
    for causal in _causal_options(name):
        mixer = _build(name, causal)
        x = torch.randn(2, 4, D_MODEL, dtype=torch.float64, requires_grad=True)
        mask = torch.tensor([[False] * 4, [False, False, False, True]])
        assert torch.autograd.gradcheck(lambda x, m=mixer, k=mask: m(x, key_padding_mask=k), (x,), eps=1e-6, atol=1e-7)
