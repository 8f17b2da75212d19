"""The causal shared alignment in query chunks: at and below the diagonal only.

Input-independent kinds (``R``, ``Fix``, ``FR`` below ``fr_sdpa_min_len`` and their mixtures) compute their
(H, L, L) probabilities once per forward and apply them to the folded batch (``shared_alignment``). In a causal
layer half of those logits are masked, yet the whole-matrix path fills them, takes the softmax over every key and
multiplies the zeros in the forward GEMM and in both backward GEMMs, so causal R trained no faster than
bidirectional R (docs/benchmarks.md, "Causal against bidirectional training"). Here query chunk ``[q0, q1)`` reads keys
``[0, q1)`` only: the logits' corner ``S[:, q0:q1, :q1]``, masked in its diagonal square alone (every row of the
chunk may see keys ``[0, q0)``), its softmax ``P_c`` and ``P_c @ V[:, :q1]`` over the folded batch.

The backward is written out (a custom autograd Function), because autograd through per-chunk slices of ``S``
would allocate a zero (H, L, L) gradient per chunk: with ``dO_c`` the output gradient of the chunk's rows,
``dV[:, :q1] += P_c^T dO_c``, ``dP_c = dO_c V[:, :q1]^T`` and ``dS_c = P_c * (dP_c - rowsum(P_c * dP_c))`` (the
softmax's backward), written into one zero (H, L, L) gradient of the logits that autograd carries on to R, FR's
factors or the mixture's parts. The probabilities of the lower triangle are stored for the backward (about half
of what the whole-matrix path stores).

Choices: attention dropout draws one keep mask per forward for the shared alignment, the same for every sample
(as the whole-matrix path does, so that the alignment stays shared); the mask is stored for the backward (bool,
lower triangle). Padding is not handled here: a padded batch keeps the whole-matrix ratio path (per-sample
padding would end the sharing of the chunks' probabilities).
"""

from __future__ import annotations

import torch
from torch import Tensor

from .dropout_masks import keep_mask
from .fused import ChunkMask, _softmax_rows_, autocast_state, under_autocast


def _chunks(length: int, size: int) -> list[tuple[int, int]]:
    return [(q0, min(q0 + size, length)) for q0 in range(0, length, size)]


def _chunk_probs(logits: Tensor, q0: int, q1: int) -> Tensor:
    """softmax over keys ``[0, q1)`` of query rows ``[q0, q1)`` with the causal mask: (H, q1 - q0, q1).

    The fused path's row kernel with a :class:`~.fused.ChunkMask` that fills only the diagonal square (keys
    ``[0, q0)`` are allowed for every row) and zeroes no row (each query sees itself)."""
    corner = logits[:, q0:q1, :q1].clone()  # (H, c, q1); the caller's logits stay untouched, softmax in place
    above = torch.ones(q1 - q0, q1 - q0, dtype=torch.bool, device=logits.device).triu_(1)  # (c, c) key > query
    return _softmax_rows_(corner, ChunkMask(above, q0, None))


class CausalSharedAttention(torch.autograd.Function):
    """``dropout(softmax(causal(S))) @ V_folded`` by query chunks; see the module docstring."""

    @staticmethod
    def forward(ctx, logits: Tensor, v: Tensor, chunk: int, drop: float) -> Tensor:
        h, length, width = v.shape
        out = torch.empty(h, length, width, dtype=v.dtype, device=v.device)  # (H, L, B*d_h)
        probs, keeps = [], []
        for q0, q1 in _chunks(length, chunk):
            p = _chunk_probs(logits, q0, q1)  # (H, c, q1)
            keep = None
            if drop > 0.0:
                keep = keep_mask(tuple(p.shape), drop, p.device)  # (H, c, q1), True where kept
                out[:, q0:q1] = torch.bmm(p * keep / (1.0 - drop), v[:, :q1])  # (H, c, B*d_h)
            else:
                out[:, q0:q1] = torch.bmm(p, v[:, :q1])  # (H, c, B*d_h)
            probs.append(p)
            keeps.append(keep)
        ctx.save_for_backward(v)
        ctx.probs, ctx.keeps, ctx.chunk, ctx.drop, ctx.shape = probs, keeps, chunk, drop, logits.shape
        # the backward's GEMMs run under the forward's autocast state (fp32 P against bf16 values under bf16)
        ctx.autocast = autocast_state(v.device.type)
        return out

    @staticmethod
    def backward(ctx, d_out: Tensor):
        with under_autocast(ctx.autocast):
            return CausalSharedAttention._backward(ctx, d_out)

    @staticmethod
    def _backward(ctx, d_out: Tensor) -> tuple:
        (v,) = ctx.saved_tensors
        length = v.shape[1]
        dtype = ctx.probs[0].dtype  # the logits'
        d_logits = v.new_zeros(ctx.shape, dtype=dtype) if ctx.needs_input_grad[0] else None  # (H, L, L)
        d_v = torch.zeros_like(v) if ctx.needs_input_grad[1] else None  # (H, L, B*d_h)
        scale = 1.0 / (1.0 - ctx.drop) if ctx.drop > 0.0 else 1.0
        for (q0, q1), p, keep in zip(_chunks(length, ctx.chunk), ctx.probs, ctx.keeps, strict=True):
            d_o = d_out[:, q0:q1]  # (H, c, B*d_h)
            if d_v is not None:
                applied = p if keep is None else p * keep * scale  # (H, c, q1)
                d_v[:, :q1] += torch.bmm(applied.transpose(1, 2), d_o)  # (H, q1, B*d_h)
            if d_logits is not None:
                d_p = torch.bmm(d_o, v[:, :q1].transpose(1, 2))  # (H, c, q1)
                if keep is not None:
                    d_p.mul_(keep).mul_(scale)
                row = (p * d_p).sum(-1, keepdim=True)  # (H, c, 1)
                d_logits[:, q0:q1, :q1] = d_p.sub_(row).mul_(p)  # dS = P * (dP - rowsum(P * dP))
        return d_logits, d_v, None, None


def causal_shared_attention(logits: Tensor, v: Tensor, chunk: int, drop: float = 0.0) -> Tensor:
    """Causal attention with batch-shared logits, chunk by chunk below the diagonal.

    Args:
        logits: (H, L, L), the unmasked logits of an input-independent kind (the same for every sample).
        v: (H, L, N), the values with the batch folded into the columns (``shared_alignment.fold``: N = B * d_h).
        chunk: query rows per chunk (``FastPathSettings.causal_chunk``).
        drop: attention dropout probability (one keep mask for the whole batch); 0 outside training.

    Returns:
        (H, L, N): row i is ``dropout(softmax(S_i[:i+1])) @ V[:i+1]``.
    """
    if logits.dim() != 3 or v.dim() != 3 or tuple(logits.shape) != (v.shape[0], v.shape[1], v.shape[1]):
        raise ValueError(f"logits must be (H, L, L) and v (H, L, N) with the same H and L, got "
                         f"{tuple(logits.shape)} and {tuple(v.shape)}")
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1, got {chunk}")
    return CausalSharedAttention.apply(logits, v, chunk, drop)


__all__ = ["CausalSharedAttention", "causal_shared_attention"]
