"""The fused materialized path (``attention.fused``) equals the reference, forward and gradients, for every kind.

Each test forces a branch (``fast_path_settings(fused=...)``) and checks from the call counter that the branch
actually ran: a test that silently took the other path would prove nothing.
"""

from __future__ import annotations

import pytest
import torch
from torch.func import functional_call

from synthformer.attention import SynthesizerAttention, paths
from synthformer.attention.fast import blocks, fused
from synthformer.attention.fast.settings import DEFAULTS, fast_path_settings

from .conftest import ALL_KINDS, D_MODEL, MAX_LEN, build, padding
from .reference import reference_forward

#: kinds whose training forward reaches the materialized blocks (the others take SDPA or the shared alignment)
FUSED_KINDS = [k for k in ALL_KINDS if k not in ("V", "R", "Fix", "FR", "Fix+FR")]


def _grads(y: torch.Tensor, w: torch.Tensor, inputs: list[torch.Tensor]) -> list[torch.Tensor | None]:
    return list(torch.autograd.grad((y * w).sum(), inputs, allow_unused=True))


def _run_forced(attn: SynthesizerAttention, mode: str, x: torch.Tensor, mask) -> torch.Tensor:
    """attn(x, mask) with the fused branch forced to ``mode``; asserts the forced branch ran."""
    paths.reset_path_calls()
    with fast_path_settings(fused=mode):
        y = attn(x, mask)
    branch = "fused" if mode == "always" else "blocks"
    ran = paths.path_calls()
    assert ran[branch] > 0 and ran["blocks" if branch == "fused" else "fused"] == 0, ran
    return y


def _assert_same(a: list, b: list, atol: float) -> None:
    for ga, gb in zip(a, b, strict=True):
        if ga is None or gb is None:  # a parameter the output does not read (unused by both)
            assert ga is None or not ga.any()
            assert gb is None or not gb.any()
        else:
            torch.testing.assert_close(ga, gb, atol=atol, rtol=0)


@pytest.mark.parametrize("length", [MAX_LEN, MAX_LEN - 3], ids=["max_len", "shorter"])
@pytest.mark.parametrize("causal", [False, True, 3], ids=["bidir", "causal", "causal-chunks-of-3"])
@pytest.mark.parametrize("kind", FUSED_KINDS)
def test_fused_equals_the_reference_in_float64(kind, causal, length):
    """Outputs against the paper's equations (reference.py); input and parameter gradients against them too.
    Causal layers also in query chunks of 3 rows (the chunks above the diagonal skipped); the backward runs
    outside the settings block, so it must use the chunks its forward used."""
    chunks = {} if causal is True or causal is False else {"causal_chunk": causal}
    attn = build(kind, causal=bool(causal))
    x = torch.randn(3, length, D_MODEL, dtype=torch.float64, requires_grad=True)
    mask = padding(3, length)
    with fast_path_settings(**chunks):
        fast = _run_forced(attn, "always", x, mask)
    want = reference_forward(attn, x, mask)
    torch.testing.assert_close(fast, want, atol=1e-10, rtol=0)
    w = torch.randn_like(fast)
    params = list(attn.parameters())
    _assert_same(_grads(fast, w, [x, *params]), _grads(want, w, [x, *params]), atol=1e-10)


@pytest.mark.parametrize("kind", FUSED_KINDS)
def test_both_branches_agree_with_masks_and_blocks(kind):
    """Forced fused against forced stored-probability blocks, several (sample, head) blocks per call."""
    attn = build(kind, causal=True)
    x = torch.randn(3, MAX_LEN - 1, D_MODEL, dtype=torch.float64, requires_grad=True)
    mask = padding(3, MAX_LEN - 1)
    mask[0, 0] = True  # a fully masked first row in a causal layer: zeros, finite gradients
    # one sample and one head per block, and query chunks of 2 rows
    with fast_path_settings(chunk_elements=1, causal_chunk=2):
        fast = _run_forced(attn, "always", x, mask)
        blocks = _run_forced(attn, "never", x, mask)
    torch.testing.assert_close(fast, blocks, atol=1e-12, rtol=0)
    w = torch.randn_like(fast)
    params = list(attn.parameters())
    grads = _grads(fast, w, [x, *params])
    assert all(g is None or torch.isfinite(g).all() for g in grads)
    _assert_same(grads, _grads(blocks, w, [x, *params]), atol=1e-12)


