"""Mixtures of synthesizing functions, paper eq. (8)-(9): ``S(X) = sum_n alpha_n S_n(X)``, ``sum_n alpha_n = 1``."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .base import SynthesizingFunction, dot_logits


class Mixture(SynthesizingFunction):
    """Weighted sum of the logits of registered parts (``R+V``, ``D+V``, ``R+D``, ``FR+D``, ...).

    Choices the paper leaves open: ``alpha`` is per head (the ICML version writes ``alpha_{n,h,l}``) and
    parameterized as ``alpha[h] = softmax(w[h])`` over the N parts, with learned logits ``w`` (H, N) initialized
    to zero, so the weights start equal (1/N) and always sum to 1 and stay positive. ``V``'s part keeps its
    ``1/sqrt(d_h)`` scale, so a mixture combines the logits each part computes on its own.

    Parameters: the parts' plus ``H N`` for ``w``.
    """

    name = "mixture"

    def __init__(self, parts: list[SynthesizingFunction], n_heads: int):
        first = parts[0]
        super().__init__(first.d_model, n_heads, first.max_len, first.causal)
        self.name = "+".join(p.name for p in parts)
        self.parts = nn.ModuleList(parts)
        self.alpha_logits = nn.Parameter(torch.zeros(n_heads, len(parts)))
        self.input_dependent = any(p.input_dependent for p in parts)
        self.token_local = all(p.token_local for p in parts)
        self.reads_context = any(p.reads_context for p in parts)
        self.has_features = all(p.has_features for p in parts)
        self.uses_qk = any(p.uses_qk for p in parts)

    def alpha(self) -> Tensor:
        """(H, N) mixture weights, each row summing to 1."""
        return torch.softmax(self.alpha_logits, dim=-1)

    def logits(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> Tensor:
        alpha = self.alpha()
        total = None
        for n, part in enumerate(self.parts):
            sub = None if state is None else state[str(n)]
            weight = alpha[:, n, None, None]  # (H, 1, 1)
            if part.has_features:
                # alpha (q k^T) == (alpha q) k^T: scaling the narrow q saves a pass over the L x L logits
                q, k = part.features(x, start, sub, key_padding_mask)
                term = dot_logits(weight * q, k)  # (B|1, H, T, S)
            else:
                term = weight * part.logits(x, start, sub, key_padding_mask)  # (B|1, H, T, S)
            total = term if total is None else total + term
        return total

    def features(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        # sum_n alpha_n q_n k_n^T == [alpha_1 q_1, ..., alpha_N q_N] @ [k_1, ..., k_N]^T
        alpha = self.alpha()
        qs, ks = [], []
        for n, part in enumerate(self.parts):
            sub = None if state is None else state[str(n)]
            q, k = part.features(x, start, sub, key_padding_mask)
            qs.append(alpha[:, n, None, None] * q)
            ks.append(k)
        batch = max(t.shape[0] for t in qs + ks)
        q = torch.cat([t.expand(batch, -1, -1, -1) for t in qs], dim=-1)  # (B, H, T, sum e)
        k = torch.cat([t.expand(batch, -1, -1, -1) for t in ks], dim=-1)  # (B, H, S, sum e)
        return q, k

    def init_state(self, batch_size: int, device, dtype) -> dict:
        return {str(n): p.init_state(batch_size, device, dtype) for n, p in enumerate(self.parts)}
