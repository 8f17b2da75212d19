"""LightConv against torch.nn.functional.conv1d with grouped, softmax-normalized kernels (float64, 1e-10)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from synthformer.mixers import LightConv
from synthformer.mixers._conv import depthwise_conv

from .conftest import D_MODEL, HEADS, build, inputs, padding


def reference(m: LightConv, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """GLU, zero padding, grouped conv1d (one softmaxed kernel per head repeated over its channels), out_proj."""
    a, b = (x @ m.in_proj.weight.T + m.in_proj.bias).chunk(2, dim=-1)
    u = a * torch.sigmoid(b)  # (B, L, d)
    if mask is not None:
        u = u * (~mask).unsqueeze(-1).to(u.dtype)
    k = m.kernel_size
    kernel = m.weight.softmax(-1) if m.weight_softmax else m.weight  # (H, K)
    kernel = kernel.repeat_interleave(D_MODEL // HEADS, dim=0).unsqueeze(1)  # (d, 1, K): channel c -> head c // D
    left = k - 1 if m.causal else (k - 1) // 2
    u_pad = F.pad(u.transpose(1, 2), (left, k - 1 - left))  # (B, d, L + K - 1)
    y = F.conv1d(u_pad, kernel, groups=D_MODEL).transpose(1, 2)  # (B, L, d)
    return y @ m.out_proj.weight.T + m.out_proj.bias


@pytest.mark.parametrize("impl", ["unfold", "band", "auto"])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("k", [1, 3, 4, 7])
def test_matches_conv1d(k, causal, impl):
    m = build(LightConv, causal=causal, kernel_size=k, impl=impl)
    with torch.no_grad():
        m.weight.normal_()  # sharper kernels than the init, so a tap misplaced by one shows
    for length in (1, 5, 9):
        x = inputs(length=length)
        torch.testing.assert_close(m(x), reference(m, x), rtol=0, atol=1e-10)


@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_matches_conv1d_with_padding_and_no_softmax(causal):
    m = build(LightConv, causal=causal, kernel_size=5, weight_softmax=False)
    x = inputs(length=11)
    mask = padding(3, 11)
    torch.testing.assert_close(m(x, key_padding_mask=mask), reference(m, x, mask), rtol=0, atol=1e-10)


def test_kernel_is_softmax_normalized_and_shared_per_head():
    # A constant input channel-group reveals the kernel's sum: with softmax the output equals the input.
    m = build(LightConv, kernel_size=3)
    u = torch.ones(1, 5 + 2, D_MODEL, dtype=torch.float64)
    y = depthwise_conv(u, m._kernel(u), HEADS)
    torch.testing.assert_close(y, torch.ones(1, 5, D_MODEL, dtype=torch.float64), rtol=0, atol=1e-12)
    assert m.weight.shape == (HEADS, 3)


def test_weight_dropout_only_in_training_and_same_on_both_paths():
    m = build(LightConv, kernel_size=5, weight_dropout=0.5)
    x = inputs(length=10)
    ref = reference(m, x)
    torch.testing.assert_close(m(x), ref, rtol=0, atol=1e-10)  # eval: no dropout
    m.train()
    outs = {}
    for impl in ("unfold", "band"):
        m.impl = impl
        torch.manual_seed(7)
        outs[impl] = m(x)
    # The kernel is dropped once, before the path is chosen, so both paths see the same kernel.
    torch.testing.assert_close(outs["unfold"], outs["band"], rtol=0, atol=1e-10)
    assert (outs["unfold"] - ref).abs().max() > 1e-3


def test_dropout_argument_is_the_default_weight_dropout():
    assert LightConv(8, 2, 16, dropout=0.25).weight_dropout == 0.25
    assert LightConv(8, 2, 16, dropout=0.25, weight_dropout=0.0).weight_dropout == 0.0