@pytest.mark.parametrize("kind", FUSED_KINDS)
def test_gradcheck_through_the_fused_backward(kind):
    """``torch.autograd.gradcheck`` on a small shape: the input and every trained parameter (causal, query chunks
    of 2 rows).

    ``fast_mode``: gradcheck compares a random projection ``v^T J u`` of the numerical and analytical Jacobians
    instead of every entry (any wrong gradient is caught with probability 1 over the random ``u, v``). The entry by
    entry check of the same function is tests/attention/test_reference.py's gradcheck on the unfused path, and
    the fused gradients equal that path's to 1e-12 (the test above), so the projection is what this test adds:
    the fused backward in float64 against finite differences, at a tenth of the time."""
    gradcheck_fused_causal(kind, padding(2, 5))


def gradcheck_fused_causal(kind: str, mask: torch.Tensor | None) -> None:
    """float64 fast-mode ``gradcheck`` of a causal ``kind`` layer forced onto the fused path, chunks of 2 rows over
    5 queries of 2 samples, with the padding ``mask`` (2, 5) or none."""
    attn = build(kind, causal=True)
    names = [n for n, p in attn.named_parameters() if p.requires_grad]
    params = [attn.get_parameter(n).detach().clone().requires_grad_() for n in names]
    x = torch.randn(2, 5, D_MODEL, dtype=torch.float64, requires_grad=True)

    def fn(x, *ps):
        return functional_call(attn, dict(zip(names, ps, strict=True)), (x, mask))

    paths.reset_path_calls()
    fused.reset_backend_calls()
    with fast_path_settings(fused="always", causal_chunk=2):
        assert torch.autograd.gradcheck(fn, (x, *params), eps=1e-6, atol=1e-6, fast_mode=True)
    assert paths.path_calls()["fused"] > 0


@pytest.mark.parametrize("kind", ["D", "FD", "R+V", "D+V", "GLU", "Conv"])
def test_fused_in_float32_and_bf16(kind):
    """Tolerances: fp32 1e-5 absolute on outputs of unit scale; bf16 autocast 3e-2 (8 mantissa bits, two GEMMs)."""
    torch.manual_seed(0)
    attn = SynthesizerAttention(64, 4, 64, kind=kind, causal=False)
    x = torch.randn(4, 60, 64, requires_grad=True)
    mask = torch.zeros(4, 60, dtype=torch.bool)
    mask[1, 40:] = True
    fast = _run_forced(attn, "always", x, mask)
    blocks = _run_forced(attn, "never", x, mask)
    assert (fast - blocks).abs().max().item() < 1e-5
    g_fast, g_blocks = _grads(fast, torch.ones_like(fast), [x]), _grads(blocks, torch.ones_like(fast), [x])
    assert (g_fast[0] - g_blocks[0]).abs().max().item() < 1e-4
    with torch.autocast("cpu", dtype=torch.bfloat16):
        fast16 = _run_forced(attn, "always", x, mask)
    assert fast16.dtype == torch.bfloat16
    assert (fast16.float() - blocks).abs().max().item() < 3e-2
    (g16,) = _grads(fast16.float(), torch.ones_like(fast), [x])
    assert torch.isfinite(g16).all()


class _Recorder:
    """Wraps ``fused.keep_mask``: every (seed, block) it was asked for, and the masks it returned."""

    def __init__(self, real):
        self.real, self.masks, self.calls = real, {}, []

    def __call__(self, seed, block, shape, p, like):
        mask = self.real(seed, block, shape, p, like)
        self.calls.append((seed, block))
        if (seed, block) in self.masks:
            assert torch.equal(self.masks[(seed, block)], mask), "the backward drew another dropout mask"
        self.masks[(seed, block)] = mask
        return mask


