"""DynamicConv against an explicit per-position Python loop (float64, 1e-10)."""

from __future__ import annotations

import pytest
import torch

from synthformer.mixers import DynamicConv

from .conftest import D_MODEL, HEADS, build, inputs, padding


def reference(m: DynamicConv, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """y[b, t, c] = sum_k softmax_k(W_k u[b, t] + b_k)[h(c), k] * u[b, t + k - P, c], one position at a time."""
    batch, length, _ = x.shape
    k_size = m.kernel_size
    head_dim = D_MODEL // HEADS
    left = k_size - 1 if m.causal else (k_size - 1) // 2
    a, b = (x @ m.in_proj.weight.T + m.in_proj.bias).chunk(2, dim=-1)
    u = a * torch.sigmoid(b)  # (B, L, d)
    if mask is not None:
        u = u * (~mask).unsqueeze(-1).to(u.dtype)
    y = torch.zeros_like(u)
    for n in range(batch):
        for t in range(length):
            logits = m.kernel_proj.weight @ u[n, t] + m.kernel_proj.bias  # (H K,) from the token at t only
            kernel = logits.view(HEADS, k_size)
            if m.weight_softmax:
                kernel = kernel.softmax(-1)
            for c in range(D_MODEL):
                h = c // head_dim
                for k in range(k_size):
                    s = t + k - left
                    if 0 <= s < length:
                        y[n, t, c] = y[n, t, c] + kernel[h, k] * u[n, s, c]
    return y @ m.out_proj.weight.T + m.out_proj.bias


@pytest.mark.parametrize("impl", ["unfold", "band"])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("k", [1, 3, 4])
def test_matches_per_position_loop(k, causal, impl):
    m = build(DynamicConv, causal=causal, kernel_size=k, impl=impl)
    x = inputs(batch=2, length=6)
    torch.testing.assert_close(m(x), reference(m, x), rtol=0, atol=1e-10)


@pytest.mark.parametrize("impl", ["unfold", "band"])
def test_matches_loop_with_padding_and_no_softmax(impl):
    m = build(DynamicConv, kernel_size=3, weight_softmax=False, impl=impl)
    x = inputs(length=7)
    mask = padding(3, 7)
    torch.testing.assert_close(m(x, key_padding_mask=mask), reference(m, x, mask), rtol=0, atol=1e-10)


def test_kernels_depend_on_the_token():
    # Two positions with the same neighbourhood values but different centre tokens get different kernels.
    m = build(DynamicConv, kernel_size=3)
    u = torch.randn(1, 4, D_MODEL, dtype=torch.float64)
    w = m._kernel(u)
    assert w.shape == (1, 4, HEADS, 3)
    torch.testing.assert_close(w.sum(-1), torch.ones(1, 4, HEADS, dtype=torch.float64), rtol=0, atol=1e-12)
    assert (w[0, 0] - w[0, 1]).abs().max() > 1e-3


def test_weight_dropout_same_on_both_paths():
    m = build(DynamicConv, kernel_size=5, weight_dropout=0.5).train()
    x = inputs(length=10)
    outs = {}
    for impl in ("unfold", "band"):
        m.impl = impl
        torch.manual_seed(3)
        outs[impl] = m(x)
    torch.testing.assert_close(outs["unfold"], outs["band"], rtol=0, atol=1e-10)
    assert (outs["band"] - m.eval()(x)).abs().max() > 1e-3
