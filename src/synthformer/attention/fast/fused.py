"""Fused attention over materialized logits: ``dropout(softmax(mask(logits))) @ V`` without storing the
probabilities for the backward pass.

The forward runs one (samples, heads) block at a time (the blocks of :mod:`.blocks`, whose logits fit the CPU's
caches) and keeps only what the block's logits are built from (``SynthesizingFunction.logit_factors``: D's
hidden vectors and learned keys, FD's A and B, R itself, ...) and the output. The backward recomputes each
block's logits from those factors and P with the same softmax kernel (bitwise the forward's P), then
``dS = P * (dP - rowsum(dO * O))`` in place in a preallocated dP buffer, and hands dS to the block's logits graph
for the factors' gradients. This is the backward of FlashAttention (Dao et al., 2022) re-derived for logits
that are not a product of two thin factors; the identity ``rowsum(P * dP) == rowsum(dO * O)`` avoids a pass
over P. Tried and dropped: recomputing ``P = exp(logits - lse)`` from the row log-sum-exp instead of the softmax
(docs/benchmarks.md, section 5, "What was tried").

Dropout stays exact under recomputation: each forward draws one seed; the keep mask of block (and causal query
chunk) number n is drawn from a generator seeded with ``seed + n``, so the backward regenerates the very mask the
forward used (:func:`keep_mask`, which tests call to rebuild it).

Whether this path runs is the rule of the ``fused`` path (:mod:`.rules`, counted by the path registry,
``paths.path_calls``), driven by an explicit setting (``settings.fast_path_settings(fused="always" | "never" |
"auto")``). So is the implementation of a block's softmax, dropout and dS (``backend=``): the PyTorch functions
:func:`block_probs_` and :func:`block_grads_` here, a C++/OpenMP row kernel or the same functions under
``torch.compile`` (``fused_backends``, loaded on first use). Every block counts under the backend that really
served it (:func:`backend_calls`), so tests can check that a backend did not silently fall back.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import NamedTuple

import torch
from torch import Tensor
from torch.utils._pytree import tree_flatten, tree_unflatten

from ..masking import any_true
from . import dropout_masks
from .settings import FUSED_BACKENDS, current

#: The backends a fused block may run on (chosen by ``settings.FastPathSettings.backend``).
BACKENDS = FUSED_BACKENDS
#: Blocks (forward and backward) per backend that really served them; written by :meth:`_Plan.run_block` only.
_BACKEND_CALLS: Counter = Counter()


def backend_calls() -> Counter:
    """Blocks served per backend ("torch", "cpp", "compile") since the last :func:`reset_backend_calls` (a copy;
    absent names read 0)."""
    return Counter(_BACKEND_CALLS)


def reset_backend_calls() -> None:
    """Set every backend's block count to zero."""
    _BACKEND_CALLS.clear()


def should_fuse(needs_grad: bool, keys: int, causal: bool = False) -> bool:
    """Whether the materialized blocks over ``keys`` keys go through :class:`FusedAttention`.

    Decided by the current :class:`~synthformer.attention.fast.settings.FastPathSettings` (``fused`` mode and the
    measured ``fuse_min_keys`` thresholds). Without gradients there is nothing to save, so the plain blocks (one
    pass, no recomputation) are used.
    """
    settings = current()
    if settings.fused == "never":
        return False
    threshold = settings.fuse_min_keys_causal if causal else settings.fuse_min_keys
    return settings.fused == "always" or (needs_grad and keys >= threshold)


def keep_mask(seed: int, block: int, shape: tuple[int, ...], p: float, like: Tensor) -> Tensor:
    """The dropout keep mask of block number ``block``: bool, ``shape``, True where kept (probability 1 - p, p
    quantized to 1/65536: :mod:`.dropout_masks`).

    Drawn from a generator seeded with ``seed + block`` on ``like``'s device, so the forward and the backward
    (and a test) get the same mask.
    """
    gen = torch.Generator(device=like.device)
    gen.manual_seed(seed + block)
    return dropout_masks.keep_mask(shape, p, like.device, gen)


