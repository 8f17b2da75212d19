"""The machinery shared by :class:`LightConv` and :class:`DynamicConv` (Wu et al., 2019).

Both mixers are ``out_proj(conv(GLU(in_proj(x))))`` where ``conv`` is a depthwise 1-D convolution whose kernel
has one row of K taps per head, shared by the ``d_model // n_heads`` channels of that head. They differ only in
where the kernel comes from (a parameter, or a linear function of the token), so this module holds:

- two exact formulations of that convolution, the "unfold" one (a sum over the K taps of the shifted sequence,
  O(B L d K) work and O(B L d) memory) and the "band" one (an (L, L + K - 1) banded matrix per head and a
  batched matmul, O(B L^2 d) work but few large GEMMs, so faster for short sequences);
- the rule choosing between them by length (:func:`choose_impl`, measured crossovers in its docstring);
- the decoding cache (:class:`ConvCache`) and the shared module shell (:class:`GLUConvMixer`).

Throughout, a "valid" convolution takes an input that is already padded, ``u_ext`` of shape (B, L + K - 1, d),
and returns L outputs with ``y[:, t] = sum_k w[..., k] * u_ext[:, t + k]``. Left padding with ``K - 1`` zeros
(causal) or ``(K - 1) // 2`` zeros (non-causal) turns it into the mixers' convolution; in incremental decoding the
cached GLU outputs take the place of the left zeros.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import FunctionCtx, once_differentiable

from synthformer.attention import check_core_args, check_input, check_probability, resolve_options

__all__ = [
    "CONV_IMPLS",
    "ConvCache",
    "GLUConvMixer",
    "band_matrix",
    "choose_impl",
    "depthwise_conv_band",
    "depthwise_conv_unfold",
]

CONV_IMPLS = ("auto", "unfold", "band")

# Longest L at which the band formulation beat the unfold one, per kernel width K, as (LightConv, DynamicConv):
# LightConv's single (H, K) kernel folds the batch into H large GEMMs, DynamicConv's per-position kernels need
# B H small ones, so in training the band path pays off much longer for LightConv. Measured on the project's
# 2-core CPU (torch 2.13 CPU, fp32, 2 threads) at B=16, d_model=512, H=8 with
#     python benchmarks/speed/conv_crossover.py [--forward-only]
# The machine was shared with other jobs and single runs moved the crossover by up to 2x, so these are the
# medians of 4 runs, rounded down to a measured length. A training step (forward + backward of the convolution)
# and inference (forward only) differ: the unfold forward is cheap, its backward less so.
_BAND_MAX_LEN_TRAIN: dict[int, tuple[int, int]] = {3: (0, 0), 7: (32, 0), 15: (128, 0), 31: (256, 192)}
_BAND_MAX_LEN_INFER: dict[int, tuple[int, int]] = {3: (0, 0), 7: (24, 8), 15: (24, 32), 31: (48, 64)}


def choose_impl(length: int, kernel_size: int, dynamic: bool, backward: bool = False) -> str:
    """Pick ``"band"`` or ``"unfold"`` for a convolution producing ``length`` outputs.

    The band matrix costs O(L^2) per channel against O(L K) for the unfold formulation but runs as a few large
    GEMMs, so it wins only while L is within a small multiple of K. Measured crossovers (B=16, d_model=512,
    H=8, fp32, 2 CPU threads; band faster up to and including this L):

    ==========  ======================  ======================
    K           training (fwd + bwd)    inference (fwd)
                LightConv / DynamicConv LightConv / DynamicConv
    ==========  ======================  ======================
    3           never / never           never / never
    7           32 / never              24 / 8
    15          128 / never             24 / 32
    31          256 / 192               48 / 64
    ==========  ======================  ======================

    At these lengths the two paths are within ~10% of each other; far from them the loser is 2-5x slower
    (e.g. training, LightConv K=31, L=32: band 0.34x the unfold time; L=1024: 1.6x; DynamicConv K=3 never
    wins: band 3x slower at L=8).

    For a K between measured widths the threshold of the nearest smaller measured K is used (conservative:
    the unfold path is never badly off), below 3 that of K = 3, and beyond 31 it grows linearly with K.

    Args:
        length: L, the number of outputs.
        kernel_size: K.
        dynamic: True for per-position kernels (DynamicConv), False for one kernel per head (LightConv).
        backward: True when a backward pass will follow (use the training-step table).
    """
    table = _BAND_MAX_LEN_TRAIN if backward else _BAND_MAX_LEN_INFER
    widths = sorted(table)
    col = 1 if dynamic else 0
    below = [k for k in widths if k <= kernel_size]
    if not below:
        limit = table[widths[0]][col]
    elif below[-1] == widths[-1]:
        limit = table[widths[-1]][col] * kernel_size // widths[-1]
    else:
        limit = table[below[-1]][col]
    return "band" if length <= limit else "unfold"


# ---------------------------------------------------------------------------------------------------------------
# The unfold formulation.
#
# u_ext.unfold(1, K, 1) is a (B, L, d, K) window view whose tap k is exactly u_ext[:, k:k + L]. Contracting it
# with the kernel through one einsum/bmm materializes the windows (K copies of the input: 1 GB at L=1024, K=31)
# and was 5-30x slower here than contracting tap by tap with an in-place multiply-add, which is what we do. Plain
# autograd through K in-place `addcmul_` calls is slow in backward (each tap's slice gradient is scattered into a
# fresh zero tensor the size of the input), so the backward is written by hand as the same tap loop.
# ---------------------------------------------------------------------------------------------------------------


def _tap(weight: Tensor, k: int) -> Tensor:
    """Tap ``k`` of a kernel, shaped to broadcast against (B, L, H, head_dim).

    weight (H, K) -> (H, 1); weight (B, L, H, K) -> (B, L, H, 1).
    """
    return weight[..., k].unsqueeze(-1)


class _TapSum(torch.autograd.Function):
    """y[:, t] = sum_k w_k * u[:, t + k], u (B, L + K - 1, H, D), w (H, K) or (B, L, H, K) -> y (B, L, H, D)."""

    @staticmethod
    def forward(ctx: FunctionCtx, u: Tensor, weight: Tensor) -> Tensor:  # type: ignore[override]
        kernel_size = weight.shape[-1]
        length = u.shape[1] - kernel_size + 1
        y = u[:, 0:length] * _tap(weight, 0)  # (B, L, H, D)
        for k in range(1, kernel_size):
            y.addcmul_(u[:, k : k + length], _tap(weight, k))
        ctx.save_for_backward(u, weight)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_y: Tensor) -> tuple[Tensor | None, Tensor | None]:  # type: ignore[override]
        u, weight = ctx.saved_tensors
        kernel_size = weight.shape[-1]
        length = grad_y.shape[1]
        grad_u = grad_w = None
        if ctx.needs_input_grad[0]:
            # The transposed convolution: every input position collects the taps that read it.
            grad_u = torch.zeros_like(u)  # (B, L + K - 1, H, D)
            for k in range(kernel_size):
                grad_u[:, k : k + length].addcmul_(grad_y, _tap(weight, k))
        if ctx.needs_input_grad[1]:
            # Tap k's gradient is <u[:, k:k+L], grad_y> summed over the dimensions the tap is shared along.
            taps = weight.new_empty((kernel_size, *weight.shape[:-1]))  # (K, H) or (K, B, L, H)
            batch, ext_len, n_heads, head_dim = u.shape
            if weight.dim() == 2:
                # Shared kernel: with each head's data laid out as rows of B D values, tap k is one long dot
                # product per head between rows k..k+L-1 of u (a contiguous block) and grad_y, computed as a
                # contiguous multiply and row sum (a strided (0, 1, 3) reduction and bmm "dots" were 2-50x slower).
                u_rows = u.permute(2, 1, 0, 3).reshape(n_heads, ext_len * batch * head_dim)  # (H, (L+K-1) B D)
                g_rows = grad_y.permute(2, 1, 0, 3).reshape(n_heads, length * batch * head_dim)  # (H, L B D)
                span = length * batch * head_dim
                scratch = torch.empty_like(g_rows)  # (H, L B D), reused by every tap
                for k in range(kernel_size):
                    start = k * batch * head_dim
                    torch.mul(u_rows[:, start : start + span], g_rows, out=scratch)  # rows k..k+L-1 of u
                    torch.sum(scratch, dim=-1, out=taps[k])
            else:
                # Per-position kernels: a dot product over the D channels of each (sample, position, head).
                # One scratch buffer is reused for the products instead of allocating one per tap.
                scratch = torch.empty_like(grad_y)  # (B, L, H, D)
                for k in range(kernel_size):
                    torch.mul(u[:, k : k + length], grad_y, out=scratch)
                    torch.sum(scratch, dim=-1, out=taps[k])
            grad_w = taps.movedim(0, -1)  # (K, ...) -> (..., K)
        return grad_u, grad_w


def depthwise_conv_unfold(u_ext: Tensor, weight: Tensor, n_heads: int) -> Tensor:
    """Valid depthwise convolution, unfold formulation.

    Args:
        u_ext: (B, L + K - 1, d) the already padded input.
        weight: (H, K) one kernel per head, or (B, L, H, K) one kernel per head and output position.
        n_heads: H; channel c belongs to head ``c // (d // H)``.

    Returns:
        (B, L, d) with ``y[b, t, c] = sum_k weight[.., h(c), k] * u_ext[b, t + k, c]``.
    """
    batch, ext_len, width = u_ext.shape
    head_dim = width // n_heads
    u4 = u_ext.reshape(batch, ext_len, n_heads, head_dim)  # (B, L + K - 1, H, D): split channels into heads
    y = _TapSum.apply(u4, weight.to(u_ext.dtype))  # (B, L, H, D)
    return y.reshape(batch, y.shape[1], width)  # (B, L, H, D) -> (B, L, d)


# ---------------------------------------------------------------------------------------------------------------
# The band formulation.
# ---------------------------------------------------------------------------------------------------------------


def band_matrix(taps: Tensor) -> Tensor:
    """Lay per-row kernels out as banded matrices.

    Args:
        taps: (N, L, K) the kernel of each of the L output rows.

    Returns:
        (N, L, L + K - 1) ``M`` with ``M[n, t, t + k] = taps[n, t, k]`` and zeros elsewhere, so that
        ``M @ u_ext`` is the valid convolution of ``u_ext`` (N, L + K - 1, D).

    Row t needs its K taps shifted right by t. Padding every row on the left with L zeros and reading the
    flattened (L, L + K) buffer back with a row length one shorter (L + K - 1) after dropping the first L
    elements shifts row t by exactly t: its window starts at column L - t of the padded row t, and whatever spills
    past the taps comes from the zero padding of row t + 1. All of it is differentiable (pad, slice, reshape).
    """
    n, length, kernel_size = taps.shape
    padded = F.pad(taps, (length, 0))  # (N, L, L + K): L zeros before the taps of every row
    flat = padded.reshape(n, length * (length + kernel_size))  # (N, L (L + K))
    return flat[:, length:].reshape(n, length, length + kernel_size - 1)  # (N, L, L + K - 1)


def depthwise_conv_band(u_ext: Tensor, weight: Tensor, n_heads: int) -> Tensor:
    """Valid depthwise convolution, band-matrix formulation; same arguments and result as the unfold one."""
    batch, ext_len, width = u_ext.shape
    head_dim = width // n_heads
    kernel_size = weight.shape[-1]
    length = ext_len - kernel_size + 1
    weight = weight.to(u_ext.dtype)
    u4 = u_ext.reshape(batch, ext_len, n_heads, head_dim)  # (B, L + K - 1, H, D)
    if weight.dim() == 2:
        # One kernel per head for the whole batch: fold the batch into the GEMM's columns, giving H products
        # (L, L + K - 1) @ (L + K - 1, B D) instead of B H thin ones.
        band = band_matrix(weight.unsqueeze(1).expand(n_heads, length, kernel_size))  # (H, L, L + K - 1)
        cols = u4.permute(2, 1, 0, 3).reshape(n_heads, ext_len, batch * head_dim)  # (H, L + K - 1, B D)
        y = torch.bmm(band, cols)  # (H, L, B D)
        y = y.reshape(n_heads, length, batch, head_dim).permute(2, 1, 0, 3)  # (B, L, H, D)
    else:
        # A kernel per sample, head and position: one band per (sample, head).
        taps = weight.permute(0, 2, 1, 3).reshape(batch * n_heads, length, kernel_size)  # (B H, L, K)
        band = band_matrix(taps)  # (B H, L, L + K - 1)
        cols = u4.transpose(1, 2).reshape(batch * n_heads, ext_len, head_dim)  # (B H, L + K - 1, D)
        y = torch.bmm(band, cols)  # (B H, L, D)
        y = y.reshape(batch, n_heads, length, head_dim).transpose(1, 2)  # (B, L, H, D)
    return y.reshape(batch, length, width)  # (B, L, H, D) -> (B, L, d)


def depthwise_conv(u_ext: Tensor, weight: Tensor, n_heads: int, impl: str = "auto") -> Tensor:
    """Valid depthwise convolution by the formulation ``impl`` ("auto" chooses by length, see :func:`choose_impl`)."""
    if impl == "auto":
        kernel_size = weight.shape[-1]
        backward = torch.is_grad_enabled() and (u_ext.requires_grad or weight.requires_grad)
        impl = choose_impl(u_ext.shape[1] - kernel_size + 1, kernel_size, weight.dim() == 4, backward)
    if impl == "band":
        return depthwise_conv_band(u_ext, weight, n_heads)
    return depthwise_conv_unfold(u_ext, weight, n_heads)


# ---------------------------------------------------------------------------------------------------------------
# Decoding cache and the module shell.
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class ConvCache:
    """Incremental-decoding state of a causal LightConv/DynamicConv.

    Attributes:
        window: (B, K - 1, d_model) the GLU outputs of the last K - 1 positions (oldest first); zeros stand for
            the positions before the start, exactly like the causal left padding of the full forward.
        length: number of positions consumed so far (S); the next call's mask covers S + T positions.
    """

    window: Tensor
    length: int = 0

    def nbytes(self) -> int:
        """Memory held by the cache, in bytes."""
        return self.window.numel() * self.window.element_size()

    def reorder(self, index: Tensor) -> ConvCache:
        """A cache whose sample ``i`` is this cache's sample ``index[i]`` (beam search reordering)."""
        return ConvCache(self.window.index_select(0, index), self.length)


