"""Linformer against its equations as a slow loop over heads (float64, 1e-10)."""

from __future__ import annotations

import math

import pytest
import torch

from synthformer.mixers import Linformer

from .conftest import D_MODEL, HEADS, MAX_LEN, build, inputs, padding


def reference(m: Linformer, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """head_i = softmax(Q_i (E_i K_i)^T / sqrt(d_h)) (F_i V_i), E_i, F_i cropped to the first L columns."""
    length = x.shape[1]
    dh = D_MODEL // HEADS
    keep = torch.ones_like(x[..., :1]) if mask is None else (~mask).unsqueeze(-1).to(x.dtype)  # (B, L, 1)
    heads = []
    for i in range(HEADS):
        rows = slice(i * dh, (i + 1) * dh)
        q = x @ m.q_proj.weight[rows].T + m.q_proj.bias[rows]  # (B, L, dh)
        k = (x @ m.k_proj.weight[rows].T + m.k_proj.bias[rows]) * keep
        v = (x @ m.v_proj.weight[rows].T + m.v_proj.bias[rows]) * keep
        e = m.E[0 if m.share_heads else i, :, :length]  # (k, L)
        f_full = m.E if m.share_kv else m.F
        f = f_full[0 if m.share_heads else i, :, :length]
        scores = q @ (e @ k).transpose(1, 2) / math.sqrt(dh)  # (B, L, k)
        heads.append(scores.softmax(-1) @ (f @ v))  # (B, L, dh)
    y = torch.cat(heads, dim=-1)
    return y @ m.out_proj.weight.T + m.out_proj.bias


@pytest.mark.parametrize("share_heads", [True, False], ids=["shared-heads", "per-head"])
@pytest.mark.parametrize("share_kv", [False, True], ids=["E,F", "E=F"])
@pytest.mark.parametrize("length", [1, 5, MAX_LEN])
def test_matches_loop_over_heads(length, share_kv, share_heads):
    m = build(Linformer, k=4, share_kv=share_kv, share_heads=share_heads)
    x = inputs(length=length)
    torch.testing.assert_close(m(x), reference(m, x), rtol=0, atol=1e-10)
    mask = padding(3, length)
    torch.testing.assert_close(m(x, key_padding_mask=mask), reference(m, x, mask), rtol=0, atol=1e-10)


def test_parameters_and_sharing():
    m = Linformer(8, 2, 16)
    assert m.k == 32 and m.E.shape == (1, 32, 16) and m.F is not None
    m = Linformer(8, 2, 16, k=4, share_kv=True, share_heads=False)
    assert m.E.shape == (2, 4, 16) and m.F is None
    names = {n for n, _ in m.named_parameters()}
    assert "E" in names and "F" not in names


def test_causal_is_refused_with_an_explanation():
    with pytest.raises(ValueError, match="cannot be causal"):
        Linformer(8, 2, 16, causal=True)
    with pytest.raises(TypeError, match="'causal'"):  # the count takes the options only, like every mixer's
        Linformer.num_params(8, 2, 16, causal=True)
    m = Linformer(8, 2, 16)
    with pytest.raises(ValueError, match="no incremental decoding"):
        m.init_cache(2)
    with pytest.raises(ValueError, match="no incremental decoding"):
        m(torch.randn(2, 3, 8), cache=object())


def test_attention_dropout_only_in_training():
    m = build(Linformer, k=4, dropout=0.5)
    x = inputs(length=6)
    torch.testing.assert_close(m(x), reference(m, x), rtol=0, atol=1e-10)
    m.train()
    torch.manual_seed(0)
    assert (m(x) - reference(m, x)).abs().max() > 1e-3
