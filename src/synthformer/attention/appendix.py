"""The additional synthesizing functions of the paper's appendix A.2 (Table 8).

* ``Conv``: a width-f 1-D convolution in place of the two-layer network of ``D`` ("Conv (f = 3) Linear").
* ``ConvReluConv``: both layers of ``D`` as width-f convolutions with a ReLU between them.
* ``Bottleneck``: ``D`` with a narrow hidden layer (d -> r -> l, r = 16 by default).
* ``GLU``: ``D`` with its ReLU hidden layer replaced by a gated linear unit (Dauphin et al., 2017).

The convolutions read a window of tokens around token i (only the past, ``i-f+1 .. i``, in causal layers),
so they are no longer conditioned on ``X_i`` alone; they zero padded positions of their inputs, so padding
never leaks into the logits of real tokens, and in incremental decoding they keep the last ``f-1`` inputs.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .base import SynthesizingFunction, inner_width, split_heads
from .dense import HiddenToLength
from .registry import register


def _zero_padding(x: Tensor, key_padding_mask: Tensor | None, start: int) -> Tensor:
    """Zero the padded positions of ``x`` (B, T, C); the mask covers positions 0 .. start+T-1."""
    if key_padding_mask is None:
        return x
    return x.masked_fill(key_padding_mask[:, start : start + x.shape[1], None], 0.0)


def _pad_window(x: Tensor, width: int, causal: bool, state: dict | None, key: str) -> Tensor:
    """Pad channels-first ``x`` (B, C, T) so that a width-``width`` convolution without padding returns T outputs.

    Causal layers see positions ``t-width+1 .. t``; others a centered window (``(width-1)//2`` on the left).
    In decoding, the left context comes from ``state[key]`` (the last ``width-1`` inputs, zeros at the start,
    exactly the zero padding of the full forward), which is then updated.
    """
    if state is not None:
        full = torch.cat([state[key], x], dim=-1)  # (B, C, width-1+T)
        if width > 1:
            state[key] = full[..., full.shape[-1] - (width - 1) :]
        return full
    left = width - 1 if causal else (width - 1) // 2
    return F.pad(x, (left, width - 1 - left))


def _check_width(width: int) -> int:
    width = int(width)
    if width < 1:
        raise ValueError(f"conv_width must be >= 1, got {width}")
    return width


@register("Conv", aliases=("conv", "conv_linear"))
class Conv(SynthesizingFunction):
    """``B_i = sum_t W_t x_{i+t} + b`` (appendix A.2, "Conv Linear"): one width-f convolution from d to l per head.

    Weight (H, max_len, d, f), bias (H, max_len); the first S output channels of each head are used.
    Parameters: ``H l d f + H l``.
    """

    reads_context = True
    #: a window of neighbouring *query* tokens would need target-side decoding state in the cross layer
    supports_cross = False
    supports_head_dim = True  # each head reads the whole token: head_dim is the values' width alone
    option_defaults = {"conv_width": 3}

    def __init__(self, d_model: int, n_heads: int, max_len: int, causal: bool = False, **options):
        super().__init__(d_model, n_heads, max_len, causal, **options)
        self.width = _check_width(self.options["conv_width"])
        bound = 1.0 / math.sqrt(d_model * self.width)  # the nn.Conv1d default
        self.weight = nn.Parameter(torch.empty(n_heads, max_len, d_model, self.width).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(n_heads, max_len).uniform_(-bound, bound))

    def logits(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> Tensor:
        b, t, _ = x.shape
        s = start + t
        x = _zero_padding(x, key_padding_mask, start)
        window = _pad_window(x.transpose(1, 2), self.width, self.causal, state, "x")  # (B, d, T+f-1)
        w = self.weight[:, :s].reshape(self.n_heads * s, self.d_model, self.width)  # (H*S, d, f)
        out = F.conv1d(window, w, self.bias[:, :s].reshape(-1))  # (B, H*S, T)
        return out.view(b, self.n_heads, s, t).transpose(-1, -2)  # (B, H, S, T) -> (B, H, T, S)

    def init_state(self, batch_size: int, device, dtype) -> dict:
        return {"x": torch.zeros(batch_size, self.d_model, self.width - 1, device=device, dtype=dtype)}

    @classmethod
    def macs(cls, batch: int, length: int, d_model: int, heads: int, options: dict, pairs: int) -> int:
        """A width-f convolution from d to L channels per head, ``H d f`` per pair."""
        return batch * heads * pairs * d_model * int(options["conv_width"])

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, **options) -> int:
        """``H l d f`` + ``H l`` biases."""
        f = int(cls.resolved_options(**options)["conv_width"])
        return n_heads * max_len * d_model * f + n_heads * max_len


@register("ConvReluConv", aliases=("conv_relu_conv",))
class ConvReluConv(SynthesizingFunction):
    """``B = Conv2(relu(Conv1(X)))`` (appendix A.2): eq. (2) with both layers as width-f convolutions.

    ``Conv1`` maps d -> d (split into heads like ``W1`` of ``D``; d -> ``H d_h`` with ``head_dim``); ``Conv2`` is
    grouped per head, d_h -> l. Padded positions of both the input and the hidden sequence are zeroed.
    Parameters: ``f d^2 + f d l`` + ``d + H l`` biases (the hidden ``d`` is ``H d_h`` with ``head_dim``).
    """

    reads_context = True
    #: a window of neighbouring *query* tokens would need target-side decoding state in the cross layer
    supports_cross = False
    supports_head_dim = True
    option_defaults = {"conv_width": 3}

    def __init__(self, d_model: int, n_heads: int, max_len: int, causal: bool = False, **options):
        super().__init__(d_model, n_heads, max_len, causal, **options)
        self.width = _check_width(self.options["conv_width"])
        self.conv1 = nn.Conv1d(d_model, self.inner_dim, self.width)
        bound = 1.0 / math.sqrt(self.head_dim * self.width)
        self.weight2 = nn.Parameter(torch.empty(n_heads, max_len, self.head_dim, self.width).uniform_(-bound, bound))
        self.bias2 = nn.Parameter(torch.empty(n_heads, max_len).uniform_(-bound, bound))

    def logits(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> Tensor:
        b, t, _ = x.shape
        s = start + t
        x = _zero_padding(x, key_padding_mask, start)
        h = torch.relu(self.conv1(_pad_window(x.transpose(1, 2), self.width, self.causal, state, "x")))  # (B, Hd_h, T)
        h = _zero_padding(h.transpose(1, 2), key_padding_mask, start).transpose(1, 2)  # (B, H d_h, T)
        w = self.weight2[:, :s].reshape(self.n_heads * s, self.head_dim, self.width)  # (H*S, d_h, f)
        window = _pad_window(h, self.width, self.causal, state, "h")  # (B, H d_h, T+f-1)
        out = F.conv1d(window, w, self.bias2[:, :s].reshape(-1), groups=self.n_heads)  # (B, H*S, T)
        return out.view(b, self.n_heads, s, t).transpose(-1, -2)  # (B, H, S, T) -> (B, H, T, S)

    def init_state(self, batch_size: int, device, dtype) -> dict:
        return {"x": torch.zeros(batch_size, self.d_model, self.width - 1, device=device, dtype=dtype),
                "h": torch.zeros(batch_size, self.inner_dim, self.width - 1, device=device, dtype=dtype)}

    @classmethod
    def macs(cls, batch: int, length: int, d_model: int, heads: int, options: dict, pairs: int) -> int:
        """``f d^2`` (d -> d) per token and ``f d`` (per head d_h -> L) per pair; the hidden ``d`` is ``H d_h``
        with ``head_dim``."""
        f = int(options["conv_width"])
        inner = inner_width(d_model, heads, options.get("head_dim"))
        return batch * (length * f * d_model * inner + f * inner * pairs)

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, **options) -> int:
        """``f d^2 + f d l`` + ``d + H l`` biases; the hidden ``d`` is ``H d_h`` with ``head_dim``."""
        opts = cls.resolved_options(**options)
        f = int(opts["conv_width"])
        inner = inner_width(d_model, n_heads, opts.get("head_dim"))
        return f * d_model * inner + inner + f * inner * max_len + n_heads * max_len


@register("Bottleneck", aliases=("bottleneck",))
class Bottleneck(HiddenToLength):
    """``B_i = W2 relu(W1 x_i + b1) + b2`` with a narrow hidden layer (appendix A.2: d -> r -> l per head).

    Option ``r`` (default 16, the paper's example). Parameters: ``H r (d + l)`` + ``H r + H l`` biases.
    """

    supports_head_dim = True  # the hidden layer is r wide whatever the head width: head_dim is the values' alone
    option_defaults = {"r": 16}

    def __init__(self, d_model: int, n_heads: int, max_len: int, causal: bool = False, **options):
        super().__init__(d_model, n_heads, max_len, causal, **options)
        self.r = int(self.options["r"])
        if self.r < 1:
            raise ValueError(f"Bottleneck width r must be >= 1, got {self.r}")
        self.W1 = nn.Linear(d_model, n_heads * self.r)
        self._init_tail(self.r)

    def hidden(self, x: Tensor, start: int, state: dict | None, key_padding_mask: Tensor | None) -> Tensor:
        return split_heads(torch.relu(self.W1(x)), self.n_heads)  # (B, H, T, r)

    @classmethod
    def macs(cls, batch: int, length: int, d_model: int, heads: int, options: dict, pairs: int) -> int:
        """d -> r -> L per head: ``H r d`` per token and ``H r`` per pair."""
        return batch * heads * int(options["r"]) * (length * d_model + pairs)

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, **options) -> int:
        """``H r (d + l)`` + ``H r + H l`` biases."""
        r = int(cls.resolved_options(**options)["r"])
        return n_heads * r * (d_model + max_len) + n_heads * r + n_heads * max_len


@register("GLU", aliases=("glu",))
class GatedDense(HiddenToLength):
    """``B_i = W2 GLU(x_i) + b2``, ``GLU(x) = (W x + b) * sigmoid(V x + c)`` (appendix A.2, Dauphin et al.).

    The gated unit replaces the ReLU layer of ``D``; its d outputs (``H d_h`` with ``head_dim``) are split into
    heads as in ``D``. Parameters: ``2 d^2 + d l`` + ``2 d + H l`` biases (the unit's output ``d`` is ``H d_h``
    with ``head_dim``).
    """

    supports_head_dim = True

    def __init__(self, d_model: int, n_heads: int, max_len: int, causal: bool = False, **options):
        super().__init__(d_model, n_heads, max_len, causal, **options)
        self.W1 = nn.Linear(d_model, 2 * self.inner_dim)
        self._init_tail(self.head_dim)

    def hidden(self, x: Tensor, start: int, state: dict | None, key_padding_mask: Tensor | None) -> Tensor:
        # (B, T, 2 H d_h) -> (B, T, H d_h) -> (B, H, T, d_h)
        return split_heads(F.glu(self.W1(x), dim=-1), self.n_heads)

    @classmethod
    def macs(cls, batch: int, length: int, d_model: int, heads: int, options: dict, pairs: int) -> int:
        """The gated unit's two d x d maps (``2 d^2`` per token) and ``W2`` (``d`` per pair); the unit's output
        ``d`` is ``H d_h`` with ``head_dim``."""
        inner = inner_width(d_model, heads, options.get("head_dim"))
        return batch * (length * 2 * d_model * inner + pairs * inner)

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, **options) -> int:
        """``2 d^2 + d l`` + ``2 d + H l`` biases; the unit's output ``d`` is ``H d_h`` with ``head_dim``."""
        inner = inner_width(d_model, n_heads, options.get("head_dim"))
        return 2 * d_model * inner + 2 * inner + inner * max_len + n_heads * max_len
