"""Every kind and mixture against the slow reference (paper equations): outputs and all gradients, 1e-10."""

from __future__ import annotations

import pytest
import torch
from torch.func import functional_call

from .conftest import ALL_KINDS, D_MODEL, MAX_LEN, build, padding
from .reference import reference_forward, reference_weights

LENGTHS = [1, 5, MAX_LEN]  # L = 1, an odd length, max_len


def _grads(attn, x, out, w):
    params = [p for p in attn.parameters() if p.requires_grad]
    return torch.autograd.grad((out * w).sum(), [x, *params])


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("padded", [False, True], ids=["nopad", "pad"])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_matches_reference(kind, causal, padded, length):
    """Both paths of the layer, materialized and fast, against one reference (its element-by-element forward and
    backward are most of the cost, and they do not depend on the path)."""
    attn = build(kind, causal=causal)
    x = torch.randn(3, length, D_MODEL, dtype=torch.float64, requires_grad=True)
    mask = padding(3, length) if padded else None
    ref = reference_forward(attn, x, mask)
    w = torch.randn_like(ref)
    want = _grads(attn, x, ref, w)
    for fast in (False, True):
        path = "fast" if fast else "materialized"
        attn.use_fast_paths = fast
        out = attn(x, key_padding_mask=mask)
        assert out.shape == (3, length, D_MODEL), path
        torch.testing.assert_close(out, ref, atol=1e-10, rtol=0, msg=lambda m, path=path: f"{path}: {m}")
        for got, expected in zip(_grads(attn, x, out, w), want, strict=True):
            torch.testing.assert_close(got, expected, atol=1e-10, rtol=0,
                                       msg=lambda m, path=path: f"{path} gradient: {m}")


@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_weights_match_reference(kind, causal):
    attn = build(kind, causal=causal)
    x = torch.randn(3, MAX_LEN, D_MODEL, dtype=torch.float64)
    mask = padding(3, MAX_LEN)
    torch.testing.assert_close(attn.attention_weights(x, mask), reference_weights(attn, x, mask), atol=1e-10, rtol=0)


@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_gradcheck(kind, causal):
    """torch.autograd.gradcheck in float64 on a tiny shape, for the input and for every trained parameter.

    The input's Jacobian is checked element by element; the parameters' in gradcheck's ``fast_mode`` (a random
    projection ``v^T J u`` of the numerical and analytical Jacobians per parameter), which is what keeps this loop
    over every kind affordable: element by element it perturbed each of the parameters' thousands of entries and
    took a third of the attention tests' time. Every parameter gradient is also compared entry by entry with the
    reference's at 1e-10 in ``test_matches_reference``."""
    attn = build(kind, causal=causal)
    x = torch.randn(2, 4, D_MODEL, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[False] * 4, [False, False, False, True]])
    assert torch.autograd.gradcheck(lambda x: attn(x, key_padding_mask=mask), (x,), eps=1e-6, atol=1e-7)

    named = {n: p for n, p in attn.named_parameters() if p.requires_grad}
    leaves = tuple(p.detach().clone().requires_grad_(True) for p in named.values())

    def by_params(*ps):
        return functional_call(attn, dict(zip(named, ps, strict=True)), (x.detach(),), {"key_padding_mask": mask})

    assert torch.autograd.gradcheck(by_params, leaves, eps=1e-6, atol=1e-7, fast_mode=True)


@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_cropped_fd_matches_reference(causal):
    """FD with a * b > max_len (3 x 3 for max_len 8): the extra columns are cropped."""
    attn = build("FD", causal=causal, a=3, b=3)
    x = torch.randn(3, MAX_LEN, D_MODEL, dtype=torch.float64, requires_grad=True)
    mask = padding(3, MAX_LEN)
    out = attn(x, key_padding_mask=mask)
    ref = reference_forward(attn, x, mask)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=0)
    w = torch.randn_like(out)
    for got, want in zip(_grads(attn, x, out, w), _grads(attn, x, ref, w), strict=True):
        torch.testing.assert_close(got, want, atol=1e-10, rtol=0)


# ---------------------------------------------------------------- a head width of its own

#: head widths other than D_MODEL / HEADS = 4: wider (T5's d_kv above d / H) and narrower
HEAD_DIMS = [pytest.param(8, id="head_dim-8"), pytest.param(3, id="head_dim-3")]


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_head_dim_matches_reference(kind, causal, head_dim):
    """A layer of 2 heads of width 8 (or 3) over d_model 8: both paths, outputs and every gradient, against the
    paper's equations with the widths read from the parameters' shapes (reference.py)."""
    attn = build(kind, causal=causal, head_dim=head_dim)
    assert attn.value.weight.shape == (attn.n_heads * head_dim, D_MODEL)
    x = torch.randn(3, MAX_LEN, D_MODEL, dtype=torch.float64, requires_grad=True)
    mask = padding(3, MAX_LEN)
    ref = reference_forward(attn, x, mask)
    w = torch.randn_like(ref)
    want = _grads(attn, x, ref, w)
    for fast in (False, True):
        path = "fast" if fast else "materialized"
        attn.use_fast_paths = fast
        out = attn(x, key_padding_mask=mask)
        torch.testing.assert_close(out, ref, atol=1e-10, rtol=0, msg=lambda m, path=path: f"{path}: {m}")
        for got, expected in zip(_grads(attn, x, out, w), want, strict=True):
            torch.testing.assert_close(got, expected, atol=1e-10, rtol=0,
                                       msg=lambda m, path=path: f"{path} gradient: {m}")


@pytest.mark.parametrize("kind", ["R", "D", "V", "FD", "ConvReluConv", "GLU", "R+V", "D+V"])
def test_head_dim_gradcheck(kind):
    """gradcheck in float64 with heads of width 8 over d_model 8 (input element by element, parameters in
    fast mode, as :func:`test_gradcheck`), causal, with a padded key."""
    attn = build(kind, causal=True, head_dim=8)
    x = torch.randn(2, 4, D_MODEL, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[False] * 4, [False, False, False, True]])
    assert torch.autograd.gradcheck(lambda x: attn(x, key_padding_mask=mask), (x,), eps=1e-6, atol=1e-7)
    named = {n: p for n, p in attn.named_parameters() if p.requires_grad}
    leaves = tuple(p.detach().clone().requires_grad_(True) for p in named.values())

    def by_params(*ps):
        return functional_call(attn, dict(zip(named, ps, strict=True)), (x.detach(),), {"key_padding_mask": mask})

    assert torch.autograd.gradcheck(by_params, leaves, eps=1e-6, atol=1e-7, fast_mode=True)
