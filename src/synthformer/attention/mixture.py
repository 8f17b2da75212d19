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

    Cross-attention (parts built with ``cross=True``): the same weighted sum of the parts' cross logits; the
    parts' memory keys are concatenated along the feature axis into one (B, H, S, sum of widths) tensor, so the
    decoding cache holds one tensor whatever the mixture.

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
        self.supports_cross = all(p.supports_cross for p in parts)
        self.cross = first.cross
        self.memory_key_width = sum(p.memory_key_width for p in parts)

    def alpha(self) -> Tensor:
        """(H, N) mixture weights, each row summing to 1."""
        return torch.softmax(self.alpha_logits, dim=-1)

    def logit_factors(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> tuple:
        """Per part ``(weight, part factors)``, weight (1, H, 1, 1); None when alpha is already applied.

        Alpha is applied here, once, where that is cheaper than on every block of logits: to a feature part's
        narrow ``q`` (``alpha (q k^T) == (alpha q) k^T``) and to an input-independent part's logits (R's
        (1, H, T, S) are shared by the batch, so one product serves every sample; its gradient is summed over
        the samples before the product's backward runs, once).
        """
        alpha = self.alpha()
        out = []
        for n, part in enumerate(self.parts):
            sub = None if state is None else state[str(n)]
            weight = alpha[None, :, n, None, None]  # (1, H, 1, 1)
            if part.has_features:
                q, k = part.features(x, start, sub, key_padding_mask)
                out.append((None, (weight * q, k)))
            elif not part.input_dependent:
                out.append((None, (weight * part.logits(x, start, sub, key_padding_mask),)))
            else:
                out.append((weight, part.logit_factors(x, start, sub, key_padding_mask)))
        return tuple(out)

    def logits_from_factors(self, factors: tuple, keys: int) -> Tensor:
        total = None
        for part, (weight, sub) in zip(self.parts, factors, strict=True):
            if part.has_features:
                term = dot_logits(*sub)  # (B|1, H, T, S)
            elif weight is None:
                term = sub[0]  # (1, H, T, S): weighted logits of an input-independent part
            else:
                term = weight * part.logits_from_factors(sub, keys)  # (B|1, H, T, S)
            total = term if total is None else total + term
        return total

    def query_rows(self, factors: tuple, q0: int, q1: int) -> tuple:
        out = []
        for part, (weight, sub) in zip(self.parts, factors, strict=True):
            if part.has_features:
                q, k = sub  # alpha already folded into q
                out.append((weight, (q[..., q0:q1, :], k[..., :q1, :])))
            elif weight is None:
                out.append((weight, (sub[0][..., q0:q1, :q1],)))  # an input-independent part's weighted logits
            else:
                out.append((weight, part.query_rows(sub, q0, q1)))
        return tuple(out)

    def logits(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> Tensor:
        return self.logits_from_factors(self.logit_factors(x, start, state, key_padding_mask), start + x.shape[1])

    def positioned_logits(
        self, x: Tensor, start: int, state: dict | None, key_padding_mask: Tensor | None, positions: Tensor
    ) -> Tensor:
        """``sum_n alpha_n S_n`` with every part at the given positions (left padding), (B, H, T, S)."""
        alpha = self.alpha()
        total = None
        for n, part in enumerate(self.parts):
            sub = None if state is None else state[str(n)]
            term = alpha[None, :, n, None, None] * part.positioned_logits(x, start, sub, key_padding_mask, positions)
            total = term if total is None else total + term  # (B, H, T, S)
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

    def memory_keys(self, memory: Tensor) -> Tensor | None:
        """The parts' memory keys concatenated: (B, H, S, memory_key_width), None when no part reads the memory."""
        keys = [k for p in self.parts if (k := p.memory_keys(memory)) is not None]
        return torch.cat(keys, dim=-1) if keys else None  # (B, H, S, sum of the parts' widths)

    def cross_logits(self, x: Tensor, keys: int, start: int = 0, memory_k: Tensor | None = None) -> Tensor:
        alpha = self.alpha()
        widths = [p.memory_key_width for p in self.parts]
        split = memory_k.split(widths, dim=-1) if memory_k is not None else [None] * len(widths)
        total = None
        for n, (part, k) in enumerate(zip(self.parts, split, strict=True)):
            term = alpha[None, :, n, None, None] * part.cross_logits(x, keys, start, k if widths[n] else None)
            total = term if total is None else total + term  # (B|1, H, T, S)
        return total

    def init_state(self, batch_size: int, device, dtype) -> dict:
        return {str(n): p.init_state(batch_size, device, dtype) for n, p in enumerate(self.parts)}
