"""Properties every mixer must have: receptive field / causality, incremental decoding, padding, gradients."""

from __future__ import annotations

import pytest
import torch
from torch.func import functional_call

from synthformer.attention.contract import supports_causal
from synthformer.mixers import ConvCache, DynamicConv, LightConv, Linformer

from .conftest import CONV_CLASSES, D_MODEL, build, inputs, padding


def _dependence(m, length: int) -> torch.Tensor:
    """(L, L) bool: entry [t, s] is True when output t has a non-zero gradient w.r.t. input token s."""
    x = inputs(batch=1, length=length).requires_grad_()
    y = m(x)
    rows = []
    for t in range(length):
        (g,) = torch.autograd.grad(y[0, t].sum(), x, retain_graph=True)
        rows.append(g[0].abs().sum(-1) > 0)
    return torch.stack(rows)


@pytest.mark.parametrize("impl", ["unfold", "band"])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("k", [1, 3, 4])
@pytest.mark.parametrize("cls", CONV_CLASSES, ids=lambda c: c.__name__)
def test_receptive_field(cls, k, causal, impl):
    """Output t depends on exactly t-K+1..t (causal) or t-(K-1)//2..t+K//2 (non-causal), clipped to the input."""
    m = build(cls, causal=causal, kernel_size=k, impl=impl)
    length = 8
    left = k - 1 if causal else (k - 1) // 2
    expected = torch.zeros(length, length, dtype=torch.bool)
    for t in range(length):
        expected[t, max(0, t - left) : min(length, t - left + k)] = True
    assert torch.equal(_dependence(m, length), expected)


@pytest.mark.parametrize("cls", CONV_CLASSES, ids=lambda c: c.__name__)
def test_causality_changing_the_future_never_changes_the_past(cls):
    m = build(cls, causal=True, kernel_size=4)
    x = inputs(length=10)
    y = m(x)
    for t in range(10):
        x2 = x.clone()
        x2[:, t + 1 :] = torch.randn_like(x2[:, t + 1 :]) * 5
        y2 = m(x2)
        torch.testing.assert_close(y2[:, : t + 1], y[:, : t + 1], rtol=0, atol=0)


def test_linformer_mixes_every_position():
    assert _dependence(build(Linformer, k=3), 6).all()


def _decode(m, x, chunks, mask=None):
    cache = m.init_cache(x.shape[0])
    outs, start = [], 0
    for size in chunks:
        stop = start + size
        y, cache = m(x[:, start:stop], key_padding_mask=None if mask is None else mask[:, :stop], cache=cache)
        outs.append(y)
        start = stop
    return torch.cat(outs, dim=1), cache


@pytest.mark.parametrize("chunks", [[1] * 10, [3, 1, 4, 2], [10]], ids=["steps", "chunks", "one"])
@pytest.mark.parametrize("k", [1, 3, 5])
@pytest.mark.parametrize("cls", CONV_CLASSES, ids=lambda c: c.__name__)
def test_incremental_decoding_equals_full_forward_float64(cls, k, chunks):
    m = build(cls, causal=True, kernel_size=k)
    x = inputs(length=10)
    mask = padding(3, 10)
    y_steps, cache = _decode(m, x, chunks, mask)
    torch.testing.assert_close(y_steps, m(x, key_padding_mask=mask), rtol=0, atol=1e-12)
    assert isinstance(cache, ConvCache) and cache.length == 10
    assert cache.window.shape == (3, k - 1, D_MODEL)
    assert cache.nbytes() == 3 * (k - 1) * D_MODEL * 8


@pytest.mark.parametrize("cls", CONV_CLASSES, ids=lambda c: c.__name__)
def test_incremental_decoding_float32(cls):
    m = build(cls, causal=True, kernel_size=7, dtype=torch.float32, d_model=64, n_heads=4, max_len=64)
    x = inputs(batch=4, length=48, d_model=64, dtype=torch.float32)
    with torch.no_grad():
        y_full = m(x)
        y_steps, _ = _decode(m, x, [1] * 48)
    assert (y_steps - y_full).abs().max().item() <= 1e-5


