"""The feature form through PyTorch's fused SDPA kernel: logits ``q k^T`` that are never materialized.

Kinds with a feature form (``V``, ``D``, ``FR``, ``Bottleneck``, ``GLU`` and their mixtures, whose ``alpha_n
q_n`` are concatenated) give ``logits == q @ k^T`` (``D``: ``q = [relu(W1 x), 1]``, ``k = [W2, b2]``). With
``scale=1`` that is exactly ``F.scaled_dot_product_attention`` over ``(q, k, v)``, O(L) memory. Where the widths
of q and v differ (every kind but ``V``) the measured choice is often one GEMM over the features with the
logits materialized in blocks instead (:func:`materialize_features`, the ``blocks`` path): why and the
measurements are in docs/benchmarks.md, "Why the fast paths look the way they do".
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from .base import dot_logits
from .masking import any_true, disallowed
from .paths import AttentionCall
from .settings import current

__all__ = ["attend_sdpa", "feature_logits", "feature_rows", "masked_sdpa", "materialize_features", "sdpa_runs_fused"]


def sdpa_runs_fused(drop: float, device: torch.device) -> bool:
    """Whether ``F.scaled_dot_product_attention`` with ``dropout_p=drop`` runs a fused kernel on ``device``.

    Not on the CPU with dropout: PyTorch's CPU flash kernel takes no dropout, so SDPA falls back to its math path,
    which materializes the (B, H, T, S) probabilities and their dropout mask and stores both for the backward
    (checked by tests/attention/test_decoding_and_fast_paths.py, which asks for the flash kernel alone). There
    the materialized paths are the faster and smaller choice for every kind but V (vanilla attention stays
    PyTorch's SDPA, the baseline users compare with).
    """
    return drop == 0.0 or device.type != "cpu"


def materialize_features(e: int, dh: int, s: int, drop: float = 0.0, device: torch.device | None = None) -> bool:
    """Whether q/k features of width e against values of width d_h over s keys take the materialized blocks.

    The settings' ``features`` branch decides, or when it is "auto" the measured lengths
    (``features_materialize_max_len``, a separate one without gradients). With attention dropout ``drop`` on a
    CPU ``device`` (:func:`sdpa_runs_fused` False) a kind with its own feature width always does, since SDPA
    would run its math path, which the blocks measured faster than (docs/benchmarks.md, "Why the fast paths look
    the way they do", has the A/B).
    """
    settings = current()
    if settings.features != "auto":
        return settings.features == "blocks"
    if e != dh and device is not None and not sdpa_runs_fused(drop, device):
        return True
    if torch.is_grad_enabled():
        limit = settings.features_materialize_max_len
    else:
        limit = settings.features_materialize_max_len_no_grad
    return e != dh and s <= limit  # one width (V): the fused kernel needs no padding, it always wins


def materializes(call: AttentionCall) -> bool:
    """:func:`materialize_features` for ``call``'s features (computed here, once per call)."""
    q, _ = call.features()
    return materialize_features(q.shape[-1], call.v.shape[-1], call.keys, call.drop, call.v.device)


def _padded_width(e: int, dh: int) -> int:
    multiple = current().width_multiple
    return -(-max(e, dh) // multiple) * multiple  # ceil to the multiple


def _common_width(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor, int]:
    """Zero-pad q, k (width e) and v (width d_h) to one width, a multiple of the settings' ``width_multiple``.

    PyTorch's fused CPU kernel runs only when q, k and v have the same head width; otherwise SDPA falls back
    to the math path, which materializes the L x L matrix. Padding q and k with zeros leaves ``q k^T``
    unchanged, and padded value columns give output columns that are cut off. Returns the padded tensors and
    d_h.
    """
    e, dh = q.shape[-1], v.shape[-1]
    width = _padded_width(e, dh)
    if e != width:
        q, k = F.pad(q, (0, width - e)), F.pad(k, (0, width - e))
    if dh != width:
        v = F.pad(v, (0, width - dh))
    return q, k, v, dh


def attend_sdpa(call: AttentionCall) -> Tensor:
    """The feature form through SDPA with ``scale=1`` (the bias, if any, in its additive mask): (B, H, T, d_h)."""
    b, t = call.x.shape[:2]
    s, start, v = call.keys, call.start, call.v
    q, k = call.features()  # (B|1, H, T, e), (B|1, H, S, e)
    drop = call.drop
    causal, key_padding_mask = call.layer.causal, call.key_padding_mask
    q, k, v, dh = _common_width(q.expand(b, -1, -1, -1), k.expand(b, -1, -1, -1), v)
    if call.position_bias is not None:
        mask = disallowed(t, s, start, causal, key_padding_mask, v.device)  # (B|1, 1, T, S) or None
        return masked_sdpa(q, k, v, mask, drop, scale=1.0, bias=call.position_bias)[..., :dh]
    if key_padding_mask is None and (not causal or t == 1):
        # a single new position attends to every cached one: nothing to mask
        return F.scaled_dot_product_attention(q, k, v, dropout_p=drop, scale=1.0)[..., :dh]
    if key_padding_mask is None and start == 0:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=drop, is_causal=True, scale=1.0)[..., :dh]
    mask = disallowed(t, s, start, causal, key_padding_mask, v.device)  # (B|1, 1, T, S) bool
    return masked_sdpa(q, k, v, mask, drop, scale=1.0)[..., :dh]


def masked_sdpa(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout_p: float, scale: float, bias: Tensor | None = None
) -> Tensor:
    """``F.scaled_dot_product_attention`` on its fused CPU kernel with a bool mask; fully masked rows get zeros.

    Args:
        q, k, v: (B, H, T, e), (B, H, S, e), (B, H, S, e_v).
        mask: (B|1, 1, T, S) bool, True where a query may not attend (from ``masking.disallowed``), or None.
        dropout_p: attention dropout (0 outside training).
        scale: the logits are ``scale * q k^T``.
        bias: (B|1, H|1, T, S) added to the logits (T5's relative position bias), or None.

    Returns:
        (B, H, T, e_v); a query row with every key masked gives zeros, as in ``masked_softmax``.
    """
    if mask is None and bias is None:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=scale)
    # An additive float mask keeps SDPA on its fused kernel (a bool mask or a 3-D one falls back on CPU);
    # half the most negative value cannot overflow to -inf when added to a logit.
    additive = torch.zeros(mask.shape, dtype=q.dtype, device=q.device) if bias is None else bias.to(q.dtype)
    if mask is not None:
        shape = torch.broadcast_shapes(additive.shape, mask.shape)  # (B|1, H|1, T, S)
        additive = additive.expand(shape).masked_fill(mask, torch.finfo(q.dtype).min / 2)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=additive, dropout_p=dropout_p, scale=scale)
    if mask is None:
        return y
    fully_masked = mask.all(-1, keepdim=True)  # (B|1, 1, T, 1)
    return y.masked_fill(fully_masked, 0.0) if any_true(fully_masked) else y


def feature_logits(factors: tuple, keys: int) -> Tensor:
    """(samples|1, h, T, keys) logits ``q k^T`` of a block of the feature pair (k already cut to the keys)."""
    return dot_logits(*factors)


def feature_rows(factors: tuple, q0: int, q1: int) -> tuple:
    """The feature pair of queries ``q0 .. q1-1`` over keys ``0 .. q1-1`` (views)."""
    q, k = factors
    return q[..., q0:q1, :], k[..., :q1, :]
