"""The SDPA path: the feature form ``q k^T`` through PyTorch's ``F.scaled_dot_product_attention``.

Kinds with a feature form (``V``, ``D``, ``FR``, ``Bottleneck``, ``GLU`` and their mixtures, whose ``alpha_n
q_n`` are concatenated) give ``logits == q @ k^T`` (``D``: ``q = [relu(W1 x), 1]``, ``k = [W2, b2]``). With
``scale=1`` that is exactly ``F.scaled_dot_product_attention`` over ``(q, k, v)``, its logits never
materialized; for ``V`` it is plain scaled dot-product attention, the baseline users compare with. This path and
the reference path are the attention shell's own: every kind runs on them without the optional paths of
:mod:`synthformer.attention.fast`, which (when loaded) replace this path's rule by one that leaves it the calls
it serves best and read its padding width from their settings.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from .masking import any_true, disallowed
from .paths import AttentionCall, register_path

__all__ = ["WIDTH_MULTIPLE", "attend_sdpa", "masked_sdpa", "no_feature_form"]

#: Feature widths are zero-padded to a multiple of this for SDPA (zeros change no dot product).
WIDTH_MULTIPLE = 8


def _common_width(q: Tensor, k: Tensor, v: Tensor, multiple: int) -> tuple[Tensor, Tensor, Tensor, int]:
    """Zero-pad q, k (width e) and v (width d_h) to one width, a multiple of ``multiple``.

    PyTorch's fused CPU kernel runs only when q, k and v have the same head width; otherwise SDPA falls back
    to the math path, which materializes the L x L matrix. Padding q and k with zeros leaves ``q k^T``
    unchanged, and padded value columns give output columns that are cut off. Returns the padded tensors and
    d_h.
    """
    e, dh = q.shape[-1], v.shape[-1]
    width = -(-max(e, dh) // multiple) * multiple  # ceil to the multiple
    if e != width:
        q, k = F.pad(q, (0, width - e)), F.pad(k, (0, width - e))
    if dh != width:
        v = F.pad(v, (0, width - dh))
    return q, k, v, dh


def attend_sdpa(call: AttentionCall, width_multiple: int = WIDTH_MULTIPLE) -> Tensor:
    """The feature form through SDPA with ``scale=1`` (the bias, if any, in its additive mask), the feature
    widths zero-padded to a multiple of ``width_multiple``: (B, H, T, d_h)."""
    b, t = call.x.shape[:2]
    s, start, v = call.keys, call.start, call.v
    q, k = call.features()  # (B|1, H, T, e), (B|1, H, S, e)
    drop = call.drop
    causal, key_padding_mask = call.layer.causal, call.key_padding_mask
    q, k, v, dh = _common_width(q.expand(b, -1, -1, -1), k.expand(b, -1, -1, -1), v, width_multiple)
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


def no_feature_form(call: AttentionCall) -> str | None:
    """Why the SDPA path cannot serve ``call`` at all (its kind has no feature form), or None when it can."""
    return None if call.synth.has_features else f"{call.synth.name} has no feature form (q k^T)"


# Every call of a feature kind the shell lets through (``call.fast``); a kind without one takes the reference.
register_path("sdpa", why_not=no_feature_form, priority=20)(attend_sdpa)
