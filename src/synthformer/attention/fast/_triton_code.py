"""Triton kernels of :mod:`.triton_kernels` (imported on first use only: it imports ``triton``).

Logits ``s = q k^T + bias`` for one (sample, head) and a block of queries; masks (key padding, causal, keys past
S) set ``-inf``. Forward: online softmax over key blocks (running max m, sum l, rescaled accumulator), storing
the output and the row log-sum-exp. Backward: P recomputed as ``exp(s - lse)``; ``dS = P (dP - delta)`` with
``delta = rowsum(dO * O)``; one kernel per key block for dK, dV and dBias, one per query block for dQ.
Widths are padded to powers of two inside the kernels by masked loads (D's e = d_h + 1 needs no copy).
Every tensor is addressed through its strides, so a batch-shared k or bias comes in expanded (stride 0).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor

# The kernels read the block sizes as globals, which compiled Triton (3.x) accepts only for tl.constexpr
# instances ("Cannot access global variable BLOCK_M ... only constexpr", seen on an H100 with Triton 3.6; the CPU
# interpreter does not check it); the host code computes its grids from the plain ints.
_BLOCK_M_INT = 32
_BLOCK_N_INT = 32
BLOCK_M = tl.constexpr(_BLOCK_M_INT)
BLOCK_N = tl.constexpr(_BLOCK_N_INT)


@triton.jit
def _logits(Q, K, BIAS, PAD, b, h, offs_m, offs_n, T, S, E,
            sqb, sqh, sqt, sqe, skb, skh, sks, ske, sbb, sbh, sbt, sbs, spb, sps,
            EP: tl.constexpr, HAS_QK: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_PAD: tl.constexpr,
            CAUSAL: tl.constexpr, PREC: tl.constexpr):
    """The masked (BLOCK_M, BLOCK_N) fp32 logits of queries offs_m against keys offs_n; -inf where disallowed."""
    s = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if HAS_QK:
        offs_e = tl.arange(0, EP)
        q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None] * sqt + offs_e[None, :] * sqe,
                    mask=(offs_m[:, None] < T) & (offs_e[None, :] < E), other=0.0)
        k = tl.load(K + b * skb + h * skh + offs_n[:, None] * sks + offs_e[None, :] * ske,
                    mask=(offs_n[:, None] < S) & (offs_e[None, :] < E), other=0.0)
        s += tl.dot(q, tl.trans(k), input_precision=PREC).to(tl.float32)
    if HAS_BIAS:
        s += tl.load(BIAS + b * sbb + h * sbh + offs_m[:, None] * sbt + offs_n[None, :] * sbs,
                     mask=(offs_m[:, None] < T) & (offs_n[None, :] < S), other=0.0).to(tl.float32)
    keep = (offs_n[None, :] < S) & (offs_m[:, None] < T)
    if HAS_PAD:
        pad = tl.load(PAD + b * spb + offs_n * sps, mask=offs_n < S, other=1)
        keep = keep & (pad == 0)[None, :]
    if CAUSAL:
        keep = keep & (offs_n[None, :] <= offs_m[:, None])
    return tl.where(keep, s, float("-inf"))


@triton.jit
def _forward_kernel(Q, K, BIAS, PAD, V, O, LSE, H, T, S, E, DV,
                    sqb, sqh, sqt, sqe, skb, skh, sks, ske, sbb, sbh, sbt, sbs, spb, sps, svb, svh, svs, svd,
                    EP: tl.constexpr, DP: tl.constexpr, HAS_QK: tl.constexpr, HAS_BIAS: tl.constexpr,
                    HAS_PAD: tl.constexpr, CAUSAL: tl.constexpr, PREC: tl.constexpr):
    m_block, bh = tl.program_id(0), tl.program_id(1)
    b, h = bh // H, bh % H
    offs_m = m_block * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, DP)
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, DP), tl.float32)
    end = tl.minimum(S, (m_block + 1) * BLOCK_M) if CAUSAL else S  # causal: no key block above the diagonal
    for n0 in range(0, end, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        s = _logits(Q, K, BIAS, PAD, b, h, offs_m, offs_n, T, S, E, sqb, sqh, sqt, sqe, skb, skh, sks, ske,
                    sbb, sbh, sbt, sbs, spb, sps, EP, HAS_QK, HAS_BIAS, HAS_PAD, CAUSAL, PREC)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row with nothing allowed yet stays at 0
        p = tl.exp(s - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        v = tl.load(V + b * svb + h * svh + offs_n[:, None] * svs + offs_d[None, :] * svd,
                    mask=(offs_n[:, None] < S) & (offs_d[None, :] < DV), other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PREC).to(tl.float32)
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_new
    out = tl.where(l_i[:, None] > 0, acc / tl.where(l_i > 0, l_i, 1.0)[:, None], 0.0)  # fully masked rows: 0
    row = bh * T + offs_m
    tl.store(O + row[:, None] * DV + offs_d[None, :], out, mask=(offs_m[:, None] < T) & (offs_d[None, :] < DV))
    lse = tl.where(l_i > 0, m_i + tl.log(tl.where(l_i > 0, l_i, 1.0)), float("inf"))  # inf: P = 0 in backward
    tl.store(LSE + row, lse, mask=offs_m < T)


@triton.jit
def _dkdv_kernel(Q, K, BIAS, PAD, V, DO, LSE, DELTA, DK, DV_OUT, DBIAS, H, T, S, E, DV,
                 sqb, sqh, sqt, sqe, skb, skh, sks, ske, sbb, sbh, sbt, sbs, spb, sps, svb, svh, svs, svd,
                 EP: tl.constexpr, DP: tl.constexpr, HAS_QK: tl.constexpr, HAS_BIAS: tl.constexpr,
                 HAS_PAD: tl.constexpr, CAUSAL: tl.constexpr, PREC: tl.constexpr):
    n_block, bh = tl.program_id(0), tl.program_id(1)
    b, h = bh // H, bh % H
    offs_n = n_block * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, DP)
    offs_e = tl.arange(0, EP)
    v = tl.load(V + b * svb + h * svh + offs_n[:, None] * svs + offs_d[None, :] * svd,
                mask=(offs_n[:, None] < S) & (offs_d[None, :] < DV), other=0.0)
    dv = tl.zeros((BLOCK_N, DP), tl.float32)
    dk = tl.zeros((BLOCK_N, EP), tl.float32)
    first = (n_block * BLOCK_N // BLOCK_M) * BLOCK_M if CAUSAL else 0  # queries above the diagonal read nothing
    for m0 in range(first, T, BLOCK_M):
        offs_m = m0 + tl.arange(0, BLOCK_M)
        s = _logits(Q, K, BIAS, PAD, b, h, offs_m, offs_n, T, S, E, sqb, sqh, sqt, sqe, skb, skh, sks, ske,
                    sbb, sbh, sbt, sbs, spb, sps, EP, HAS_QK, HAS_BIAS, HAS_PAD, CAUSAL, PREC)
        row = bh * T + offs_m
        lse = tl.load(LSE + row, mask=offs_m < T, other=float("inf"))
        p = tl.exp(s - lse[:, None])  # (BLOCK_M, BLOCK_N); 0 where masked
        do = tl.load(DO + row[:, None] * DV + offs_d[None, :], mask=(offs_m[:, None] < T) & (offs_d[None, :] < DV),
                     other=0.0)
        dv += tl.dot(tl.trans(p.to(do.dtype)), do, input_precision=PREC).to(tl.float32)
        dp = tl.dot(do, tl.trans(v), input_precision=PREC).to(tl.float32)
        ds = p * (dp - tl.load(DELTA + row, mask=offs_m < T, other=0.0)[:, None])
        if HAS_QK:
            q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None] * sqt + offs_e[None, :] * sqe,
                        mask=(offs_m[:, None] < T) & (offs_e[None, :] < E), other=0.0)
            dk += tl.dot(tl.trans(ds.to(q.dtype)), q, input_precision=PREC).to(tl.float32)
        if HAS_BIAS:
            tl.store(DBIAS + (bh * T + offs_m[:, None]) * S + offs_n[None, :], ds,
                     mask=(offs_m[:, None] < T) & (offs_n[None, :] < S))
    key_rows = bh * S + offs_n
    tl.store(DV_OUT + key_rows[:, None] * DV + offs_d[None, :], dv, mask=(offs_n[:, None] < S) & (offs_d[None, :] < DV))
    if HAS_QK:
        tl.store(DK + key_rows[:, None] * E + offs_e[None, :], dk, mask=(offs_n[:, None] < S) & (offs_e[None, :] < E))


@triton.jit
def _dq_kernel(Q, K, BIAS, PAD, V, DO, LSE, DELTA, DQ, H, T, S, E, DV,
               sqb, sqh, sqt, sqe, skb, skh, sks, ske, sbb, sbh, sbt, sbs, spb, sps, svb, svh, svs, svd,
               EP: tl.constexpr, DP: tl.constexpr, HAS_QK: tl.constexpr, HAS_BIAS: tl.constexpr,
               HAS_PAD: tl.constexpr, CAUSAL: tl.constexpr, PREC: tl.constexpr):
    m_block, bh = tl.program_id(0), tl.program_id(1)
    b, h = bh // H, bh % H
    offs_m = m_block * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, DP)
    offs_e = tl.arange(0, EP)
    row = bh * T + offs_m
    lse = tl.load(LSE + row, mask=offs_m < T, other=float("inf"))
    delta = tl.load(DELTA + row, mask=offs_m < T, other=0.0)
    do = tl.load(DO + row[:, None] * DV + offs_d[None, :], mask=(offs_m[:, None] < T) & (offs_d[None, :] < DV),
                 other=0.0)
    dq = tl.zeros((BLOCK_M, EP), tl.float32)
    end = tl.minimum(S, (m_block + 1) * BLOCK_M) if CAUSAL else S
    for n0 in range(0, end, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        s = _logits(Q, K, BIAS, PAD, b, h, offs_m, offs_n, T, S, E, sqb, sqh, sqt, sqe, skb, skh, sks, ske,
                    sbb, sbh, sbt, sbs, spb, sps, EP, HAS_QK, HAS_BIAS, HAS_PAD, CAUSAL, PREC)
        p = tl.exp(s - lse[:, None])
        v = tl.load(V + b * svb + h * svh + offs_n[:, None] * svs + offs_d[None, :] * svd,
                    mask=(offs_n[:, None] < S) & (offs_d[None, :] < DV), other=0.0)
        ds = p * (tl.dot(do, tl.trans(v), input_precision=PREC).to(tl.float32) - delta[:, None])
        k = tl.load(K + b * skb + h * skh + offs_n[:, None] * sks + offs_e[None, :] * ske,
                    mask=(offs_n[:, None] < S) & (offs_e[None, :] < E), other=0.0)
        dq += tl.dot(ds.to(k.dtype), k, input_precision=PREC).to(tl.float32)
    tl.store(DQ + row[:, None] * E + offs_e[None, :], dq, mask=(offs_m[:, None] < T) & (offs_e[None, :] < E))


def _args(q: Tensor | None, k: Tensor | None, bias: Tensor | None, pad: Tensor | None, v: Tensor) -> tuple:
    """Pointers and strides of the inputs (a missing one is replaced by v with zero strides, never read)."""
    q_, k_, b_ = (q if q is not None else v), (k if k is not None else v), (bias if bias is not None else v)
    p_ = pad if pad is not None else v
    qs = q.stride() if q is not None else (0, 0, 0, 0)
    ks = k.stride() if k is not None else (0, 0, 0, 0)
    bs = bias.stride() if bias is not None else (0, 0, 0, 0)
    ps = pad.stride() if pad is not None else (0, 0)
    return (q_, k_, b_, p_), (*qs, *ks, *bs, *ps, *v.stride())


def input_precision() -> str:
    """How ``tl.dot`` multiplies fp32 blocks: as PyTorch's own fp32 matmuls do. Triton's default is TF32 on
    tensor cores (10-bit mantissas), which PyTorch uses only when asked (``torch.set_float32_matmul_precision``
    "high" or "medium", or ``torch.backends.cuda.matmul.allow_tf32``): at the default "highest" the kernels would
    otherwise be less exact than the PyTorch path and SDPA they stand in for. bf16 / fp16 blocks ignore it."""
    return "ieee" if torch.get_float32_matmul_precision() == "highest" else "tf32"


def _meta(q: Tensor | None, bias: Tensor | None, pad: Tensor | None, v: Tensor, causal: bool) -> dict:
    e = q.shape[-1] if q is not None else 1
    return dict(EP=max(16, triton.next_power_of_2(e)), DP=max(16, triton.next_power_of_2(v.shape[-1])),
                HAS_QK=q is not None, HAS_BIAS=bias is not None, HAS_PAD=pad is not None, CAUSAL=causal,
                PREC=input_precision())


def forward(q, k, bias, v, pad, causal: bool) -> tuple[Tensor, Tensor]:
    """Output (B, H, T, d_h) in v's dtype and the row log-sum-exp (B, H, T) fp32 (inf on fully masked rows)."""
    b, h, s, dv = v.shape
    t = q.shape[2] if q is not None else bias.shape[2]
    e = q.shape[-1] if q is not None else 1
    out = torch.empty(b, h, t, dv, device=v.device, dtype=v.dtype)
    lse = torch.empty(b, h, t, device=v.device, dtype=torch.float32)
    (q_, k_, b_, p_), strides = _args(q, k, bias, pad, v)
    grid = (triton.cdiv(t, _BLOCK_M_INT), b * h)
    _forward_kernel[grid](q_, k_, b_, p_, v, out, lse, h, t, s, e, dv, *strides, **_meta(q, bias, pad, v, causal))
    return out, lse


