"""The two formulations of the depthwise convolution: band matrix layout, agreement, gradients, selection."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from synthformer.mixers import _conv as conv
from synthformer.mixers import band_matrix, choose_impl, depthwise_conv_band, depthwise_conv_unfold
from synthformer.mixers._conv import _BAND_MAX_LEN_INFER, _BAND_MAX_LEN_TRAIN

H, D = 2, 3


def _data(batch: int, length: int, k: int, dynamic: bool, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    u_ext = torch.randn(batch, length + k - 1, H * D, generator=g, dtype=torch.float64)
    shape = (batch, length, H, k) if dynamic else (H, k)
    weight = torch.randn(shape, generator=g, dtype=torch.float64)
    return u_ext, weight


def test_band_matrix_layout():
    taps = torch.arange(1.0, 1 + 2 * 4 * 3).reshape(2, 4, 3)  # (N=2, L=4, K=3)
    band = band_matrix(taps)
    assert band.shape == (2, 4, 6)
    expected = torch.zeros(2, 4, 6)
    for n in range(2):
        for t in range(4):
            expected[n, t, t : t + 3] = taps[n, t]
    assert torch.equal(band, expected)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize(("length", "k"), [(1, 1), (1, 4), (5, 1), (7, 3), (3, 7), (16, 5)])
def test_unfold_and_band_agree_with_explicit_sum(dynamic, length, k):
    u_ext, weight = _data(2, length, k, dynamic)
    expected = torch.zeros(2, length, H * D, dtype=torch.float64)
    for t in range(length):
        for kk in range(k):
            w = weight[:, t, :, kk] if dynamic else weight[:, kk].expand(2, H)  # (B, H)
            expected[:, t] += w.repeat_interleave(D, dim=1) * u_ext[:, t + kk]
    unfold = depthwise_conv_unfold(u_ext, weight, H)
    band = depthwise_conv_band(u_ext, weight, H)
    torch.testing.assert_close(unfold, expected, rtol=0, atol=1e-10)
    torch.testing.assert_close(band, expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_unfold_and_band_gradients_agree(dynamic):
    u_ext, weight = _data(3, 6, 4, dynamic)
    cot = torch.randn(3, 6, H * D, dtype=torch.float64)
    grads = []
    for fn in (depthwise_conv_unfold, depthwise_conv_band):
        u, w = u_ext.clone().requires_grad_(), weight.clone().requires_grad_()
        grads.append(torch.autograd.grad((fn(u, w, H) * cot).sum(), (u, w)))
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("fn", [depthwise_conv_unfold, depthwise_conv_band], ids=["unfold", "band"])
def test_gradcheck(fn, dynamic):
    u_ext, weight = _data(2, 4, 3, dynamic)
    assert torch.autograd.gradcheck(
        lambda u, w: fn(u, w, H), (u_ext.requires_grad_(), weight.requires_grad_()), atol=1e-8
    )


def test_unfold_gradient_wrt_one_input_only():
    # The hand-written backward must also serve calls where only one input needs a gradient.
    u_ext, weight = _data(2, 5, 3, dynamic=False)
    (gu,) = torch.autograd.grad(depthwise_conv_unfold(u_ext.requires_grad_(), weight, H).sum(), (u_ext,))
    (gb,) = torch.autograd.grad(depthwise_conv_band(u_ext, weight, H).sum(), (u_ext,))
    torch.testing.assert_close(gu, gb, rtol=0, atol=1e-12)


def test_static_kernel_matches_grouped_conv1d():
    u_ext, weight = _data(2, 10, 5, dynamic=False)
    ref = F.conv1d(u_ext.transpose(1, 2), weight.repeat_interleave(D, 0).unsqueeze(1), groups=H * D)
    torch.testing.assert_close(depthwise_conv_band(u_ext, weight, H), ref.transpose(1, 2), rtol=0, atol=1e-10)


def test_float32_paths_agree():
    u_ext, weight = _data(4, 40, 7, dynamic=True)
    u_ext, weight = u_ext.float(), weight.softmax(-1).float()
    torch.testing.assert_close(
        depthwise_conv_unfold(u_ext, weight, H), depthwise_conv_band(u_ext, weight, H), rtol=0, atol=1e-5
    )


@pytest.mark.parametrize("backward", [False, True], ids=["inference", "training"])
def test_choose_impl_follows_measured_table(backward):
    table = _BAND_MAX_LEN_TRAIN if backward else _BAND_MAX_LEN_INFER
    for k, limits in table.items():
        for dynamic, limit in zip((False, True), limits, strict=True):
            assert choose_impl(limit + 1, k, dynamic, backward) == "unfold"
            if limit >= 1:
                assert choose_impl(limit, k, dynamic, backward) == "band"
                assert choose_impl(1, k, dynamic, backward) == "band"
    # Very long sequences always take the O(L K) path, whatever K.
    for k in (1, 2, 5, 31, 63, 255):
        for dynamic in (False, True):
            assert choose_impl(100_000, k, dynamic, backward) == "unfold"
    # LightConv's batch-folded band pays off at least as long as DynamicConv's per-sample bands in training.
    if backward:
        assert all(light >= dyn for light, dyn in table.values())


def test_auto_uses_the_training_table_only_when_a_backward_can_follow(monkeypatch):
    calls = []
    real = conv.choose_impl

    def spy(length, kernel_size, dynamic, backward=False):
        calls.append(backward)
        return real(length, kernel_size, dynamic, backward)

    monkeypatch.setattr(conv, "choose_impl", spy)
    u_ext, weight = _data(1, 4, 3, dynamic=False)
    conv.depthwise_conv(u_ext, weight, H)
    conv.depthwise_conv(u_ext, weight.requires_grad_(), H)
    with torch.no_grad():
        conv.depthwise_conv(u_ext, weight, H)
    assert calls == [False, True, False]
