"""Lightweight convolution (Wu et al., 2019, "Pay Less Attention with Lightweight and Dynamic Convolutions").

``LightConv(X)[t, c] = sum_k softmax(W[h(c)])[k] * GLU(X W_in)[t + k - P, c]``, then an output projection:
a depthwise convolution whose kernel has K taps per head, softmax-normalized over the taps and shared by the
``d_model // n_heads`` channels of the head (the paper's weight sharing, ``h(c) = c // (d_model // n_heads)``),
with dropout on the normalized kernel ("DropConnect", training only).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from synthformer.attention import register

from ._conv import GLUConvMixer

__all__ = ["LightConv"]


@register("LightConv", aliases=("light_conv", "lightweight_conv"))
class LightConv(GLUConvMixer):
    """Lightweight convolution token mixer.

    Args:
        d_model: width of the input and output.
        n_heads: H, number of kernels; channels of a head share one kernel.
        max_len: longest accepted sequence.
        causal: if True output t sees t-K+1..t (left padding K - 1) and incremental decoding is available;
            else the kernel is centred (padding (K-1)//2 on the left, K//2 on the right: for even K, one more tap
            on the right, as in fairseq's encoder).
        dropout: dropout on the normalized kernel (the analogue of attention dropout) unless ``weight_dropout``
            is given.

    Options:
        kernel_size (int, default 3): K.
        weight_dropout (float or None, default None): dropout on the normalized kernel; None means ``dropout``.
        weight_softmax (bool, default True): softmax-normalize each head's kernel over its K taps.
        impl ("auto" | "unfold" | "band", default "auto"): formulation of the convolution; all give the same
            result up to rounding. "unfold" sums the K taps of the shifted sequence (O(L K), memory O(L));
            "band" multiplies by an (L, L + K - 1) banded matrix per head with the batch folded into the GEMM
            (O(L^2), fast for short L). "auto" picks band up to a measured crossover length: in a training step
            (B=16, d_model=512, H=8, 2-core CPU) band was faster up to L = 32 / 128 / 256 for K = 7 / 15 / 31
            and never for K = 3; in inference up to L = 24 / 24 / 48 for K = 7 / 15 / 31. Full table
            and rule: :func:`synthformer.mixers.choose_impl`.

    Shapes: ``forward(x (B, L, d_model), key_padding_mask (B, L) bool | None) -> (B, L, d_model)``; with a
    cache, ``forward(x (B, T, d_model), key_padding_mask (B, S + T) | None, cache) -> (y (B, T, d_model), cache)``.

    Parameters: ``weight`` (H, K) the kernel logits, ``in_proj`` (d -> 2d), ``out_proj`` (d -> d).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        max_len: int,
        causal: bool = False,
        dropout: float = 0.0,
        **options: Any,
    ) -> None:
        super().__init__(d_model, n_heads, max_len, causal, dropout, **options)
        self.weight = nn.Parameter(torch.empty(n_heads, self.kernel_size))  # (H, K) kernel logits
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Xavier-uniform kernel and projections, zero biases."""
        super().reset_parameters()
        nn.init.xavier_uniform_(self.weight)

    def _kernel(self, u: Tensor) -> Tensor:
        """The normalized, dropped-out kernel (H, K); the same for every sample and position."""
        return self._normalize(self.weight)

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, **options: Any) -> int:
        """Trainable parameters: ``3 d^2 + 3 d`` for the projections plus ``H K`` for the kernel."""
        opts = cls._resolve(d_model, n_heads, max_len, 0.0, options)
        return cls._projection_params(d_model) + n_heads * opts["kernel_size"]