def backward(q, k, bias, v, pad, out, lse, d_out, causal: bool) -> tuple:
    """(dq, dk, dbias, dv), each full-batch (callers' autograd sums a broadcast input's gradient)."""
    b, h, s, dv_width = v.shape
    t = out.shape[2]
    e = q.shape[-1] if q is not None else 1
    delta = (d_out.float() * out.float()).sum(-1).contiguous()  # (B, H, T): rowsum(dO * O)
    f32 = dict(device=v.device, dtype=torch.float32)
    dv = torch.empty(b, h, s, dv_width, **f32)
    dk = torch.empty(b, h, s, e, **f32) if q is not None else None
    dbias = torch.zeros(b, h, t, s, **f32) if bias is not None else None  # causal: tiles above stay 0
    (q_, k_, b_, p_), strides = _args(q, k, bias, pad, v)
    meta = _meta(q, bias, pad, v, causal)
    dummy = dv
    _dkdv_kernel[(triton.cdiv(s, _BLOCK_N_INT), b * h)](
        q_, k_, b_, p_, v, d_out, lse, delta, dk if dk is not None else dummy, dv,
        dbias if dbias is not None else dummy, h, t, s, e, dv_width, *strides, **meta
    )
    dq = None
    if q is not None:
        dq = torch.empty(b, h, t, e, **f32)
        _dq_kernel[(triton.cdiv(t, _BLOCK_M_INT), b * h)](
            q_, k_, b_, p_, v, d_out, lse, delta, dq, h, t, s, e, dv_width, *strides, **meta
        )
    return (
        None if dq is None else dq.to(q.dtype),
        None if dk is None else dk.to(k.dtype),
        None if dbias is None else dbias.to(bias.dtype),
        dv.to(v.dtype),
    )