class ChunkMask(NamedTuple):
    """The mask of one causal query chunk ``[q0, q1)`` (over keys ``[0, q1)``), analysed once per forward.

    In a causal layer the keys ``[0, q0)`` are all allowed for every query of the chunk unless a padding mask
    disallows some, so only the chunk's diagonal square (keys ``[q0, q1)``) needs the fill; and a row can be fully
    masked only where padding covers every key up to and including its own position. Both are decided once for
    the whole batch here instead of in every (samples, heads) block: the torch kernels then fill only ``fill``'s
    columns and zero ``empty``'s rows without a check of their own.

    Attributes:
        fill: (B|1, 1, T_c, keys - start) bool, the disallowed pairs over keys ``[start, q1)``, or None.
        start: the first key column ``fill`` covers (0 when padding masks some of keys ``[0, q0)``, else q0).
        empty: (B|1, 1, T_c, 1) bool, True on fully masked rows; None when the chunk has none.
    """

    fill: Tensor | None
    start: int
    empty: Tensor | None

    def cut(self, rows: slice, batch: int) -> ChunkMask:
        """This mask for a block of samples ``rows`` (axis 0 cut when it is the batch's)."""
        every = slice(None)  # the mask's head axis has size 1: never cut (n_heads 0 below)
        return ChunkMask(_cut(self.fill, rows, every, batch, 0), self.start, _cut(self.empty, rows, every, batch, 0))


def chunk_mask(mask: Tensor, q0: int, q1: int) -> ChunkMask:
    """The :class:`ChunkMask` of causal chunk ``[q0, q1)`` of ``mask`` (B|1, 1, T, S), True where disallowed."""
    whole = mask[..., q0:q1, :q1]  # (B|1, 1, T_c, q1)
    start = q0 if q0 > 0 and not any_true(whole[..., :q0]) else 0
    fill = whole[..., start:] if any_true(whole[..., start:]) else None
    empty = None
    if fill is not None and start == 0:  # with keys [0, q0) allowed (start == q0 > 0) no row can be empty
        empty = whole.all(-1, keepdim=True)  # (B|1, 1, T_c, 1)
        empty = empty if any_true(empty) else None
    return ChunkMask(fill, start, empty)


class _Plan:
    """What the block loop needs besides tensors: block sizes, how to slice and rebuild the factors.

    ``rows`` is set for causal layers without a cache: each block then runs in query chunks, chunk
    ``[q0, q1)`` over keys ``[0, q1)`` only, so the blocks above the diagonal are never computed.
    """

    def __init__(self, combine: Callable, rows: Callable | None, spec, mask, size, drop: float, t: int, s: int):
        self.combine, self.rows, self.spec, self.mask = combine, rows, spec, mask
        self.size, self.drop, self.t, self.s = size, drop, t, s
        self.seed = 0
        # fixed at the forward: the backward may run outside the settings block the forward ran in
        settings = current()
        self.backend, self.causal_chunk = settings.backend, settings.causal_chunk
        self.other: tuple[Callable, Callable] | None | bool = False  # the backend's kernels; False: not loaded yet
        # the torch kernels take each causal chunk's mask analysed once per forward (``ChunkMask``)
        self.diagonal = rows is not None and mask is not None and settings.causal_diagonal_mask
        self.diagonal = self.diagonal and self.backend == "torch"
        self.chunk_masks = [chunk_mask(mask, q0, q1) for q0, q1, _ in self.chunks()] if self.diagonal else []

    def block_mask(self, rows: slice, hs: slice, batch: int, heads: int) -> Tensor | None:
        """The mask of a block of samples ``rows`` and heads ``hs``: (s|1, 1, T, S) or None."""
        return None if self.mask is None else _cut(self.mask, rows, hs, batch, heads)

    def chunk_mask(self, block: Tensor | None, c: int, rows: slice, batch: int) -> Tensor | ChunkMask | None:
        """What the kernels get as chunk ``c``'s mask: a ``ChunkMask`` (torch kernels, causal) or the block's mask
        cut to the chunk's queries and keys (``block``, from :meth:`block_mask`)."""
        if self.diagonal:
            return self.chunk_masks[c].cut(rows, batch)
        q0, q1, keys = self.chunks()[c]
        return None if block is None else block[..., q0:q1, :keys]

    def run_block(self, which: int, *args):
        """Kernel ``which`` (0: probs_, 1: grads_) of this call's backend on one block, the torch one where that
        backend does not serve the block (another dtype or device, a failed build or compilation); counted under
        the backend that served it."""
        served, name = None, "torch"
        if self.backend != "torch":
            if self.other is False:
                from . import fused_backends  # loaded (and a kernel built) only when another backend is asked for

                self.other = fused_backends.kernels(self.backend)  # None when it cannot be had
            served = None if self.other is None else self.other[which](*args)
            name = self.backend if served is not None else name
        if served is None:
            served = (block_probs_, block_grads_)[which](*args)
        _BACKEND_CALLS[name] += 1
        return served

    def keep(self, block: int, shape: tuple[int, ...], like: Tensor) -> Tensor | None:
        """The dropout keep mask of block-chunk number ``block`` (None without dropout)."""
        return keep_mask(self.seed, block, shape, self.drop, like) if self.drop > 0.0 else None

    def blocks(self, batch: int, heads: int) -> Iterator[tuple[int, slice, slice]]:
        """(block number, sample slice, head slice); heads outer, as in :mod:`.blocks`."""
        n = 0
        for j in range(0, heads, self.size[1]):
            for i in range(0, batch, self.size[0]):
                yield n, slice(i, i + self.size[0]), slice(j, j + self.size[1])
                n += 1

    def chunks(self) -> list[tuple[int, int, int]]:
        """(q0, q1, keys) per query chunk: the whole block, or causal chunks of ``causal_chunk`` rows."""
        if self.rows is None:
            return [(0, self.t, self.s)]
        size = self.causal_chunk
        return [(q0, min(q0 + size, self.t), min(q0 + size, self.t)) for q0 in range(0, self.t, size)]

    def factors(self, leaves: list, q0: int, q1: int):
        """The factor tree of one chunk (views of ``leaves``, a block's flattened factors)."""
        tree = tree_unflatten(leaves, self.spec)
        return tree if self.rows is None else self.rows(tree, q0, q1)