@pytest.mark.parametrize("kind", ["D", "FD", "R+V", "D+V", "GLU", "Conv"])
def test_dropout_mask_is_the_same_in_forward_and_backward(kind, monkeypatch):
    """Dropout on: the backward regenerates the forward's masks, and the result equals the plain path with the
    recorded mask applied by hand (outputs and gradients)."""
    recorder = _Recorder(fused.keep_mask)
    monkeypatch.setattr(fused, "keep_mask", recorder)
    p = 0.4
    attn = build(kind, causal=True)
    attn.dropout = p
    attn.train()
    b, t = 3, MAX_LEN
    x = torch.randn(b, t, D_MODEL, dtype=torch.float64, requires_grad=True)
    mask = padding(b, t)
    # several blocks, each with its own mask, and several query chunks per block
    with fast_path_settings(chunk_elements=1, causal_chunk=3):
        y = _run_forced(attn, "always", x, mask)
        size = blocks.block_size(attn.n_heads, b, t, t, None)
        plan = fused._Plan(None, attn.synth.query_rows, None, None, size, p, t, t)
    forward_calls = list(recorder.calls)
    w = torch.randn_like(y)
    params = list(attn.parameters())
    grads = _grads(y, w, [x, *params])
    assert recorder.calls[len(forward_calls) :] == forward_calls  # backward asked for the same (seed, block)s
    # the plain path with the recorded masks: probabilities * keep / (1 - p), then @ V and the projection
    keep = torch.zeros(b, attn.n_heads, t, t, dtype=torch.bool)  # above the diagonal: never drawn, never read
    seed = forward_calls[0][0]
    chunks = plan.chunks()
    assert len(chunks) == 3
    for n, rows, hs in plan.blocks(b, attn.n_heads):
        for c, (q0, q1, keys) in enumerate(chunks):
            keep[rows, hs, q0:q1, :keys] = recorder.masks[(seed, n * len(chunks) + c)]
    allowed = torch.ones(t, t).tril().bool()
    assert 0.25 < 1 - keep[..., allowed].float().mean().item() < 0.55  # the masks really drop about p
    attn.eval()  # the plain path without its own dropout
    probs = attn.probabilities(x, 0, None, mask)
    v = attn.value(x).view(b, t, attn.n_heads, -1).transpose(1, 2)  # (B, H, T, d_h)
    o = (probs * keep / (1 - p)) @ v  # (B, H, T, d_h)
    want = attn.out(o.transpose(1, 2).reshape(b, t, -1))  # (B, H, T, d_h) -> (B, T, d)
    torch.testing.assert_close(y, want, atol=1e-12, rtol=0)
    _assert_same(grads, _grads(want, w, [x, *params]), atol=1e-12)


def test_settings_reject_unknown_modes():
    with pytest.raises(ValueError, match="'auto', 'always' or 'never'"), fast_path_settings(fused="sometimes"):
        pass


@pytest.mark.parametrize("kind", FUSED_KINDS)
def test_query_rows_contract(kind):
    """``query_rows(f, q0, q1)`` gives the logits' (q0:q1, :q1) corner for every kind (what causal chunks read)."""
    attn = build(kind, causal=True)
    x = torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64)
    synth = attn.synth
    factors = synth.logit_factors(x, 0)
    full = synth.logits_from_factors(factors, MAX_LEN)
    for q0, q1 in ((0, 3), (3, 6), (6, MAX_LEN)):
        part = synth.logits_from_factors(synth.query_rows(factors, q0, q1), q1)
        torch.testing.assert_close(part.expand(2, -1, -1, -1), full[..., q0:q1, :q1].expand(2, -1, -1, -1))


def test_auto_mode_fuses_training_calls_from_the_measured_lengths():
    keys, causal_keys = DEFAULTS.fuse_min_keys, DEFAULTS.fuse_min_keys_causal
    assert not fused.should_fuse(True, keys - 1)
    assert fused.should_fuse(True, keys)
    assert not fused.should_fuse(True, causal_keys - 1, causal=True)
    assert fused.should_fuse(True, causal_keys, causal=True)
    assert not fused.should_fuse(False, 4 * keys)  # inference: nothing to save for a backward
    with fast_path_settings(fused="always"):
        assert fused.should_fuse(False, 1)
    with fast_path_settings(fused="never"):
        assert not fused.should_fuse(True, 4 * keys)


def test_auto_mode_takes_the_fused_path_for_a_long_training_call():
    attn = build("D+V")
    paths.reset_path_calls()
    with fast_path_settings(fuse_min_keys=MAX_LEN):
        attn(torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64)).sum().backward()
        assert paths.path_calls()["fused"] == 1
        with torch.no_grad():
            attn(torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64))
    assert paths.path_calls()["blocks"] == 1
