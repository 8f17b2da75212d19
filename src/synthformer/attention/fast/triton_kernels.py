"""The fused materialized path as Triton kernels, for CUDA: ``softmax(mask(q k^T + bias)) @ v`` forward and
backward without storing the probabilities (online softmax over key blocks, FlashAttention's algorithm, Dao et
al. 2022, re-derived here for logits that are a feature product plus an additive bias).

Every materialized kind maps onto ``q k^T + bias``: the feature kinds (D, GLU, Bottleneck and their mixtures with
V or FR) give the pair ``(q, k)`` of any width e (not the values' d_h), an input-independent part (R, Fix) gives
its logits as a bias shared by the batch, and kinds without a feature form (FD, the convolutions) give their
logits as the bias (materialized by PyTorch; the probabilities still are not). Batch-shared tensors are passed
expanded (stride 0); their gradients are summed over the batch afterwards.

Used on CUDA when ``triton`` is installed (see :mod:`.rules`); on a CPU it runs only under Triton's interpreter
(``TRITON_INTERPRET=1``, set before this module is imported) with ``fast_path_settings(triton="always")``, which
is how the tests check it. Nothing imports ``triton`` at package import time.
"""

from __future__ import annotations

import importlib.util

import torch
from torch import Tensor

from .settings import current


def available(device: torch.device) -> bool:
    """Whether the kernels serve tensors on ``device``: CUDA with ``triton`` installed, or as the current settings'
    ``triton`` says ("always": any device, "never": none; ``settings.fast_path_settings``)."""
    mode = current().triton
    if mode != "auto":
        return mode == "always"
    return device.type == "cuda" and importlib.util.find_spec("triton") is not None


def split_logits(
    synth, factors: tuple, keys: int, features: bool
) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    """``(q, k, bias)`` with ``logits == q @ k^T + bias`` for a kind's (or a feature pair's) logit factors.

    Shapes: q (B|1, H, T, e), k (B|1, H, S, e), bias (B|1, H, T, S); any may be None (no such term).
    """
    if features:
        return factors[0], factors[1], None
    from ..mixture import Mixture

    if not isinstance(factors, tuple) or not isinstance(synth, Mixture):
        return None, None, synth.logits_from_factors(factors, keys)
    qs, ks, bias = [], [], None
    for part, (weight, sub) in zip(synth.parts, factors, strict=True):
        if part.has_features:
            qs.append(sub[0])
            ks.append(sub[1])
            continue
        term = sub[0] if weight is None else weight * part.logits_from_factors(sub, keys)
        bias = term if bias is None else bias + term
    if not qs:
        return None, None, bias
    batch = max(max(q.shape[0] for q in qs), max(k.shape[0] for k in ks))
    q = torch.cat([t.expand(batch, -1, -1, -1) for t in qs], -1)  # (B, H, T, sum of widths)
    k = torch.cat([t.expand(batch, -1, -1, -1) for t in ks], -1)  # (B, H, S, sum of widths)
    return q, k, bias


def _kernels():
    """The jitted kernels, defined on first use (importing triton is slow and optional)."""
    from . import _triton_code

    return _triton_code


class TritonAttention(torch.autograd.Function):
    """``softmax(mask(q k^T + bias)) @ v`` by the kernels of ``_triton_code``; see :func:`triton_attention`."""

    @staticmethod
    def forward(ctx, q, k, bias, v, pad, causal: bool):
        code = _kernels()
        out, lse = code.forward(q, k, bias, v, pad, causal)
        ctx.causal = causal
        ctx.save_for_backward(q, k, bias, v, pad, out, lse)
        return out

    @staticmethod
    def backward(ctx, d_out):
        q, k, bias, v, pad, out, lse = ctx.saved_tensors
        code = _kernels()
        dq, dk, dbias, dv = code.backward(q, k, bias, v, pad, out, lse, d_out.contiguous(), ctx.causal)
        return dq, dk, dbias, dv, None, None


def _common_dtype(q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
    """q and k in the one dtype ``tl.dot`` requires of its operands: the dtype PyTorch's ``q @ k^T`` would multiply
    in, autocast's when it is on (it casts both operands), else the promoted type. Under autocast they can differ:
    D's, GLU's and Bottleneck's keys are an fp32 weight while their queries come from a bf16 linear, and a mixture
    scales one side by its fp32 weight (R+V, Fix+V). Found on an H100 as a compile error ("Both operands must be
    same dtype") for those five kinds under bf16; the interpreter raises the same (tests/attention/test_triton.py)."""
    if q.dtype == k.dtype:
        return q, k
    device = q.device.type
    if torch.is_autocast_enabled(device):
        dtype = torch.get_autocast_dtype(device)
    else:
        dtype = torch.promote_types(q.dtype, k.dtype)
    return q.to(dtype), k.to(dtype)  # autograd casts the gradients back


def triton_attention(
    q: Tensor | None, k: Tensor | None, bias: Tensor | None, v: Tensor, key_padding_mask: Tensor | None, causal: bool
) -> Tensor:
    """``softmax(mask(q k^T + bias)) @ v``: (B, H, T, d_h), fully masked rows 0; no dropout (callers check).

    Args:
        q, k: (B|1, H, T, e), (B|1, H, S, e) query and key features, or both None.
        bias: (B|1, H, T, S) additive logits, or None.
        v: (B, H, S, d_h).
        key_padding_mask: (B, S) bool, True at padding, or None.
        causal: mask keys after the query (T == S).
    """
    b, h, s, _ = v.shape
    t = q.shape[2] if q is not None else bias.shape[2]
    if q is not None:
        q, k = _common_dtype(q, k)
        q, k = q.expand(b, h, t, -1), k.expand(b, h, s, -1)  # autograd sums a shared k's gradient
    if bias is not None:
        bias = bias.expand(b, h, t, s)
    pad = key_padding_mask.to(torch.int8) if key_padding_mask is not None else None
    return TritonAttention.apply(q, k, bias, v, pad, causal)
