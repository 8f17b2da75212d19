"""Fast paths of :class:`SynthesizerAttention`, chosen per call; each computes the same function as the plain
materialized path ``dropout(softmax(mask(S(X)))) @ G(X)`` (tests compare them for every kind).

1. **Shared alignment** (kinds whose logits depend on no token: ``R``, ``Fix``, ``FR`` and their mixtures).
   The (H, L, L) probabilities are computed once per forward and applied to the whole batch as one GEMM per
   head over the *folded* batch, ``P_h (L x L) @ V_h (L x B*d_h)``. A broadcast batched matmul
   (``P.unsqueeze(0) @ V``) is several times slower on CPU (guide, section 3). Padding differs per sample, so
   it is handled without giving up the shared ``P``: with ``m_b`` the (L,) indicator of sample b's real keys,
   ``softmax_masked(S)_b @ V_b = (P @ (m_b * V_b)) / (P @ m_b)`` exactly (the softmax normalizer cancels).
   For ``FR`` at long lengths (``FR_SDPA_MIN_LEN``) ``P`` is never materialized: FR is exactly SDPA with
   ``q = R1``, ``k = R2``, ``scale = 1``, run unfolded through the fused kernel (path 2), O(L) memory.
   In eval mode under ``torch.no_grad()`` the probabilities are cached until a parameter changes.
   Choice: attention dropout on this path draws one dropout mask per forward for the shared (H, L, L)
   alignment (the same for every sample of the batch), since per-sample masks would destroy the sharing.
2. **Feature form** (``V``, ``D``, ``FR`` with input-dependent parts, ``Bottleneck``, ``GLU`` and any mixture of
   them): logits are ``q @ k^T`` for features the kind provides (``D``: ``q = [relu(W1 x), 1]``,
   ``k = [W2, b2]``; mixtures concatenate ``alpha_n q_n``), so the whole layer runs through PyTorch's fused
   ``scaled_dot_product_attention`` with ``scale=1`` and never materializes L x L logits. The fused CPU
   kernel needs one head width for q, k and v, so the features and values are zero-padded to a common width.
   Where zero-padding would at least double the value width (``D+V``) and L <= 512, one GEMM over the
   concatenated features with materialized logits is faster (``WIDE_FEATURES_MATERIALIZE_MAX_LEN``).
3. Otherwise (``R+V``, ``R+D``, ``FD``, the convolutions) the materialized path; also for decoding steps of a
   few positions, whose (T, S) logits are small (``DECODE_PLAIN_MAX_NEW``).

The materialized branches of 2 and 3 run over the batch in chunks of a few samples (``CHUNK_ELEMENTS``): every
sample's logits depend on that sample alone, so the result is the same, but each chunk's (chunk, H, L, L)
logits, probabilities and their gradients stay small enough for the CPU's caches instead of streaming a
(B, H, L, L) tensor through memory once per operation. Measured on the 2-core CPU (benchmarks/attention.py,
B=16, H=8, d_model=512, forward+backward, time as a fraction of V's): at L=512 FD 1.74 -> 0.75, R+V 1.67 -> 1.09,
D+V 1.70 -> 1.34; at L=1024, where one sample's logits already exceed a chunk, FD 2.67 -> 1.3-1.55 (two
runs) and R+V stays at about 1.9-2.1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor

from .base import dot_logits
from .masking import disallowed, masked_softmax

if TYPE_CHECKING:
    from .shell import SynthesizerAttention

#: From this length on, FR without padding goes through SDPA (no L x L matrix) instead of a materialized P.
#: Measured on the 2-core CPU (benchmarks/attention.py): materializing is faster up to L = 1024.
FR_SDPA_MIN_LEN = 2048


class AlignmentCache:
    """Caches the shared (H, L, L) probabilities of input-independent kinds in inference."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.value: Tensor | None = None

    def get(self, layer: SynthesizerAttention, length: int, dtype, device) -> Tensor:
        cacheable = not layer.training and not torch.is_grad_enabled()
        if cacheable:
            tensors = list(layer.synth.parameters()) + list(layer.synth.buffers())
            key = (length, dtype, device, tuple((t.data_ptr(), t._version) for t in tensors))
            if key == self.key:
                return self.value
        x = torch.empty(1, length, 0, dtype=dtype, device=device)  # input-independent: only the length matters
        probs = layer._probabilities(x, 0, None, None)[0]  # (H, L, L)
        if cacheable:
            self.key, self.value = key, probs
        else:
            self.key = self.value = None
        return probs