class GLUConvMixer(nn.Module):
    """Shell of LightConv and DynamicConv: GLU input projection, padding, convolution, output projection.

    Subclasses define ``_kernel(u)``, returning the normalized, dropped-out kernel ((H, K) or (B, T, H, K)),
    and their extra options and parameters.
    """

    #: Options every convolutional mixer accepts (the contract's ``option_defaults``); subclasses may extend it.
    option_defaults: ClassVar[dict[str, Any]] = {
        "kernel_size": 3,
        "weight_dropout": None,
        "weight_softmax": True,
        "impl": "auto",
    }

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        max_len: int,
        causal: bool = False,
        dropout: float = 0.0,
        **options: Any,
    ) -> None:
        super().__init__()
        opts = self._resolve(d_model, n_heads, max_len, dropout, options)
        self.d_model = d_model
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.max_len = max_len
        self.causal = bool(causal)
        self.kernel_size: int = opts["kernel_size"]
        # `dropout`, the contract's mixing-weight dropout, is the kernel's dropout unless weight_dropout is given:
        # the normalized kernel plays the part of the attention probabilities.
        self.weight_dropout: float = dropout if opts["weight_dropout"] is None else opts["weight_dropout"]
        self.weight_softmax: bool = opts["weight_softmax"]
        self.impl: str = opts["impl"]
        # Causal: output t sees t-K+1..t. Non-causal: centred for odd K; for even K one more tap on the right
        # (left padding (K-1)//2), as fairseq's encoder does.
        self.padding_left = self.kernel_size - 1 if self.causal else (self.kernel_size - 1) // 2
        self.padding_right = self.kernel_size - 1 - self.padding_left
        self.in_proj = nn.Linear(d_model, 2 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    @classmethod
    def _resolve(
        cls, d_model: Any, n_heads: Any, max_len: Any, dropout: Any, options: dict[str, Any]
    ) -> dict[str, Any]:
        """Validate the constructor arguments; return the options merged with their defaults."""
        owner = cls.__name__
        check_core_args(owner, d_model, n_heads, max_len, dropout)
        opts = resolve_options(owner, options, cls.option_defaults)
        k = opts["kernel_size"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"{owner}: kernel_size must be a positive int, got {k!r}")
        if opts["weight_dropout"] is not None:
            opts["weight_dropout"] = check_probability(owner, "weight_dropout", opts["weight_dropout"])
        if not isinstance(opts["weight_softmax"], bool):
            raise ValueError(f"{owner}: weight_softmax must be a bool, got {opts['weight_softmax']!r}")
        if opts["impl"] not in CONV_IMPLS:
            raise ValueError(f"{owner}: impl must be one of {CONV_IMPLS}, got {opts['impl']!r}")
        return opts

    def reset_parameters(self) -> None:
        """Xavier-uniform projections with zero biases (as fairseq's LightConv layers)."""
        for lin in (self.in_proj, self.out_proj):
            nn.init.xavier_uniform_(lin.weight)
            nn.init.zeros_(lin.bias)

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, n_heads={self.n_heads}, max_len={self.max_len}, causal={self.causal}, "
            f"kernel_size={self.kernel_size}, weight_dropout={self.weight_dropout}, "
            f"weight_softmax={self.weight_softmax}, impl={self.impl!r}"
        )

    def _normalize(self, logits: Tensor) -> Tensor:
        """Softmax over the K taps (if enabled), then weight dropout (training only). logits (..., K)."""
        weight = torch.softmax(logits, dim=-1) if self.weight_softmax else logits
        return F.dropout(weight, p=self.weight_dropout, training=self.training)

    def _kernel(self, u: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def init_cache(
        self, batch_size: int, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> ConvCache:
        """An empty decoding cache: K - 1 zero GLU outputs per sample (the causal left padding).

        Raises:
            ValueError: if the mixer is not causal (a non-causal convolution reads future tokens).
        """
        if not self.causal:
            raise ValueError(
                f"{type(self).__name__}: incremental decoding needs causal=True; this mixer is non-causal "
                "(its centred kernel reads future positions)"
            )
        ref = self.in_proj.weight
        window = torch.zeros(
            batch_size,
            self.kernel_size - 1,
            self.d_model,
            device=ref.device if device is None else device,
            dtype=ref.dtype if dtype is None else dtype,
        )  # (B, K - 1, d)
        return ConvCache(window=window, length=0)

    def forward(
        self, x: Tensor, key_padding_mask: Tensor | None = None, cache: ConvCache | None = None
    ) -> Tensor | tuple[Tensor, ConvCache]:
        """Mix tokens.

        Args:
            x: (B, L, d_model); with a cache, (B, T, d_model) the next T positions.
            key_padding_mask: None or (B, L) bool, True marks padding; with a cache, (B, S + T) covering the
                cached positions too (only the last T columns are read: the cached ones were applied already).
            cache: None, or the :class:`ConvCache` from :meth:`init_cache` or the previous call (causal only).

        Returns:
            y (B, L, d_model); with a cache, ``(y, new_cache)`` (the given cache is not modified).
        """
        owner = type(self).__name__
        past = 0
        if cache is not None:
            if not self.causal:
                raise ValueError(f"{owner}: a cache was given but the mixer is non-causal; see init_cache")
            past = cache.length
        check_input(owner, x, self.d_model, self.max_len, key_padding_mask, past)
        batch, length, _ = x.shape

        u = F.glu(self.in_proj(x), dim=-1)  # (B, L, 2 d) -> (B, L, d)
        if key_padding_mask is not None:
            # Zero the padded positions before mixing so they contribute nothing to real positions' outputs.
            new_mask = key_padding_mask[:, past:]  # (B, L): the mask of the new positions
            u = u.masked_fill(new_mask.unsqueeze(-1), 0.0)
        weight = self._kernel(u)  # (H, K) or (B, L, H, K)

        if cache is None:
            u_ext = F.pad(u, (0, 0, self.padding_left, self.padding_right))  # (B, L + K - 1, d)
            new_cache = None
        else:
            if cache.window.shape != (batch, self.kernel_size - 1, self.d_model):
                raise ValueError(
                    f"{owner}: cache window has shape {tuple(cache.window.shape)}, expected "
                    f"(B, K - 1, d_model) = {(batch, self.kernel_size - 1, self.d_model)}"
                )
            u_ext = torch.cat([cache.window.to(u.dtype), u], dim=1)  # (B, K - 1 + T, d)
            # The last K - 1 GLU outputs; `u_ext[:, length:]` also handles K = 1 (an empty window).
            # Not detached, so a chunked forward back-propagates like the full one; decode under no_grad.
            new_cache = ConvCache(window=u_ext[:, length:], length=past + length)

        y = depthwise_conv(u_ext, weight, self.n_heads, self.impl)  # (B, L, d)
        y = self.out_proj(y)
        return y if new_cache is None else (y, new_cache)

    @classmethod
    def _projection_params(cls, d_model: int) -> int:
        """Parameters of the GLU input projection (d -> 2d, with bias) and the output projection (d -> d)."""
        return (d_model * 2 * d_model + 2 * d_model) + (d_model * d_model + d_model)
