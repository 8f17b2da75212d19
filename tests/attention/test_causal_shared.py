"""``attention.causal_shared``: causal training of the input-independent kinds by query chunks below the diagonal,
against the paper's equations (``reference.reference_forward``), float64 gradcheck, dropout and the dispatch."""

from __future__ import annotations

import pytest
import torch

from synthformer.attention import SynthesizerAttention, paths
from synthformer.attention.fast.causal_shared import causal_shared_attention
from synthformer.attention.fast.dropout_masks import keep_mask
from synthformer.attention.fast.settings import fast_path_settings

from .conftest import ALL_KINDS, D_MODEL, HEADS, MAX_LEN, build, padding
from .reference import reference_forward
from .test_fused import _assert_same, _grads

with torch.random.fork_rng(devices=[]):
    #: the kinds whose logits depend on no token (R, Fix, FR and their mixtures): the shared-alignment path
    SHARED_KINDS = [
        k for k in ALL_KINDS if not SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind=k).synth.input_dependent
    ]


def test_the_shared_kinds_are_the_papers_input_independent_ones():
    assert {"R", "Fix", "FR"} <= set(SHARED_KINDS)
    assert not {"V", "D", "R+V"} & set(SHARED_KINDS)


def _chunked(attn: SynthesizerAttention, x: torch.Tensor, mask=None, chunk: int = 3) -> torch.Tensor:
    paths.reset_path_calls()
    with fast_path_settings(causal_shared_min_len=0, causal_chunk=chunk):
        return attn(x, mask)


@pytest.mark.parametrize("length", [MAX_LEN, MAX_LEN - 1, 2], ids=["max_len", "odd", "two"])
@pytest.mark.parametrize("kind", SHARED_KINDS)
def test_causal_chunks_equal_the_reference_with_gradients(kind, length):
    """Chunks of 3 rows (the last one shorter at 7 and 8 positions, one partial chunk at 2): forward and every
    gradient equal the paper's equations computed position by position in float64."""
    attn = build(kind, causal=True)
    x = torch.randn(3, length, D_MODEL, dtype=torch.float64, requires_grad=True)
    fast = _chunked(attn, x)
    assert paths.path_calls()["causal_shared"] == 1, paths.path_calls()
    want = reference_forward(attn, x, None)
    torch.testing.assert_close(fast, want, atol=1e-10, rtol=0)
    w = torch.randn_like(fast)
    params = [x, *attn.parameters()]
    _assert_same(_grads(fast, w, params), _grads(want, w, params), atol=1e-10)


def _naive(logits: torch.Tensor, v: torch.Tensor, keep: torch.Tensor | None, drop: float) -> torch.Tensor:
    """The whole-matrix causal computation in plain autograd: (H, L, L), (H, L, N) -> (H, L, N)."""
    length = logits.shape[-1]
    above = torch.ones(length, length, dtype=torch.bool).triu(1)
    probs = torch.softmax(logits.masked_fill(above, float("-inf")), dim=-1)
    if keep is not None:
        probs = probs * keep / (1.0 - drop)
    return probs @ v


def test_gradcheck_float64():
    logits = torch.randn(2, 5, 5, dtype=torch.float64, requires_grad=True)
    v = torch.randn(2, 5, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda s, u: causal_shared_attention(s, u, chunk=2), (logits, v))
    torch.testing.assert_close(causal_shared_attention(logits, v, 2), _naive(logits, v, None, 0.0))


def test_dropout_one_mask_per_forward_applied_and_differentiated_exactly():
    """The keep masks are the chunks' draws of ``dropout_masks.keep_mask`` in order (redrawn here from the same
    seed): the output and both gradients equal the whole-matrix computation with those masks."""
    heads, length, width, chunk, drop = 2, 7, 4, 3, 0.3
    logits = torch.randn(heads, length, length, dtype=torch.float64, requires_grad=True)
    v = torch.randn(heads, length, width, dtype=torch.float64, requires_grad=True)
    torch.manual_seed(5)
    out = causal_shared_attention(logits, v, chunk, drop)
    torch.manual_seed(5)
    keep = torch.zeros(heads, length, length, dtype=torch.bool)
    for q0 in range(0, length, chunk):
        q1 = min(q0 + chunk, length)
        keep[:, q0:q1, :q1] = keep_mask((heads, q1 - q0, q1), drop, "cpu")
    assert not keep.all() and keep.any()
    want = _naive(logits, v, keep, drop)
    torch.testing.assert_close(out, want, atol=1e-12, rtol=0)
    w = torch.randn_like(out)
    _assert_same(_grads(out, w, [logits, v]), _grads(want, w, [logits, v]), atol=1e-12)


@pytest.mark.parametrize("kind", SHARED_KINDS)
def test_bf16_autocast_trains_and_stays_near_float32(kind):
    """Under CPU bf16 autocast the forward's GEMMs take bf16 values and fp32 probabilities; the backward runs
    under the same autocast, and every gradient is within bf16's precision of the float32 one."""
    attn = build(kind, causal=True, dtype=torch.float32)
    x = torch.randn(3, MAX_LEN, D_MODEL, requires_grad=True)
    params = [x, *attn.parameters()]
    want = _chunked(attn, x)
    w = torch.randn_like(want)
    expected = _grads(want, w, params)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = _chunked(attn, x)
    assert paths.path_calls()["causal_shared"] == 1
    grads = _grads(got.float(), w, params)
    torch.testing.assert_close(got.float(), want, atol=3e-2, rtol=3e-2)
    for g, e in zip(grads, expected, strict=True):
        assert g is not None and g.dtype == torch.float32
        torch.testing.assert_close(g, e, atol=5e-2, rtol=5e-2)


def test_a_padded_batch_eval_and_short_inputs_keep_the_whole_matrix_path():
    attn = build("R", causal=True)
    x = torch.randn(3, MAX_LEN, D_MODEL, dtype=torch.float64)
    want = reference_forward(attn, x, padding(3, MAX_LEN))
    torch.testing.assert_close(_chunked(attn, x, padding(3, MAX_LEN)), want, atol=1e-10, rtol=0)
    assert paths.path_calls()["causal_shared"] == 0  # padding: the ratio path
    with torch.no_grad():
        _chunked(attn, x)
    assert paths.path_calls()["causal_shared"] == 0  # no gradients: the cached probabilities
    paths.reset_path_calls()
    with fast_path_settings(causal_shared_min_len=MAX_LEN + 1):
        attn(x.requires_grad_())
    assert paths.path_calls()["causal_shared"] == 0  # shorter than the setting's length
    bidirectional = build("R")
    _chunked(bidirectional, x)
    assert paths.path_calls()["causal_shared"] == 0


@pytest.mark.parametrize(("logits", "v", "chunk", "message"), [
    ((2, 5, 4), (2, 5, 3), 2, r"logits must be \(H, L, L\) and v \(H, L, N\).*\(2, 5, 4\) and \(2, 5, 3\)"),
    ((3, 5, 5), (2, 5, 3), 2, r"same H and L, got \(3, 5, 5\)"),
    ((2, 5, 5), (2, 5, 3), 0, "chunk must be at least 1, got 0"),
])
def test_bad_shapes_and_chunks_are_named(logits, v, chunk, message):
    with pytest.raises(ValueError, match=message):
        causal_shared_attention(torch.randn(logits), torch.randn(v), chunk)


def test_the_setting_is_checked():
    with pytest.raises(ValueError, match="causal_shared_min_len must be at least 0, got -1"):
        with fast_path_settings(causal_shared_min_len=-1):
            pass