def attend(
    layer: SynthesizerAttention,
    x: Tensor,
    v: Tensor,
    start: int,
    state: dict | None,
    key_padding_mask: Tensor | None,
) -> Tensor:
    """Dispatch to the fastest exact path. x (B, T, d), v (B, H, S, d_h) -> (B, H, T, d_h)."""
    synth = layer.synth
    if state is not None and x.shape[1] <= DECODE_PLAIN_MAX_NEW:
        # A decoding step: (T, S) logits with T small are cheap; the feature path would copy the whole cache
        # into expanded, padded tensors at every step (measured: D 7x slower than V per token at context 1024).
        return layer._attend_materialized(x, v, start, state, key_padding_mask)
    if state is None and not synth.input_dependent:
        return _shared_alignment(layer, x, v, key_padding_mask)
    if synth.has_features:
        return _features_sdpa(layer, x, v, start, state, key_padding_mask)
    return _materialized_in_chunks(layer, x, v, start, state, key_padding_mask)


#: The materialized paths process about this many logits at once (``chunk * H * T * S``, at least one whole
#: sample): 16 MiB in fp32. In a prototype of the FD and R+V cores at L=512 (B=16, H=8), chunks of 1-2
#: samples (8-16 MiB) were fastest and chunks of 4 already lost most of the gain.
CHUNK_ELEMENTS = 1 << 22


