"""Dynamic convolution (Wu et al., 2019, "Pay Less Attention with Lightweight and Dynamic Convolutions").

Like :class:`~synthformer.mixers.LightConv`, but the kernel of output position t is predicted from the token at
t: ``W_t = softmax(reshape(u_t W_k + b_k, (H, K)))`` over the K taps, with weight dropout, where ``u_t`` is the
GLU output at t, i.e. the convolution's own input at the current position (the paper's ``f(X_i)``, with X the
input of the convolution; fairseq's DynamicConv uses the same query by default).
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from synthformer.attention import register

from ._conv import GLUConvMixer

__all__ = ["DynamicConv"]


@register("DynamicConv", aliases=("dynamic_conv",))
class DynamicConv(GLUConvMixer):
    """Dynamic convolution token mixer.

    Args:
        d_model: width of the input and output.
        n_heads: H; each position predicts one K-tap kernel per head, shared by the head's channels.
        max_len: longest accepted sequence.
        causal: if True output t sees t-K+1..t and incremental decoding is available; else centred kernel
            (padding (K-1)//2 left, K//2 right).
        dropout: dropout on the normalized kernels unless ``weight_dropout`` is given.

    Options:
        kernel_size (int, default 3), weight_dropout (float or None, default None: use ``dropout``),
        weight_softmax (bool, default True), impl ("auto" | "unfold" | "band", default "auto"): as LightConv.
        With per-position kernels the band path needs one (L, L + K - 1) matrix per sample and head, so it pays
        off less often: in a training step (B=16, d_model=512, H=8, 2-core CPU) band was faster only for K = 31,
        up to L = 192, and in inference up to L = 8 / 32 / 64 for K = 7 / 15 / 31 (never for K = 3); see
        :func:`synthformer.mixers.choose_impl`.

    Shapes: as :class:`~synthformer.mixers.LightConv`; the predicted kernels are (B, L, H, K).

    Parameters: ``kernel_proj`` (d -> H K, with bias), ``in_proj`` (d -> 2d), ``out_proj`` (d -> d).
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
        self.kernel_proj = nn.Linear(d_model, n_heads * self.kernel_size)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Xavier-uniform projections, zero biases."""
        super().reset_parameters()
        nn.init.xavier_uniform_(self.kernel_proj.weight)
        nn.init.zeros_(self.kernel_proj.bias)

    def _kernel(self, u: Tensor) -> Tensor:
        """Per-position kernels predicted from the GLU outputs u (B, L, d) -> (B, L, H, K)."""
        batch, length, _ = u.shape
        logits = self.kernel_proj(u)  # (B, L, H K)
        logits = logits.reshape(batch, length, self.n_heads, self.kernel_size)  # (B, L, H K) -> (B, L, H, K)
        return self._normalize(logits)

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, **options: Any) -> int:
        """Trainable parameters: ``3 d^2 + 3 d`` for the projections plus ``(d + 1) H K`` for the kernel predictor."""
        opts = cls._resolve(d_model, n_heads, max_len, 0.0, options)
        return cls._projection_params(d_model) + (d_model + 1) * n_heads * opts["kernel_size"]
