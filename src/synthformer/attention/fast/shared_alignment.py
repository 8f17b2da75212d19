"""The shared alignment: kinds whose logits read no token (``R``, ``Fix``, ``FR`` and their mixtures).

Their (H, L, L) probabilities are the same for every sample, so they are computed once per forward and applied to
the whole batch as one GEMM per head over the *folded* batch, ``P_h (L x L) @ V_h (L x B*d_h)``: a broadcast
batched matmul (``P.unsqueeze(0) @ V``) measured much slower on a CPU (docs/benchmarks.md, "Why the fast paths
look the way they do"). Padding differs per
sample and is handled without giving up the shared ``P``: with ``m_b`` the (L,) indicator of sample b's real keys,
``softmax_masked(S)_b @ V_b = (P @ (m_b * V_b)) / (P @ m_b)`` exactly (the softmax normalizer cancels). In eval
mode under ``torch.no_grad()`` the probabilities are cached until a parameter changes (:class:`AlignmentCache`).
Training a causal layer without padding, :func:`attend_causal_shared` computes and applies them by query chunks at
and below the diagonal only (:mod:`.causal_shared`).

Choice: attention dropout here draws one mask per forward for the shared (H, L, L) alignment, the same for every
sample of the batch, since per-sample masks would end the sharing.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..paths import AttentionCall, AttentionLayer
from .causal_shared import causal_shared_attention
from .dropout_masks import dropout
from .settings import current

__all__ = ["AlignmentCache", "alignment_cache", "attend_causal_shared", "attend_shared_alignment", "fold", "unfold"]


class AlignmentCache:
    """Caches the shared (H, L, L) probabilities of input-independent kinds in inference."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.value: Tensor | None = None

    def get(self, layer: AttentionLayer, length: int, dtype: torch.dtype, device: torch.device) -> Tensor:
        """The layer's (H, L, L) probabilities at ``length`` (cached while no parameter changes, in inference)."""
        cacheable = not layer.training and not torch.is_grad_enabled()
        if cacheable:
            tensors = list(layer.synth.parameters()) + list(layer.synth.buffers())
            # a tensor's version counts its in-place changes: an optimizer step or a load invalidates the entry
            key = (length, dtype, device, tuple((t.data_ptr(), t._version) for t in tensors))
            if key == self.key:
                return self.value
        x = torch.empty(1, length, 0, dtype=dtype, device=device)  # input-independent: only the length matters
        probs = layer.probabilities(x, 0, None, None)[0]  # (H, L, L)
        if cacheable:
            self.key, self.value = key, probs
        else:
            self.key = self.value = None
        return probs


def alignment_cache(layer: AttentionLayer) -> AlignmentCache:
    """The layer's :class:`AlignmentCache`, made on first use and kept as its ``alignment_cache`` attribute (the
    shell knows nothing of it: it belongs to this path)."""
    cache = getattr(layer, "alignment_cache", None)
    if cache is None:
        cache = AlignmentCache()
        layer.alignment_cache = cache
    return cache


def fold(v: Tensor) -> Tensor:
    """(B, H, L, d_h) -> (H, L, B*d_h): the batch folded into the GEMM's columns (one copy)."""
    b, h, length, dh = v.shape
    return v.permute(1, 2, 0, 3).reshape(h, length, b * dh)  # (H, L, B, d_h) -> (H, L, B*d_h)


def unfold(y: Tensor, batch: int) -> Tensor:
    """(H, L, B*d_h) -> (B, H, L, d_h) (a view)."""
    h, length, width = y.shape
    return y.view(h, length, batch, width // batch).permute(2, 0, 1, 3)  # (H, L, B, d_h) -> (B, H, L, d_h)


def attend_causal_shared(call: AttentionCall) -> Tensor:
    """A causal layer in training without padding: only the chunks at and below the diagonal (not cached):
    (B, H, L, d_h)."""
    v, synth = call.v, call.layer.synth
    b, _, length, _ = v.shape
    empty = torch.empty(1, length, 0, dtype=v.dtype, device=v.device)  # input-independent: the length only
    logits = synth.logits(empty, 0, None, None)[0]  # (H, L, L)
    return unfold(causal_shared_attention(logits, fold(v), current().causal_chunk, call.drop), b)


def attend_shared_alignment(call: AttentionCall) -> Tensor:
    """The batch-shared probabilities applied to the folded batch, padding by the ratio: (B, H, L, d_h)."""
    layer, v, key_padding_mask = call.layer, call.v, call.key_padding_mask
    b, _, length, _ = v.shape
    probs = alignment_cache(layer).get(layer, length, v.dtype, v.device)  # (H, L, L)
    dropped = dropout(probs, call.drop)  # probs itself when drop is 0
    if key_padding_mask is None:
        return unfold(torch.bmm(dropped, fold(v)), b)
    keep = (~key_padding_mask).to(v.dtype)  # (B, L), 1 at real keys
    num = unfold(torch.bmm(dropped, fold(v * keep[:, None, :, None])), b)  # (B, H, L, d_h)
    den = (probs @ keep.T).permute(2, 0, 1)  # (H, L, L) @ (L, B) -> (H, L, B) -> (B, H, L)
    if _underflows(den, key_padding_mask, layer.causal):
        return layer.attend_reference(call.x, v, 0, None, key_padding_mask)
    # Rows with no real key have num == 0 exactly; dividing by 1 there keeps them 0 (and gradients finite).
    return num / den.masked_fill(den == 0, 1.0).unsqueeze(-1)


def _underflows(den: Tensor, key_padding_mask: Tensor, causal: bool) -> bool:
    """True if some row with a real key got so little probability mass that the ratio would lose precision."""
    if den.device.type == "meta":  # no values to test: take the ratio path, whose shapes are the same
        return False
    real = ~key_padding_mask  # (B, L)
    has_key = real.cumsum(-1) > 0 if causal else real.any(-1, keepdim=True).expand_as(real)  # (B, L)
    tiny = torch.finfo(den.dtype).tiny ** 0.5  # the ratio keeps about half the mantissa above this
    return bool(((den < tiny) & has_key[:, None, :]).any())