def _chunk_size(layer: SynthesizerAttention, batch: int, t: int, s: int, state: dict | None) -> int:
    """Samples per chunk so that a chunk's (chunk, H, T, S) logits hold about ``CHUNK_ELEMENTS``.

    Decoding (``state`` given) is not chunked: its state holds the whole batch.
    """
    if state is not None:
        return batch
    return max(1, CHUNK_ELEMENTS // (layer.n_heads * t * s))


def _batch_chunks(size: int, batch: int, *tensors: Tensor | None) -> list[tuple]:
    """Split each tensor of batch ``batch`` into chunks of ``size`` samples; batch-1 tensors and None repeat."""
    n = -(-batch // size)
    parts = [t.split(size) if t is not None and t.shape[0] == batch else [t] * n for t in tensors]
    return list(zip(*parts, strict=True))


def _materialized_in_chunks(
    layer: SynthesizerAttention, x: Tensor, v: Tensor, start: int, state: dict | None, key_padding_mask: Tensor | None
) -> Tensor:
    """The materialized path over chunks of the batch, concatenated: (B, H, T, d_h).

    Exact for every kind: sample b's logits read only sample b (a batch-shared part such as R's is simply
    recomputed per chunk).
    """
    b, t = x.shape[:2]
    size = _chunk_size(layer, b, t, start + t, state)
    if size >= b:
        return layer._attend_materialized(x, v, start, state, key_padding_mask)
    chunks = [
        layer._attend_materialized(xc, vc, start, None, mc)
        for xc, vc, mc in _batch_chunks(size, b, x, v, key_padding_mask)
    ]
    return torch.cat(chunks)  # (B, H, T, d_h)


def _fold(v: Tensor) -> Tensor:
    """(B, H, L, d_h) -> (H, L, B*d_h): the batch folded into the GEMM's columns (one copy)."""
    b, h, length, dh = v.shape
    return v.permute(1, 2, 0, 3).reshape(h, length, b * dh)  # (H, L, B, d_h) -> (H, L, B*d_h)


def _unfold(y: Tensor, batch: int) -> Tensor:
    """(H, L, B*d_h) -> (B, H, L, d_h) (a view)."""
    h, length, width = y.shape
    return y.view(h, length, batch, width // batch).permute(2, 0, 1, 3)  # (H, L, B, d_h) -> (B, H, L, d_h)


def _shared_alignment(layer: SynthesizerAttention, x: Tensor, v: Tensor, key_padding_mask: Tensor | None) -> Tensor:
    b, h, length, dh = v.shape
    drop = layer.dropout if layer.training else 0.0
    if layer.synth.has_features and length >= FR_SDPA_MIN_LEN:
        # long FR: no L x L matrix at all (the fused kernel keeps memory O(L)); dropout is then per sample
        # as in any SDPA call, not one mask for the batch
        return _features_sdpa(layer, x, v, 0, None, key_padding_mask)
    probs = layer._alignment_cache.get(layer, length, v.dtype, v.device)  # (H, L, L)
    dropped = F.dropout(probs, drop, True) if drop > 0.0 else probs
    if key_padding_mask is None:
        return _unfold(torch.bmm(dropped, _fold(v)), b)
    keep = (~key_padding_mask).to(v.dtype)  # (B, L), 1 at real keys
    num = _unfold(torch.bmm(dropped, _fold(v * keep[:, None, :, None])), b)  # (B, H, L, d_h)
    den = (probs @ keep.T).permute(2, 0, 1)  # (H, L, L) @ (L, B) -> (H, L, B) -> (B, H, L)
    if _underflows(den, key_padding_mask, layer.causal):
        return layer._attend_materialized(x, v, 0, None, key_padding_mask)
    # Rows with no real key have num == 0 exactly; dividing by 1 there keeps them 0 (and gradients finite).
    return num / den.masked_fill(den == 0, 1.0).unsqueeze(-1)


def _underflows(den: Tensor, key_padding_mask: Tensor, causal: bool) -> bool:
    """True if some row with a real key got so little probability mass that the ratio would lose precision."""
    real = ~key_padding_mask  # (B, L)
    has_key = real.cumsum(-1) > 0 if causal else real.any(-1, keepdim=True).expand_as(real)  # (B, L)
    tiny = torch.finfo(den.dtype).tiny ** 0.5
    return bool(((den < tiny) & has_key[:, None, :]).any())


#: Decoding steps with at most this many new positions use the plain path (broadcast, no copies of the cache).
DECODE_PLAIN_MAX_NEW = 16

#: Feature widths are padded to a multiple of this (zeros change no dot product).
WIDTH_MULTIPLE = 8
#: When padding would at least double the value width (e.g. ``D+V``: 129-wide features, 64-wide values), one
#: GEMM over the concatenated features with materialized logits (in batch chunks) beats the fused kernel up to
#: this length (measured on the 2-core CPU, B=16, H=8, d_model=512, forward+backward: D+V 1.44x / 1.34x of V's
#: time at L=256 / 512 against 1.76x / 1.79x fused; at L=1024 1.90x against 1.99x, within run-to-run noise, so
#: the fused kernel keeps L > 512 for its O(L) memory).
WIDE_FEATURES_MATERIALIZE_MAX_LEN = 512


def _padded_width(e: int, dh: int) -> int:
    return -(-max(e, dh) // WIDTH_MULTIPLE) * WIDTH_MULTIPLE


def _common_width(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor, int]:
    """Zero-pad q, k (width e) and v (width d_h) to one width, a multiple of ``WIDTH_MULTIPLE``.

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


def _features_sdpa(
    layer: SynthesizerAttention,
    x: Tensor,
    v: Tensor,
    start: int,
    state: dict | None,
    key_padding_mask: Tensor | None,
) -> Tensor:
    b, t = x.shape[:2]
    s = start + t
    q, k = layer.synth.features(x, start, state, key_padding_mask)  # (B|1, H, T, e), (B|1, H, S, e)
    drop = layer.dropout if layer.training else 0.0
    if _padded_width(q.shape[-1], v.shape[-1]) >= 2 * v.shape[-1] and s <= WIDE_FEATURES_MATERIALIZE_MAX_LEN:
        mask = disallowed(t, s, start, layer.causal, key_padding_mask, x.device)  # (B|1, 1, T, S) or None
        out = []
        for qc, kc, vc, mc in _batch_chunks(_chunk_size(layer, b, t, s, state), b, q, k, v, mask):
            logits = dot_logits(qc, kc)  # (chunk, H, T, S): one GEMM for every part of the mixture
            out.append(F.dropout(masked_softmax(logits, mc), drop, layer.training) @ vc)
        return out[0] if len(out) == 1 else torch.cat(out)  # (B, H, T, d_h); one chunk needs no copy
    q, k, v, dh = _common_width(q.expand(b, -1, -1, -1), k.expand(b, -1, -1, -1), v)
    if key_padding_mask is None and (not layer.causal or t == 1):
        # a single new position attends to every cached one: nothing to mask
        return F.scaled_dot_product_attention(q, k, v, dropout_p=drop, scale=1.0)[..., :dh]
    if key_padding_mask is None and start == 0:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=drop, is_causal=True, scale=1.0)[..., :dh]
    mask = disallowed(t, s, start, layer.causal, key_padding_mask, x.device)  # (B|1, 1, T, S) bool
    # An additive float mask keeps SDPA on its fused kernel (a bool mask or a 3-D one falls back on CPU);
    # half the most negative value cannot overflow to -inf when added to a logit.
    additive = torch.zeros(mask.shape, dtype=q.dtype, device=x.device).masked_fill(mask, torch.finfo(q.dtype).min / 2)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=additive, dropout_p=drop, scale=1.0)[..., :dh]
    fully_masked = mask.all(-1, keepdim=True)  # (B|1, 1, T, 1): such rows get zeros, as in masked_softmax
    return y.masked_fill(fully_masked, 0.0) if bool(fully_masked.any()) else y


__all__ = ["attend", "AlignmentCache", "FR_SDPA_MIN_LEN", "masked_softmax"]
