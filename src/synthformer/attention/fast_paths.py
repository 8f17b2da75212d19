"""Fast paths of :class:`SynthesizerAttention`, chosen per call; each computes the same function as the plain
materialized path ``dropout(softmax(mask(S(X)))) @ G(X)`` (tests compare them for every kind).

1. **Shared alignment** (kinds whose logits depend on no token: ``R``, ``Fix``, ``FR`` and their mixtures).
   The (H, L, L) probabilities are computed once per forward and applied to the whole batch as one GEMM per
   head over the *folded* batch, ``P_h (L x L) @ V_h (L x B*d_h)``. A broadcast batched matmul
   (``P.unsqueeze(0) @ V``) is several times slower on CPU (guide, section 3). Padding differs per sample, so
   it is handled without giving up the shared ``P``: with ``m_b`` the (L,) indicator of sample b's real keys,
   ``softmax_masked(S)_b @ V_b = (P @ (m_b * V_b)) / (P @ m_b)`` exactly (the softmax normalizer cancels).
   For ``FR`` at long lengths (``fr_sdpa_min_len``) ``P`` is never materialized: FR is exactly SDPA with
   ``q = R1``, ``k = R2``, ``scale = 1``, run unfolded through the fused kernel (path 2), O(L) memory.
   In eval mode under ``torch.no_grad()`` the probabilities are cached until a parameter changes. Training a
   causal layer without padding (from ``causal_shared_min_len``), the probabilities are computed and applied
   by query chunks at and below the diagonal only (``causal_shared``).
   Choice: attention dropout on this path draws one dropout mask per forward for the shared (H, L, L)
   alignment (the same for every sample of the batch), since per-sample masks would destroy the sharing.
2. **Feature form** (``V``, ``D``, ``FR`` with input-dependent parts, ``Bottleneck``, ``GLU`` and any mixture of
   them): logits are ``q @ k^T`` for features the kind provides (``D``: ``q = [relu(W1 x), 1]``,
   ``k = [W2, b2]``; mixtures concatenate ``alpha_n q_n``). Where q, k and v have one width (``V``) or the
   length exceeds ``features_materialize_max_len``, the layer runs through PyTorch's fused
   ``scaled_dot_product_attention`` with ``scale=1`` and never materializes L x L logits (the fused CPU kernel
   needs one head width, so differing widths are zero-padded). Otherwise one GEMM over the features with
   materialized logits, in blocks (below), is faster.
3. Otherwise (``R+V``, ``R+D``, ``FD``, the convolutions) the materialized path; also for decoding steps of a
   few positions, whose (T, S) logits are small (``decode_plain_max_new``).

In training, the materialized branches of 2 and 3 go through ``fused.FusedAttention`` (the probabilities are
recomputed in the backward pass instead of stored; causal layers skip the chunks above the diagonal) from the
lengths where it measured faster (``fused.should_fuse``), and on CUDA with Triton through the kernels of
``triton_kernels``. Otherwise they run in **blocks** of a few samples, or of one sample and a few heads
(``chunk_elements``): the logits of a sample's head depend on that sample's and head's factors alone
(``SynthesizingFunction.logit_factors``), so the result is the same, but each block's logits, probabilities and
their gradients stay in the CPU's caches instead of streaming a (B, H, L, L) tensor through memory once per
operation. Measured on the 2-core CPU (benchmarks/attention.py, B=16, H=8, d_model=512, forward+backward, time
as a fraction of V's): whole-sample chunks took FD at L=512 from 1.74 to 0.75 and R+V from 1.67 to 1.09; at
L=1024, where one sample's logits exceed the cache, blocks of 2 heads took FD from 1.3-1.55 to 0.74-0.76 (with
FD's outer product as a matmul) and R+V from 1.9-2.1 to 1.16-1.23.

The thresholds named in ``code`` above are fields of :class:`~synthformer.attention.settings.FastPathSettings`
(with their measurements), read per call from the current settings, so a test or a benchmark changes them for a
``with fast_path_settings(...)`` block instead of assigning a module global.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor

from . import fused, triton_kernels
from .base import dot_logits
from .causal_shared import causal_shared_attention
from .dropout_masks import dropout
from .masking import any_true, disallowed, masked_softmax
from .settings import current

if TYPE_CHECKING:
    from .base import SynthesizingFunction
    from .shell import SynthesizerAttention


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
    position_bias: Tensor | None = None,
    synth: SynthesizingFunction | None = None,
) -> Tensor:
    """Dispatch to the fastest exact path. x (B, T, d), v (B, H, S, d_h) -> (B, H, T, d_h).

    ``position_bias`` (1|B, H, T, S), added to the logits: feature kinds (V, D, their mixtures) run through SDPA
    with the bias in its additive mask; every other path computes probabilities that cannot take a per-call bias
    (the shared alignment's are computed once per batch, the blocks and the fused kernel take factors of the
    logits only), so those calls take the plain materialized path.

    ``synth``: the synthesizing function to compute with, default the layer's own (a grown mixture passes its
    pretrained part's view, :meth:`~synthformer.attention.Mixture.grown_view`).
    """
    synth = layer.synth if synth is None else synth
    if state is not None and x.shape[1] <= current().decode_plain_max_new:
        # A decoding step: (T, S) logits with T small are cheap; the feature path would copy the whole cache
        # into expanded, padded tensors at every step (measured: D 7x slower than V per token at context 1024).
        return layer._attend_materialized(x, v, start, state, key_padding_mask, position_bias, synth=synth)
    if position_bias is not None:
        if synth.has_features:
            return _features_sdpa(layer, synth, x, v, start, state, key_padding_mask, position_bias)
        return layer._attend_materialized(x, v, start, state, key_padding_mask, position_bias, synth=synth)
    if state is None and not synth.input_dependent and synth is layer.synth:  # the cache holds the layer's own
        return _shared_alignment(layer, x, v, key_padding_mask)
    if synth.has_features:
        return _features_sdpa(layer, synth, x, v, start, state, key_padding_mask)
    return _materialized(layer, synth, x, v, start, state, key_padding_mask)


def _block_size(layer: SynthesizerAttention, batch: int, t: int, s: int, state: dict | None) -> tuple[int, int]:
    """(samples, heads) per block, so that a block's (samples, heads, T, S) logits hold about ``chunk_elements``.

    Whole samples while one fits, else one sample and the largest divisor of H that fits (equal blocks).
    Decoding (``state`` given) is one block: its state holds the whole batch. The settings' ``block_size``, when
    set, overrides the rule (outside decoding).
    """
    heads = layer.n_heads
    if state is not None:
        return batch, heads
    settings = current()
    if settings.block_size is not None:
        return settings.block_size
    per_head, budget = t * s, settings.chunk_elements
    if heads * per_head <= budget:
        return max(1, budget // (heads * per_head)), heads
    fit = max(1, budget // per_head)
    return 1, max(h for h in range(1, fit + 1) if heads % h == 0)


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


def _materialized_blocks(
    layer: SynthesizerAttention,
    synth: SynthesizingFunction,
    factors: tuple,
    combine,
    rows,
    v: Tensor,
    t: int,
    start: int,
    state: dict | None,
    key_padding_mask: Tensor | None,
) -> Tensor:
    """``dropout(softmax(mask(combine(factors)))) @ v`` one (samples, heads) block at a time: (B, H, T, d_h).

    ``combine(block_factors, keys)`` maps a block of ``factors`` (``synth``'s) to its (samples, heads, T, keys)
    logits, for the T queries at positions ``start ..`` over S = start + T keys. Exact: every block's logits read
    only the block's factors (the contract of ``logit_factors``). Heads are the outer loop, so a batch-shared factor
    block (R's) gets its gradient summed while it is hot. ``rows(factors, q0, q1)`` cuts the factors to a chunk
    of queries (``SynthesizingFunction.query_rows``); the fused path uses it to skip the causal upper triangle.
    """
    b, heads = v.shape[:2]
    s = start + t
    mask = disallowed(t, s, start, layer.causal, key_padding_mask, v.device)  # (B|1, 1, T, S) or None
    size = _block_size(layer, b, t, s, state)
    drop = layer.dropout if layer.training else 0.0
    if state is None and drop == 0.0 and triton_kernels.available(v.device):
        # CUDA with triton (or forced in tests): one kernel, no L x L probabilities; no dropout in the kernel
        fused.calls["triton"] += 1
        q, k, bias = triton_kernels.split_logits(synth, factors, s, combine is _feature_logits)
        return triton_kernels.triton_attention(q, k, bias, v, key_padding_mask, layer.causal)
    if state is None and fused.should_fuse(torch.is_grad_enabled(), s, layer.causal and start == 0):
        return fused.fused_attention(combine, factors, v, mask, size, drop, rows if layer.causal else None)
    fused.calls["blocks"] += 1
    n = (-(-b // size[0]), -(-heads // size[1]))
    grid = _grid((factors, v, mask), b, heads, size, n)
    out = [[None] * n[1] for _ in range(n[0])]
    for j in range(n[1]):
        for i in range(n[0]):
            fac, vb, mb = _block(grid, i, j)
            probs = masked_softmax(combine(fac, s), mb)  # (samples, heads, T, S)
            out[i][j] = dropout(probs, drop) @ vb  # (samples, heads, T, d_h); drop is 0 outside training
    rows = [r[0] if n[1] == 1 else torch.cat(r, 1) for r in out]
    return rows[0] if n[0] == 1 else torch.cat(rows)  # (B, H, T, d_h); one block needs no copy


def _materialized(
    layer: SynthesizerAttention,
    synth: SynthesizingFunction,
    x: Tensor,
    v: Tensor,
    start: int,
    state: dict | None,
    key_padding_mask: Tensor | None,
) -> Tensor:
    """The materialized path of ``synth`` in cache-sized blocks of samples and heads: (B, H, T, d_h)."""
    t = x.shape[1]
    factors = synth.logit_factors(x, start, state, key_padding_mask)
    return _materialized_blocks(
        layer, synth, factors, synth.logits_from_factors, synth.query_rows, v, t, start, state, key_padding_mask
    )


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
    settings = current()
    if layer.synth.has_features and length >= settings.fr_sdpa_min_len and sdpa_runs_fused(drop, v.device):
        # long FR: no L x L matrix at all (the fused kernel keeps memory O(L)); dropout is then per sample
        # as in any SDPA call, not one mask for the batch. With dropout on the CPU SDPA would materialize every
        # sample's matrix: the shared one below is smaller.
        return _features_sdpa(layer, layer.synth, x, v, 0, None, key_padding_mask)
    chunked = layer.causal and key_padding_mask is None and torch.is_grad_enabled()
    if chunked and length >= settings.causal_shared_min_len:
        # training a causal layer: only the chunks at and below the diagonal (causal_shared); not cached
        empty = torch.empty(1, length, 0, dtype=v.dtype, device=v.device)  # input-independent: the length only
        logits = layer.synth.logits(empty, 0, None, None)[0]  # (H, L, L)
        fused.calls["causal_shared"] += 1
        return _unfold(causal_shared_attention(logits, _fold(v), settings.causal_chunk, drop), b)
    probs = layer._alignment_cache.get(layer, length, v.dtype, v.device)  # (H, L, L)
    dropped = dropout(probs, drop)  # probs itself when drop is 0
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
    if den.device.type == "meta":  # no values to test: take the ratio path, whose shapes are the same
        return False
    real = ~key_padding_mask  # (B, L)
    has_key = real.cumsum(-1) > 0 if causal else real.any(-1, keepdim=True).expand_as(real)  # (B, L)
    tiny = torch.finfo(den.dtype).tiny ** 0.5
    return bool(((den < tiny) & has_key[:, None, :]).any())


def _feature_logits(factors: tuple, keys: int) -> Tensor:
    """(samples|1, h, T, keys) logits ``q k^T`` of a block of the feature pair (k already cut to the keys)."""
    return dot_logits(*factors)


def _feature_rows(factors: tuple, q0: int, q1: int) -> tuple:
    """The feature pair of queries ``q0 .. q1-1`` over keys ``0 .. q1-1`` (views)."""
    q, k = factors
    return q[..., q0:q1, :], k[..., :q1, :]


def sdpa_runs_fused(drop: float, device: torch.device) -> bool:
    """Whether ``F.scaled_dot_product_attention`` with ``dropout_p=drop`` runs a fused kernel on ``device``.

    Not on the CPU with dropout: PyTorch's CPU flash kernel takes no dropout, so SDPA falls back to its math path,
    which materializes the (B, H, T, S) probabilities and their dropout mask and stores both for the backward
    (checked by tests/attention/test_decoding_and_fast_paths.py, which asks for the flash kernel alone). There
    the materialized paths here are the faster and smaller choice for every kind but V (vanilla attention stays
    PyTorch's SDPA, the baseline users compare with).
    """
    return drop == 0.0 or device.type != "cpu"


def _materialize_features(e: int, dh: int, s: int, drop: float = 0.0, device: torch.device | None = None) -> bool:
    """Whether q/k features of width e against values of width d_h over s keys take the materialized blocks
    (the settings' ``features`` branch, or by the measured lengths when it is "auto"). With attention dropout
    ``drop`` on a CPU ``device`` (:func:`sdpa_runs_fused` False) a kind with its own feature width always does:
    measured (``python benchmarks/causal_ab.py --setting features --old "'sdpa'" --new "'auto'" --kinds D D+V
    --lengths 1024 2048 --batch 1 --d-model 256 --heads 4 --dropout 0.1 --repeats 5``, 1 thread beside two
    training runs, 2026-11-27), at L=2048 causal D and D+V took 0.42 and 0.56 of SDPA's math-path time and
    bidirectional ones 0.98 and 0.97; causal D now trains 1.86x as fast as bidirectional D (0.79x on SDPA). At
    L=1024, where the blocks already served D in training, SDPA would have taken 1.2-1.6x their time."""
    settings = current()
    if settings.features != "auto":
        return settings.features == "blocks"
    if e != dh and device is not None and not sdpa_runs_fused(drop, device):
        return True
    if torch.is_grad_enabled():
        limit = settings.features_materialize_max_len
    else:
        limit = settings.features_materialize_max_len_no_grad
    return e != dh and s <= limit


def _padded_width(e: int, dh: int) -> int:
    multiple = current().width_multiple
    return -(-max(e, dh) // multiple) * multiple


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


def _features_sdpa(
    layer: SynthesizerAttention,
    synth: SynthesizingFunction,
    x: Tensor,
    v: Tensor,
    start: int,
    state: dict | None,
    key_padding_mask: Tensor | None,
    position_bias: Tensor | None = None,
) -> Tensor:
    b, t = x.shape[:2]
    s = start + t
    q, k = synth.features(x, start, state, key_padding_mask)  # (B|1, H, T, e), (B|1, H, S, e)
    drop = layer.dropout if layer.training else 0.0
    if position_bias is not None:  # the blocks take no bias: SDPA with the bias in its additive mask
        q, k, v, dh = _common_width(q.expand(b, -1, -1, -1), k.expand(b, -1, -1, -1), v)
        mask = disallowed(t, s, start, layer.causal, key_padding_mask, x.device)  # (B|1, 1, T, S) or None
        return masked_sdpa(q, k, v, mask, drop, scale=1.0, bias=position_bias)[..., :dh]
    if _materialize_features(q.shape[-1], v.shape[-1], s, drop, v.device):
        # one GEMM over the concatenated features for every part of a mixture
        return _materialized_blocks(
            layer, synth, (q, k), _feature_logits, _feature_rows, v, t, start, state, key_padding_mask
        )
    q, k, v, dh = _common_width(q.expand(b, -1, -1, -1), k.expand(b, -1, -1, -1), v)
    if key_padding_mask is None and (not layer.causal or t == 1):
        # a single new position attends to every cached one: nothing to mask
        return F.scaled_dot_product_attention(q, k, v, dropout_p=drop, scale=1.0)[..., :dh]
    if key_padding_mask is None and start == 0:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=drop, is_causal=True, scale=1.0)[..., :dh]
    mask = disallowed(t, s, start, layer.causal, key_padding_mask, x.device)  # (B|1, 1, T, S) bool
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


__all__ = ["attend", "AlignmentCache", "masked_sdpa", "masked_softmax", "sdpa_runs_fused"]