def _cut(t: Tensor | None, rows: slice, heads: slice, batch: int, n_heads: int) -> Tensor | None:
    """Block of a (B|1, H|1, ...) tensor: axis 0 cut when it is the batch's, axis 1 when it is the heads'."""
    if t is None:  # a mixture's weight slot that alpha was already folded into
        return None
    if t.shape[0] == batch:
        t = t[rows]
    return t[:, heads] if t.dim() > 1 and t.shape[1] == n_heads else t


def _softmax_rows_(logits: Tensor, mask: Tensor | ChunkMask | None) -> Tensor:
    """Masked softmax of ``logits`` (s, h, T, S), in place when ``logits`` is contiguous; returns P.

    The same kernel on the same logits in the forward and the backward gives bitwise the same P, so nothing but
    the logits' inputs needs to be kept. Disallowed pairs get the dtype's most negative value (as
    ``masking.masked_softmax``: ``-inf`` would make a fully masked row NaN), and such rows are then zeroed.
    ``mask``: (s|1, 1, T, S) bool, True where disallowed (fully masked rows found here), or a causal chunk's
    :class:`ChunkMask` (only its columns filled, its rows zeroed: bitwise the same P).
    """
    if isinstance(mask, ChunkMask):
        fill, start, empty = mask
    else:
        fill, start, empty = mask, 0, None
        if mask is not None:
            fully_masked = mask.all(-1, keepdim=True)  # (s|1, 1, T, 1)
            empty = fully_masked if any_true(fully_masked) else None
    if fill is not None:
        logits[..., start:].masked_fill_(fill, torch.finfo(logits.dtype).min)
    if logits.is_contiguous():
        probs = torch._softmax(logits, -1, False, out=logits)  # the out= overload: no second (T, S) buffer
    else:  # (D's logits are a transposed view) the kernel writes a strided out= wrongly when it aliases
        probs = torch.softmax(logits, -1)
    if empty is not None:
        probs.masked_fill_(empty, 0.0)
    return probs


def block_probs_(logits: Tensor, mask: Tensor | ChunkMask | None, keep: Tensor | None, scale: float) -> Tensor:
    """``dropout(softmax(mask(logits)))`` of a (s, h, T, S) block, in place when ``logits`` is contiguous.

    ``mask``: as :func:`_softmax_rows_`; ``keep``: (s, h, T, S) bool, True where kept, or None; ``scale``: 1 / (1 - p).
    """
    probs = _softmax_rows_(logits, mask)
    return probs if keep is None else (probs * keep).mul_(scale)


def block_grads_(
    logits: Tensor,
    mask: Tensor | ChunkMask | None,
    p: Tensor,
    dp: Tensor,
    delta: Tensor,
    keep: Tensor | None,
    scale: float,
) -> tuple[Tensor, Tensor]:
    """Recompute P from ``logits`` (s|1, h, T, S) into ``p`` (s, h, T, S); dS into ``dp`` (dO V^T on entry).

    Returns (what multiplied V in the forward, dS): ``P * keep * scale`` and ``P * (dp * keep * scale - delta)``
    with ``delta`` (s, h, T, 1) = ``rowsum(dO * O)``.
    """
    probs = _softmax_rows_(p.copy_(logits), mask)  # bitwise the forward's P
    dropped = probs
    if keep is not None:
        dropped = probs * keep * scale
        dp.mul_(keep).mul_(scale)
    return dropped, dp.sub_(delta).mul_(probs)  # dS = P (dP - delta), in place


