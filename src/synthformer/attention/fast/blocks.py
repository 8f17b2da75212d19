"""The materialized paths: the logits of a (samples, heads) block at a time, three ways.

Kinds that are neither shared nor served by SDPA (``R+V``, ``R+D``, ``FD``, the convolutions, and the feature
kinds at the lengths where materializing measured faster) compute their L x L logits. They do so in **blocks** of
a few samples, or of one sample and a few heads (``chunk_elements``): the logits of a sample's head depend on that
sample's and head's factors alone (``SynthesizingFunction.logit_factors``), so the result is the same, but each
block's logits, probabilities and their gradients stay in the CPU's caches instead of streaming a (B, H, L, L)
tensor through memory once per operation. Three paths share that cut:

* :func:`attend_blocks`: the probabilities of each block are stored for the backward pass (autograd);
* :func:`attend_fused`: ``fused.FusedAttention``, which recomputes them in the backward instead (and skips the
  chunks above the diagonal of causal layers);
* :func:`attend_triton`: one Triton kernel on CUDA (``triton_kernels``), no L x L probabilities at all.

Which serves a call is the rules' business (:mod:`.rules`); the measurements behind the block size and the
thresholds are in docs/benchmarks.md, "Why the fast paths look the way they do".
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ..masking import disallowed, masked_softmax
from ..paths import AttentionCall
from . import fused, triton_kernels
from .dropout_masks import dropout
from .feature_form import feature_logits, feature_rows
from .settings import current

__all__ = ["attend_blocks", "attend_fused", "attend_triton", "block_size", "materialized_factors"]


def block_size(n_heads: int, batch: int, t: int, s: int, state: dict | None) -> tuple[int, int]:
    """(samples, heads) per block, so that a block's (samples, heads, T, S) logits hold about ``chunk_elements``.

    Whole samples while one fits, else one sample and the largest divisor of H that fits (equal blocks).
    Decoding (``state`` given) is one block: its state holds the whole batch. The settings' ``block_size``, when
    set, overrides the rule (outside decoding).
    """
    if state is not None:
        return batch, n_heads
    settings = current()
    if settings.block_size is not None:
        return settings.block_size
    per_head, budget = t * s, settings.chunk_elements
    if n_heads * per_head <= budget:
        return max(1, budget // (n_heads * per_head)), n_heads
    fit = max(1, budget // per_head)
    return 1, max(h for h in range(1, fit + 1) if n_heads % h == 0)


def materialized_factors(call: AttentionCall) -> tuple[tuple, Callable, Callable, bool]:
    """``(factors, combine, rows, features)`` of ``call``: the tensors its logits are built from, the function
    that builds a block's logits from them (``combine(block_factors, keys)``), the one that cuts them to a
    chunk of queries (``rows(factors, q0, q1)``), and whether they are the feature pair ``(q, k)``.

    A kind with a feature form gives its features (one GEMM over the concatenated features of a mixture's parts);
    any other kind its ``logit_factors``."""
    synth = call.synth
    if synth.has_features:
        return call.features(), feature_logits, feature_rows, True
    factors = synth.logit_factors(call.x, call.start, call.state, call.key_padding_mask)
    return factors, synth.logits_from_factors, synth.query_rows, False


def _grid(tree, batch: int, heads: int, size: tuple[int, int], n: tuple[int, int]):
    """Each tensor of a nested tuple -> its blocks ``[i][j]`` (samples i, heads j).

    Axis 0 is split when it has the batch's size and axis 1 when it has the heads' (shared axes of size 1 are
    repeated). ``split`` keeps autograd cheap: one backward concatenation, not a zero-filled tensor per slice.
    """
    if isinstance(tree, tuple):
        return tuple(_grid(t, batch, heads, size, n) for t in tree)
    if tree is None:
        return [[None] * n[1]] * n[0]
    rows = tree.split(size[0]) if tree.shape[0] == batch else [tree] * n[0]
    return [list(r.split(size[1], 1)) if r.shape[1] == heads else [r] * n[1] for r in rows]


def _block(grid, i: int, j: int):
    """Block (i, j) of a tree made by :func:`_grid`."""
    if isinstance(grid, tuple):
        return tuple(_block(g, i, j) for g in grid)
    return grid[i][j]


def _mask(call: AttentionCall) -> Tensor | None:
    """(B|1, 1, T, S) bool, True where a query may not attend, or None."""
    return disallowed(call.queries, call.keys, call.start, call.layer.causal, call.key_padding_mask, call.v.device)


def attend_blocks(call: AttentionCall) -> Tensor:
    """``dropout(softmax(mask(logits))) @ v`` one (samples, heads) block at a time, the probabilities stored for
    autograd: (B, H, T, d_h).

    Heads are the outer loop, so a batch-shared factor block (R's) gets its gradient summed while it is hot.
    """
    factors, combine, _, _ = materialized_factors(call)
    v, s = call.v, call.keys
    b, heads = v.shape[:2]
    size = block_size(heads, b, call.queries, s, call.state)
    drop = call.drop
    n = (-(-b // size[0]), -(-heads // size[1]))  # blocks along samples and heads (ceil)
    grid = _grid((factors, v, _mask(call)), b, heads, size, n)
    out = [[None] * n[1] for _ in range(n[0])]
    for j in range(n[1]):
        for i in range(n[0]):
            fac, vb, mb = _block(grid, i, j)
            probs = masked_softmax(combine(fac, s), mb)  # (samples, heads, T, S)
            out[i][j] = dropout(probs, drop) @ vb  # (samples, heads, T, d_h); drop is 0 outside training
    rows = [r[0] if n[1] == 1 else torch.cat(r, 1) for r in out]
    return rows[0] if n[0] == 1 else torch.cat(rows)  # (B, H, T, d_h); one block needs no copy


def attend_fused(call: AttentionCall) -> Tensor:
    """The blocks through ``fused.FusedAttention`` (probabilities recomputed in the backward): (B, H, T, d_h)."""
    factors, combine, rows, _ = materialized_factors(call)
    v = call.v
    b, heads = v.shape[:2]
    size = block_size(heads, b, call.queries, call.keys, call.state)
    causal = call.layer.causal
    return fused.fused_attention(combine, factors, v, _mask(call), size, call.drop, rows if causal else None)


def attend_triton(call: AttentionCall) -> Tensor:
    """One Triton kernel (CUDA, or the interpreter in tests), no L x L probabilities; takes no dropout:
    (B, H, T, d_h)."""
    factors, _, _, features = materialized_factors(call)
    q, k, bias = triton_kernels.split_logits(call.synth, factors, call.keys, features)
    return triton_kernels.triton_attention(q, k, bias, call.v, call.key_padding_mask, call.layer.causal)
