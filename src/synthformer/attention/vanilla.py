"""``V``: the Transformer's scaled dot-product attention, as a synthesizing function (paper section 3.2)."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .base import SynthesizingFunction, inner_width, split_heads
from .registry import register


@register("V", aliases=("vanilla", "dot_product", "dot"))
class DotProduct(SynthesizingFunction):
    """``S(X) = Q K^T / sqrt(d_h)`` with ``Q = X W_Q + b_Q``, ``K = X W_K + b_K``, per head.

    The paper writes ``S(X) = F_Q(X) F_K(X)^T`` (section 3.2); the ``1/sqrt(d_h)`` scale of Vaswani et al.
    is kept so that mixtures combine the same logits a Transformer would compute (an unscaled ``QK^T``
    in a mixture is one of the bugs listed in the guide).

    Parameters: ``W_Q``, ``W_K`` (d x d each, fused into one ``qk`` projection) and their biases:
    ``2 d^2 + 2 d`` for the layer (Table 1: ``2 d^2``). With ``head_dim`` each is d x ``H d_h``.

    Decoding state: the keys of all past positions, (B, H, max_len, d_h).

    Cross-attention (``cross=True``): queries from the target, keys from the encoder memory, so two projections
    ``query`` and ``key`` (drawn in that order) instead of the fused ``qk``; the memory's keys
    (:meth:`memory_keys`, (B, H, S, d_h)) are computed once per source batch.
    """

    paper_name = "Vanilla"
    uses_qk = True
    has_features = True
    supports_cross = True
    supports_head_dim = True
    #: The layer options (``shell.LAYER_OPTIONS``) V takes part in: ``bias`` (biases of Q and K) and ``scaled``
    #: (``1/sqrt(d_h)``; T5 leaves its dot product unscaled, the scale being folded into Q's initialisation).
    option_defaults = {"bias": True, "scaled": True}

    def __init__(self, d_model: int, n_heads: int, max_len: int, causal: bool = False, **options):
        super().__init__(d_model, n_heads, max_len, causal, **options)
        bias = self.options["bias"]
        if self.cross:
            self.query = nn.Linear(d_model, self.inner_dim, bias=bias)
            self.key = nn.Linear(d_model, self.inner_dim, bias=bias)
            self.memory_key_width = self.head_dim
        else:
            self.qk = nn.Linear(d_model, 2 * self.inner_dim, bias=bias)
        self.scale = 1.0 / math.sqrt(self.head_dim) if self.options["scaled"] else 1.0

    def _qk(self, x: Tensor, start: int, state: dict | None) -> tuple[Tensor, Tensor]:
        q, k = self.qk(x).chunk(2, dim=-1)  # (B, T, H d_h) each
        q, k = split_heads(q, self.n_heads), split_heads(k, self.n_heads)  # (B, H, T, d_h)
        if state is not None:
            t = x.shape[1]
            state["k"][:, :, start : start + t] = k
            k = state["k"][:, :, : start + t]  # (B, H, S, d_h)
        return q, k

    def features(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        q, k = self._qk(x, start, state)
        return q * self.scale, k

    def logits(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> Tensor:
        q, k = self.features(x, start, state)
        return q @ k.transpose(-1, -2)  # (B, H, T, S)

    def positioned_logits(
        self, x: Tensor, start: int, state: dict | None, key_padding_mask: Tensor | None, positions: Tensor
    ) -> Tensor:
        """The plain logits: V reads tokens only (positions reach it through the embeddings)."""
        return self.logits(x, start, state, key_padding_mask)  # (B, H, T, S)

    def queries(self, x: Tensor) -> Tensor:
        """Cross mode: the unscaled per-head queries of the target, (B, T, d) -> (B, T, H d_h) -> (B, H, T, d_h)."""
        return split_heads(self.query(x), self.n_heads)

    def memory_keys(self, memory: Tensor) -> Tensor:
        """Cross mode: the keys of the memory, (B, S, d) -> (B, H, S, d_h)."""
        return split_heads(self.key(memory), self.n_heads)

    def cross_logits(self, x: Tensor, keys: int, start: int = 0, memory_k: Tensor | None = None) -> Tensor:
        if memory_k is None or memory_k.shape[2] != keys:
            got = None if memory_k is None else tuple(memory_k.shape)
            raise ValueError(f"V's cross logits need the memory's keys (B, H, {keys}, d_h) from memory_keys, got {got}")
        return (self.queries(x) * self.scale) @ memory_k.transpose(-1, -2)  # (B, H, T, S)

    @torch.no_grad()
    def scale_logits_(self, factor: Tensor) -> None:
        """Scale head h's query projection (weights and bias) by ``factor[h]``: its logits scale by the same."""
        if self.cross:
            raise NotImplementedError("rescaling the logits of a cross-attention V is not supported")
        rows = factor.repeat_interleave(self.head_dim).to(self.qk.weight.dtype)  # (H d_h,): one factor per q row
        self.qk.weight[: self.inner_dim].mul_(rows[:, None])
        if self.qk.bias is not None:
            self.qk.bias[: self.inner_dim].mul_(rows)

    def init_state(self, batch_size: int, device, dtype) -> dict:
        return {"k": torch.zeros(batch_size, self.n_heads, self.max_len, self.head_dim, device=device, dtype=dtype)}

    @classmethod
    def macs(cls, batch: int, length: int, d_model: int, heads: int, options: dict, pairs: int) -> int:
        """The Q and K projections (``2 d^2`` per token) and ``Q K^T`` (``d`` per pair); ``d`` of the outputs is
        ``H d_h`` with ``head_dim``."""
        inner = inner_width(d_model, heads, options.get("head_dim"))
        return batch * (length * 2 * d_model * inner + pairs * inner)

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, **options) -> int:
        """``2 d^2`` (Table 1) + ``2 d`` biases (none with ``bias=False``); ``2 d H d_h + 2 H d_h`` with
        ``head_dim``."""
        inner = inner_width(d_model, n_heads, options.get("head_dim"))
        return 2 * d_model * inner + (2 * inner if options.get("bias", True) else 0)
