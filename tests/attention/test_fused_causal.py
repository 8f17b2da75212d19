"""Causal fused layers with each query chunk's mask analysed once per forward (``fused.ChunkMask``).

The torch kernels fill only a chunk's diagonal square when padding masks none of the keys before it, and zero
fully masked rows only in chunks that have some. ``fast_path_settings(causal_diagonal_mask=False)`` runs the
previous code (the whole chunk filled, fully masked rows searched in every block): the two must agree bitwise,
forward and backward, dropout included.
"""

from __future__ import annotations

import pytest
import torch

from synthformer.attention.fast import fused
from synthformer.attention.fast.settings import fast_path_settings

from .conftest import D_MODEL, MAX_LEN, build, padding
from .reference import reference_forward
from .test_fused import FUSED_KINDS, _assert_same, _grads, _run_forced, gradcheck_fused_causal


def _forward_backward(attn, x, mask, diagonal: bool) -> list[torch.Tensor | None]:
    """Output and the gradients of x and every parameter, fused forced, query chunks of 3 rows, one sample and
    one head per block; dropout's seed drawn after the same manual_seed."""
    torch.manual_seed(1)
    with fast_path_settings(chunk_elements=1, causal_chunk=3, causal_diagonal_mask=diagonal):
        y = _run_forced(attn, "always", x, mask)
    w = torch.arange(y.numel(), dtype=y.dtype).reshape(y.shape).sin()
    return [y, *_grads(y, w, [x, *attn.parameters()])]


@pytest.mark.parametrize("padded", [False, True], ids=["causal-only", "padded"])
@pytest.mark.parametrize("kind", FUSED_KINDS)
def test_diagonal_mask_is_bitwise_the_previous_code(kind, padded):
    """float32, dropout on, a length that is not a multiple of the chunk: outputs and gradients identical."""
    attn = build(kind, causal=True, dtype=torch.float32)
    attn.dropout = 0.3
    attn.train()
    length = MAX_LEN - 1  # chunks of 3, 3 and 1 rows
    x = torch.randn(3, length, D_MODEL, requires_grad=True)
    mask = padding(3, length) if padded else None
    new = _forward_backward(attn, x, mask, diagonal=True)
    old = _forward_backward(attn, x, mask, diagonal=False)
    for a, b in zip(new, old, strict=True):
        assert (a is None and b is None) or torch.equal(a, b)


def test_chunk_masks_fill_only_what_they_must():
    """Causal only: chunks past the first fill their diagonal square and have no fully masked row; padding on the
    left: every key column from 0 is filled, and the rows whose keys are all padding are found once."""
    causal = torch.ones(7, 7, dtype=torch.bool).triu(1)[None, None]  # (1, 1, T, S)
    first, second = fused.chunk_mask(causal, 0, 3), fused.chunk_mask(causal, 3, 6)
    assert first.start == 0 and first.empty is None and torch.equal(first.fill, causal[..., :3, :3])
    assert second.start == 3 and second.empty is None and torch.equal(second.fill, causal[..., 3:6, 3:6])
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[1, :4] = True  # left padding: sample 1's queries 0-3 see only padding
    mask = causal | pad[:, None, None, :]  # (B, 1, T, S)
    second = fused.chunk_mask(mask, 3, 6)
    assert second.start == 0 and torch.equal(second.fill, mask[..., 3:6, :6])
    assert second.empty[:, 0, :, 0].tolist() == [[False, False, False], [True, False, False]]


@pytest.mark.parametrize("kind", FUSED_KINDS)
def test_causal_without_padding_equals_the_reference_in_float64(kind):
    """The diagonal-only fill against the paper's equations: no padding mask, chunks of 3 over 7 queries."""
    attn = build(kind, causal=True)
    x = torch.randn(2, MAX_LEN - 1, D_MODEL, dtype=torch.float64, requires_grad=True)
    with fast_path_settings(causal_chunk=3):
        fast = _run_forced(attn, "always", x, None)
    want = reference_forward(attn, x, None)
    torch.testing.assert_close(fast, want, atol=1e-10, rtol=0)
    w = torch.randn_like(fast)
    params = list(attn.parameters())
    _assert_same(_grads(fast, w, [x, *params]), _grads(want, w, [x, *params]), atol=1e-10)


@pytest.mark.parametrize("kind", ["D", "FD", "R+V"])
def test_gradcheck_causal_without_padding(kind):
    """float64 ``gradcheck`` (fast mode) through the diagonal-only fill, chunks of 2 over 5 queries."""
    gradcheck_fused_causal(kind, None)