def _own(logits: Tensor, samples: int, leaves: list[Tensor | None]) -> Tensor:
    """``logits`` as a tensor the forward may overwrite: (samples, h, T, S).

    A kind whose factors are its logits (``Conv``'s) returns a view of a saved input, and a batch-shared block
    has one sample: both are copied, so the in-place softmax never writes into a tensor the backward reads.
    """
    storage = logits.untyped_storage().data_ptr()
    if logits.shape[0] != samples or any(x is not None and x.untyped_storage().data_ptr() == storage for x in leaves):
        return logits.expand(samples, *logits.shape[1:]).clone()
    return logits


def autocast_state(device: str) -> tuple[str, torch.dtype | None]:
    """(device type, autocast dtype or None): the forward's autocast state, for :func:`under_autocast`."""
    enabled = torch.amp.is_autocast_available(device) and torch.is_autocast_enabled(device)
    return device, torch.get_autocast_dtype(device) if enabled else None


def under_autocast(state: tuple[str, torch.dtype | None]) -> AbstractContextManager:
    """Re-enter a forward's :func:`autocast_state` in a custom Function's backward (which autograd runs outside
    it); no autocast context at all when it was off (``meta`` has no autocast, even a disabled one)."""
    device, dtype = state
    return nullcontext() if dtype is None else torch.autocast(device, dtype=dtype)


class FusedAttention(torch.autograd.Function):
    """``dropout(softmax(mask(combine(factors)))) @ v`` in blocks, recomputing the probabilities in backward.

    ``forward(plan, v, *leaves)``: v (B, H, S, d_h); leaves the flattened factors (each (B|1, H|1, ...)).
    Returns (B, H, T, d_h).
    """

    @staticmethod
    def forward(ctx, plan: _Plan, v: Tensor, *leaves: Tensor) -> Tensor:
        b, heads = v.shape[:2]
        out = v.new_empty(b, heads, plan.t, v.shape[-1])
        chunks = plan.chunks()
        for n, rows, hs in plan.blocks(b, heads):
            block = [_cut(x, rows, hs, b, heads) for x in leaves]
            vb = v[rows, hs]  # (s, h, S, d_h)
            mb = plan.block_mask(rows, hs, b, heads)
            for c, (q0, q1, keys) in enumerate(chunks):
                fac = plan.factors(block, q0, q1)
                logits = _own(plan.combine(fac, keys), vb.shape[0], leaves)  # (s, h, q1-q0, keys), in place
                keep = plan.keep(n * len(chunks) + c, vb.shape[:2] + logits.shape[-2:], logits)
                probs = plan.run_block(0, logits, plan.chunk_mask(mb, c, rows, b), keep, 1.0 / (1.0 - plan.drop))
                out[rows, hs, q0:q1] = probs @ vb[:, :, :keys]  # (s, h, T_c, keys) @ (s, h, keys, d_h)
        ctx.plan = plan
        # the backward recomputes the logits under the forward's autocast state (bf16 GEMMs give bf16 logits)
        ctx.autocast = autocast_state(v.device.type)
        ctx.save_for_backward(v, out, *leaves)
        return out

    @staticmethod
    def backward(ctx, d_out: Tensor):
        with under_autocast(ctx.autocast):
            return FusedAttention._backward(ctx, d_out)

    @staticmethod
    def _backward(ctx, d_out: Tensor) -> tuple:
        plan: _Plan = ctx.plan
        v, out, *leaves = ctx.saved_tensors
        b, heads = v.shape[:2]
        d_out = d_out.contiguous()
        delta = (d_out * out).sum(-1, keepdim=True)  # (B, H, T, 1): rowsum(P * dP) == rowsum(dO * O)
        chunks = plan.chunks()
        # Without query chunks the blocks cover every (sample, head) once: v's gradient and a leaf cut on both
        # axes are written, not summed, so they need no zero fill; a leaf shared by several blocks (D's keys, R)
        # or read by several chunks accumulates.
        whole = len(chunks) == 1
        dv = (torch.empty_like(v) if whole else torch.zeros_like(v)) if ctx.needs_input_grad[1] else None
        wanted = [ctx.needs_input_grad[2 + k] for k in range(len(leaves))]
        owned = [whole and x is not None and x.shape[0] == b and x.dim() > 1 and x.shape[1] == heads for x in leaves]
        grads = [
            None if not w else torch.empty_like(x) if o else torch.zeros_like(x)
            for x, w, o in zip(leaves, wanted, owned, strict=True)
        ]
        buffers: list[Tensor] = []  # flat storage of the chunk's P and dP, allocated once, reused by every chunk
        for n, rows, hs in plan.blocks(b, heads):
            block = [_cut(x, rows, hs, b, heads) for x in leaves]
            # where each leaf's gradient goes (a leaf without one stands in for itself and is never written)
            dest = [x if g is None else _cut(g, rows, hs, b, heads) for x, g in zip(block, grads, strict=True)]
            vb_all, mb_all = v[rows, hs], plan.block_mask(rows, hs, b, heads)
            for c, (q0, q1, keys) in enumerate(chunks):
                cut, _ = tree_flatten(plan.factors(block, q0, q1))
                cut = [None if x is None else x.detach().requires_grad_(w) for x, w in zip(cut, wanted, strict=True)]
                with torch.enable_grad():
                    logits = plan.combine(tree_unflatten(cut, plan.spec), keys)  # (s|1, h, T_c, keys), with graph
                vb, gb = vb_all[:, :, :keys], d_out[rows, hs, q0:q1]
                shape = vb.shape[:2] + logits.shape[-2:]  # (s, h, T_c, keys)
                if not buffers:
                    size = vb.shape[0] * vb.shape[1] * logits.shape[-2] * plan.s
                    buffers = [logits.new_empty(size), logits.new_empty(size, dtype=torch.result_type(gb, vb))]
                p_buf, dp_buf = (t[: math.prod(shape)].view(shape) for t in buffers)
                mb = plan.chunk_mask(mb_all, c, rows, b)
                d_probs = torch.matmul(gb, vb.transpose(-1, -2), out=dp_buf)  # (s, h, T_c, keys): dO V^T
                keep = plan.keep(n * len(chunks) + c, shape, p_buf)
                # P recomputed (bitwise the forward's), what multiplied V in the forward, and dS in place of dP
                dropped, d_logits = plan.run_block(
                    1, logits.detach(), mb, p_buf, d_probs, delta[rows, hs, q0:q1], keep, 1.0 / (1.0 - plan.drop)
                )
                if dv is not None:
                    d_v = dropped.transpose(-1, -2) @ gb  # (s, h, keys, T_c) @ (s, h, T_c, d_h)
                    if whole:
                        dv[rows, hs] = d_v
                    else:
                        dv[rows, hs, :keys] += d_v
                if not any(wanted):
                    continue
                if logits.shape[0] != d_logits.shape[0]:
                    d_logits = d_logits.sum(0, keepdim=True)  # logits shared by the block's samples
                targets = [x for x, w in zip(cut, wanted, strict=True) if w]
                got = iter(torch.autograd.grad(logits, targets, d_logits, allow_unused=True))
                chunk_dest, _ = tree_flatten(plan.factors(dest, q0, q1))
                for k, w in enumerate(wanted):
                    if not w:
                        continue
                    g = next(got)
                    if g is None:
                        if owned[k]:
                            chunk_dest[k].zero_()
                    elif owned[k]:
                        chunk_dest[k].copy_(g)
                    else:
                        chunk_dest[k].add_(g)
        return (None, dv, *grads)