@pytest.mark.parametrize("cls", CONV_CLASSES, ids=lambda c: c.__name__)
def test_cache_is_not_modified_and_can_be_reordered(cls):
    m = build(cls, causal=True, kernel_size=3)
    x = inputs(length=4)
    cache0 = m.init_cache(3)
    _, cache1 = m(x[:, :2], cache=cache0)
    assert cache0.length == 0 and not cache0.window.any()
    index = torch.tensor([2, 0, 0])
    y_re, _ = m(x[index, 2:], cache=cache1.reorder(index))
    y_full = m(x[index])
    torch.testing.assert_close(y_re, y_full[:, 2:], rtol=0, atol=1e-12)


@pytest.mark.parametrize("cls", CONV_CLASSES, ids=lambda c: c.__name__)
def test_cache_dtype_and_device(cls):
    m = build(cls, causal=True, kernel_size=3)
    assert m.init_cache(2).window.dtype == torch.float64
    assert m.init_cache(2, dtype=torch.float32, device="cpu").window.dtype == torch.float32


_PADDING_CASES = [(LightConv, {"kernel_size": 3}), (DynamicConv, {"kernel_size": 4}), (Linformer, {"k": 5})]


@pytest.mark.parametrize(
    ("cls", "options", "causal"),
    [  # a causal instance only for mixers that can be causal (not Linformer), so no instance has to skip
        pytest.param(cls, options, causal, id=f"{cls.__name__}-{'causal' if causal else 'bidir'}")
        for cls, options in _PADDING_CASES
        for causal in (False, True)
        if not causal or supports_causal(cls)
    ],
)
def test_padding_invariance(cls, options, causal):
    m = build(cls, causal=causal, **options)
    x = inputs(length=9)
    mask = padding(3, 9)
    y = m(x, key_padding_mask=mask)
    # 1) whatever the padded tokens hold, real positions' outputs are unchanged
    x2 = torch.where(mask.unsqueeze(-1), torch.randn_like(x) * 10, x)
    y2 = m(x2, key_padding_mask=mask)
    real = ~mask
    torch.testing.assert_close(y2[real], y[real], rtol=0, atol=1e-12)
    # 2) a right-padded sample gives the outputs of the unpadded shorter sequence
    n = int(real[1].sum())
    torch.testing.assert_close(y[1, :n], m(x[1:2, :n])[0], rtol=0, atol=1e-12)


def test_fully_padded_row_is_finite():
    for cls in (LightConv, DynamicConv, Linformer):
        m = build(cls)
        mask = torch.ones(2, 5, dtype=torch.bool)
        assert torch.isfinite(m(inputs(batch=2, length=5), key_padding_mask=mask)).all()


@pytest.mark.parametrize(
    ("cls", "causal", "options"),
    [
        (LightConv, False, {"kernel_size": 3, "impl": "unfold"}),
        (LightConv, True, {"kernel_size": 3, "impl": "band"}),
        (DynamicConv, False, {"kernel_size": 3, "impl": "band"}),
        (DynamicConv, True, {"kernel_size": 3, "impl": "unfold"}),
        (Linformer, False, {"k": 3}),
        (Linformer, False, {"k": 3, "share_kv": True, "share_heads": False}),
    ],
    ids=[
        "LightConv-bidir-unfold",
        "LightConv-causal-band",
        "DynamicConv-bidir-band",
        "DynamicConv-causal-unfold",
        "Linformer",
        "Linformer-shared-kv-per-head",
    ],
)
def test_gradcheck(cls, causal, options):
    """Gradients w.r.t. the input and every parameter, with a padding mask, on tiny float64 shapes."""
    m = build(cls, causal=causal, d_model=4, n_heads=2, max_len=6, **options)
    names = [n for n, p in m.named_parameters() if p.requires_grad]
    params = [p.detach().clone().requires_grad_() for n, p in m.named_parameters() if p.requires_grad]
    x = inputs(batch=2, length=5, d_model=4).requires_grad_()
    mask = torch.tensor([[False] * 5, [False, False, False, True, True]])

    def f(x, *ps):
        return functional_call(m, dict(zip(names, ps, strict=True)), (x,), {"key_padding_mask": mask})

    assert torch.autograd.gradcheck(f, (x, *params), atol=1e-8)
