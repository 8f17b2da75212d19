"""Linformer self-attention (Wang et al., 2020, "Linformer: Self-Attention with Linear Complexity").

Keys and values are projected along the length axis down to k positions before the attention:
``head_i = softmax(Q_i (E_i K_i)^T / sqrt(d_h)) (F_i V_i)`` with ``E_i, F_i`` learned (k, max_len) matrices
cropped to their first L columns, so the attention matrix is (L, k) instead of (L, L).
"""

from __future__ import annotations

from typing import Any, ClassVar, NoReturn

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from synthformer.attention import check_core_args, check_input, register, resolve_options

__all__ = ["Linformer"]


@register("Linformer")
class Linformer(nn.Module):
    """Linformer token mixer (encoder-only).

    Args:
        d_model: width of the input and output.
        n_heads: H; head width ``d_h = d_model // H`` unless the option ``head_dim`` sets it.
        max_len: longest accepted sequence; E and F have max_len columns, the first L are used.
        causal: must be False (see below).
        dropout: dropout on the attention probabilities (training only).

    Options:
        k (int, default 32): length the keys and values are projected to (32 as in the Synthesizer paper's
            Table 7 comparison).
        share_kv (bool, default False): use one projection for keys and values (E = F).
        share_heads (bool, default True): one E (and F) for all heads of the layer, the Linformer paper's
            "headwise sharing" and the default of its released code; False gives every head its own.
        head_dim (int or None, default None): the head width d_h; None is ``d_model // H``. Given, Q, K and V
            are ``H d_h`` wide and the output projection maps them back to ``d_model`` (and ``d_model`` need not
            be divisible by H), as the attention shell's ``head_dim``.

    Padding: the projected keys and values of padded positions are zeroed before the length projection, so
    they add nothing to ``E K`` and ``F V``; outputs at real positions then do not depend on the padded tokens.

    Raises:
        ValueError: with ``causal=True``. The length projection mixes every position into each of the k
            compressed keys, so position t would see the future; masking cannot undo that, and there is no
            incremental decoding either (:meth:`init_cache` raises, as does passing a cache).

    Shapes: ``forward(x (B, L, d_model), key_padding_mask (B, L) bool | None) -> (B, L, d_model)``.

    Parameters: ``q_proj``, ``k_proj``, ``v_proj`` (d -> H d_h), ``out_proj`` (H d_h -> d), with biases (H d_h is
    d without ``head_dim``); ``E`` (P, k, max_len) and, unless share_kv, ``F`` (P, k, max_len), where P = 1 with
    share_heads else H.
    """

    option_defaults: ClassVar[dict[str, Any]] = {"k": 32, "share_kv": False, "share_heads": True, "head_dim": None}
    #: Linformer is encoder-only: ``causal=True`` raises (see :func:`synthformer.attention.contract.supports_causal`).
    supports_causal: ClassVar[bool] = False

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
        opts = self._resolve(d_model, n_heads, max_len, causal, dropout, options)
        self.d_model = d_model
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads if opts["head_dim"] is None else opts["head_dim"]
        self.inner_dim = n_heads * self.head_dim  # d_model without head_dim
        self.max_len = max_len
        self.causal = False
        self.dropout = float(dropout)
        self.k: int = opts["k"]
        self.share_kv: bool = opts["share_kv"]
        self.share_heads: bool = opts["share_heads"]
        self.q_proj = nn.Linear(d_model, self.inner_dim)
        self.k_proj = nn.Linear(d_model, self.inner_dim)
        self.v_proj = nn.Linear(d_model, self.inner_dim)
        self.out_proj = nn.Linear(self.inner_dim, d_model)
        n_proj = 1 if self.share_heads else n_heads
        self.E = nn.Parameter(torch.empty(n_proj, self.k, max_len))  # (P, k, max_len)
        # With share_kv, F is E itself: one parameter, counted and saved once.
        self.F = None if self.share_kv else nn.Parameter(torch.empty(n_proj, self.k, max_len))
        self.reset_parameters()

    @classmethod
    def _resolve(
        cls, d_model: Any, n_heads: Any, max_len: Any, causal: Any, dropout: Any, options: dict[str, Any]
    ) -> dict[str, Any]:
        """Validate the constructor arguments; return the options merged with their defaults."""
        owner = cls.__name__
        if causal:
            raise ValueError(
                f"{owner} cannot be causal: projecting the keys and values along the length axis mixes all "
                "positions (future ones included) into every compressed key, so no mask can hide the future. "
                "Use it as an encoder mixer (causal=False)."
            )
        opts = resolve_options(owner, options, cls.option_defaults)
        check_core_args(owner, d_model, n_heads, max_len, dropout, opts["head_dim"])
        k = opts["k"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"{owner}: k must be a positive int, got {k!r}")
        for name in ("share_kv", "share_heads"):
            if not isinstance(opts[name], bool):
                raise ValueError(f"{owner}: {name} must be a bool, got {opts[name]!r}")
        return opts

    def reset_parameters(self) -> None:
        """Xavier-uniform weights (per head for E and F), zero biases."""
        for lin in (self.q_proj, self.k_proj, self.v_proj, self.out_proj):
            nn.init.xavier_uniform_(lin.weight)
            nn.init.zeros_(lin.bias)
        for proj in (self.E, self.F):
            if proj is not None:
                for p in proj:
                    nn.init.xavier_uniform_(p)

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, n_heads={self.n_heads}, max_len={self.max_len}, k={self.k}, "
            f"share_kv={self.share_kv}, share_heads={self.share_heads}, dropout={self.dropout}"
        )

    def init_cache(
        self, batch_size: int, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> NoReturn:
        """Always raises: Linformer is encoder-only and has no incremental decoding."""
        raise ValueError(
            "Linformer has no incremental decoding: it is encoder-only (its length projection needs the whole "
            "sequence, future positions included)"
        )

    def _compress(self, proj: Tensor, seq: Tensor) -> Tensor:
        """Project a (B, L, H d_h) sequence along its length with ``proj`` (P, k, max_len) -> (B, H, k, d_h)."""
        batch, length, _ = seq.shape
        proj = proj[:, :, :length].to(seq.dtype)  # (P, k, L): crop to the first L columns
        if self.share_heads:
            # One (k, L) @ (L, H d_h) product per sample covers every head at once.
            out = torch.matmul(proj[0], seq)  # (B, k, H d_h)
            return out.reshape(batch, self.k, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, k, d_h)
        heads = seq.reshape(batch, length, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, L, d_h)
        return torch.matmul(proj, heads)  # (H, k, L) @ (B, H, L, d_h) -> (B, H, k, d_h)

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None, cache: Any = None) -> Tensor:
        """Mix tokens.

        Args:
            x: (B, L, d_model), 1 <= L <= max_len.
            key_padding_mask: None or (B, L) bool, True marks padding.
            cache: must be None (Linformer has no incremental decoding).

        Returns:
            (B, L, d_model).
        """
        if cache is not None:
            self.init_cache(0)  # raises the explanation
        check_input("Linformer", x, self.d_model, self.max_len, key_padding_mask)
        batch, length, _ = x.shape
        q = self.q_proj(x).reshape(batch, length, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, L, d_h)
        keys = self.k_proj(x)  # (B, L, H d_h)
        values = self.v_proj(x)  # (B, L, H d_h)
        if key_padding_mask is not None:
            # Zero padded keys/values before the length projection: they then add nothing to E K and F V.
            pad = key_padding_mask.unsqueeze(-1)  # (B, L, 1)
            keys = keys.masked_fill(pad, 0.0)
            values = values.masked_fill(pad, 0.0)
        keys_c = self._compress(self.E, keys)  # (B, H, k, d_h)
        values_c = self._compress(self.E if self.F is None else self.F, values)  # (B, H, k, d_h)
        # softmax(q k^T / sqrt(d_h)) over the k compressed positions; no mask is needed after the compression.
        attn = F.scaled_dot_product_attention(
            q, keys_c, values_c, dropout_p=self.dropout if self.training else 0.0
        )  # (B, H, L, d_h)
        y = attn.transpose(1, 2).reshape(batch, length, self.inner_dim)  # (B, H, L, d_h) -> (B, L, H d_h)
        return self.out_proj(y)

    @classmethod
    def layer_macs(cls, batch: int, length: int, d_model: int, heads: int, options: dict[str, Any],
                   causal: bool = False) -> int:
        """Multiply-adds of one forward pass of the whole layer (``synthformer.bench.flops.layer_macs``): the Q, K,
        V and output projections (``4 d^2`` per token), ``E K`` and ``F V`` (``k d`` per token each) and attention
        over the k compressed positions (``Q (E K)^T`` and ``P (F V)``, ``k d`` per token each); the projections'
        inner ``d`` is ``H d_h`` with ``head_dim``. ``options``: the resolved options. It cannot be causal: its
        length projection mixes every position into each compressed key."""
        if causal:
            raise ValueError("Linformer cannot be causal (its length projection reads every position), so it has no "
                             "causal multiply-add count")
        inner = d_model if options.get("head_dim") is None else heads * options["head_dim"]
        return batch * length * (4 * d_model * inner + 4 * int(options["k"]) * inner)

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, **options: Any) -> int:
        """Trainable parameters: ``4 (d^2 + d)`` for the projections (``4 d H d_h + 3 H d_h + d`` with ``head_dim``)
        plus ``(1 or 2) P k max_len`` for E, F."""
        opts = cls._resolve(d_model, n_heads, max_len, False, 0.0, options)
        n_proj = 1 if opts["share_heads"] else n_heads
        n_mats = 1 if opts["share_kv"] else 2
        inner = d_model if opts["head_dim"] is None else n_heads * opts["head_dim"]
        return 4 * d_model * inner + 3 * inner + d_model + n_mats * n_proj * opts["k"] * max_len