def fused_attention(
    combine: Callable,
    factors,
    v: Tensor,
    mask: Tensor | None,
    size: tuple[int, int],
    drop: float,
    rows: Callable | None = None,
) -> Tensor:
    """``dropout(softmax(mask(combine(factors)))) @ v`` without storing the probabilities: (B, H, T, d_h).

    Args:
        combine: ``combine(block_factors, keys)`` maps a block of ``factors`` (the same tree, each tensor cut to
            the block's samples and heads, and to a chunk's queries when ``rows`` is given) to its
            (samples|1, heads, T, keys) logits.
        factors: nested tuple of tensors (B|1, H|1, ...) and None (``SynthesizingFunction.logit_factors``).
        v: (B, H, S, d_h) values.
        mask: (B|1, 1, T, S) bool, True where disallowed, or None.
        size: (samples, heads) per block.
        drop: dropout probability on the probabilities (0 outside training).
        rows: for causal layers with T == S: ``rows(factors, q0, q1)`` gives the factors of queries
            ``[q0, q1)`` over keys ``[0, q1)`` (views; ``SynthesizingFunction.query_rows``). Blocks above the
            diagonal are then skipped.
    """
    leaves, spec = tree_flatten(factors)
    length = v.shape[2]  # no decoding cache here: T == S
    plan = _Plan(combine, rows, spec, mask, size, drop, length, length)
    if drop > 0.0:
        plan.seed = int(torch.randint(0, 2**62, ()).item())  # from the global generator: manual_seed reproduces
    return FusedAttention.apply(plan, v, *leaves)
