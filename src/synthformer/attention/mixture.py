"""Mixtures of synthesizing functions, paper eq. (8)-(9): ``S(X) = sum_n alpha_n S_n(X)``, ``sum_n alpha_n = 1``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .base import SynthesizingFunction, dot_logits
from .vanilla import DotProduct


class Mixture(SynthesizingFunction):
    """Weighted sum of the logits of registered parts (``R+V``, ``D+V``, ``R+D``, ``FR+D``, ...).

    Choices the paper leaves open: ``alpha`` is per head (the ICML version writes ``alpha_{n,h,l}``) and
    parameterized as ``alpha[h] = softmax(w[h])`` over the N parts, with learned logits ``w`` (H, N) initialized
    to zero, so the weights start equal (1/N) and always sum to 1 and stay positive. ``V``'s part keeps its
    ``1/sqrt(d_h)`` scale, so a mixture combines the logits each part computes on its own.

    Cross-attention (parts built with ``cross=True``): the same weighted sum of the parts' cross logits; the
    parts' memory keys are concatenated along the feature axis into one (B, H, S, sum of widths) tensor, so the
    decoding cache holds one tensor whatever the mixture.

    Growing from a pretrained part (:meth:`grow_from_`, ``init_from`` a V run into R+V): while the new parts are as
    started (their logits exactly zero), :meth:`grown_view` returns the pretrained part alone, ``alpha_V S_V``, which
    the layer computes through V's own paths, so that step 0 gives the pretrained model's output bit for bit.

    Parameters: the parts' plus ``H N`` for ``w``.
    """

    name = "mixture"
    #: its parts were built with the layer's head width (each part refuses one it does not support)
    supports_head_dim = True
    #: set by :meth:`grow_from_`, dropped for good once a new part's tensors change (see :meth:`grown_view`); a
    #: class default, so that a mixture pickled before this attribute existed reads as never grown
    _growth: _Growth | None = None

    def __init__(self, parts: list[SynthesizingFunction], n_heads: int):
        first = parts[0]
        super().__init__(first.d_model, n_heads, first.max_len, first.causal, head_dim=first.head_dim)
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

    # ------------------------------------------------------------------ growing from a pretrained part
    @torch.no_grad()
    def grow_from_(self, part: int) -> bool:
        """Start this mixture at the function of its part ``part`` alone (which holds pretrained weights), in place.

        The other (new) parts' logits are made exactly zero through their last factor (each keeps a gradient),
        ``w`` is set so that ``alpha_part`` is a power of two (:func:`grown_alpha_logits`) and the part's logits are
        multiplied by ``1 / alpha_part`` through its parameters (both products exact). From then on, until a new
        part's tensors change, :meth:`grown_view` serves the layer.

        Returns:
            whether ``alpha_part`` came out a power of two on this machine (else the start matches the pretrained
            function to rounding only).

        Raises:
            NotImplementedError: a new part that cannot start at zero logits, or a pretrained part that cannot
                rescale its logits (only V can).
        """
        for n, sub in enumerate(self.parts):
            if n != part:
                sub.zero_logits_()
        logits = torch.tensor(grown_alpha_logits(len(self.parts), part), dtype=self.alpha_logits.dtype)
        self.alpha_logits.copy_(logits.expand_as(self.alpha_logits))
        alpha = self.alpha()[:, part]  # (H,)
        self.parts[part].scale_logits_(1.0 / alpha)
        pretrained = self.parts[part]
        view = _PartShare(self, part) if isinstance(pretrained, DotProduct) and not pretrained.cross else None
        self._growth = _Growth(part, view, self._new_tensors(part))
        return bool((torch.frexp(alpha.double()).mantissa == 0.5).all())  # in float64: every dtype has frexp

    def grown_view(self) -> SynthesizingFunction | None:
        """``alpha_V S_V``, the pretrained part alone, as a synthesizing function of its own, while this mixture is
        grown and its new parts' tensors are the ones :meth:`grow_from_` left (so their logits are exactly zero and
        it computes this mixture's function); None otherwise.

        The check reads each new tensor's identity, storage and version counter (bumped by every in-place change:
        an optimizer step, ``load_state_dict``, ``copy_``), not its values; once it fails the mixture stays
        ungrown, so the results after the first update are the ordinary paths'. Writes through ``.data`` bypass
        the version counter: the layer therefore also ends the grown state when a backward pass reaches it.
        """
        growth = self._growth
        if growth is None:
            return None
        now = self._new_tensors(growth.part)
        if len(now) != len(growth.tensors) or any(
                t is not t0 or ptr != ptr0 or version != version0
                for (t, ptr, version), (t0, ptr0, version0) in zip(now, growth.tensors, strict=True)):
            self._growth = None
            return None
        return growth.view

    def end_growth(self) -> None:
        """Leave the grown state for good (the ordinary paths from now on)."""
        self._growth = None

    def new_parts_learn(self) -> bool:
        """Whether a grown mixture's new parts have a parameter that requires a gradient."""
        growth = self._growth
        return growth is not None and any(
            p.requires_grad for n, sub in enumerate(self.parts) if n != growth.part for p in sub.parameters())

    def _new_tensors(self, part: int) -> list[tuple[Tensor, int, int]]:
        """(tensor, storage address, version) of every parameter and buffer of the parts other than ``part``."""
        return [(t, t.data_ptr(), t._version) for n, sub in enumerate(self.parts) if n != part
                for t in (*sub.parameters(), *sub.buffers())]


def grown_alpha_logits(n_parts: int, part: int) -> list[float]:
    """The initial ``w`` (one row) of a mixture of ``n_parts`` grown from ``part``: ``alpha_part`` a power of two,
    so that ``alpha_part * (q / alpha_part)`` is ``q`` exactly.

    With N a power of two, the mixture's own start (``w = 0``, every alpha ``1/N``); otherwise ``alpha_part = 1/2``
    and the new parts share the other half in powers of two, the larger shares first (``R+D+V``: 1/4, 1/4, 1/2),
    with ``w_n = log(alpha_n / alpha_part)``, a multiple of ``-log 2`` whose ``exp`` is exact in practice
    (:meth:`Mixture.grow_from_` reports when it is not).
    """
    if n_parts & (n_parts - 1) == 0:
        return [0.0] * n_parts
    shares = [1.0]  # the new parts' shares over the pretrained part's, in decreasing order
    while len(shares) < n_parts - 1:
        half = shares.pop(0) / 2
        shares += [half, half]
    logits = [math.log(s) for s in shares]
    return logits[:part] + [0.0] + logits[part:]


@dataclass
class _Growth:
    """A grown mixture's record: its pretrained part, the view serving it (None: the part has no such view) and
    what :meth:`Mixture._new_tensors` returned when it was grown."""

    part: int
    view: SynthesizingFunction | None
    tensors: list[tuple[Tensor, int, int]]


class _PartShare(SynthesizingFunction):
    """``alpha_n S_n`` for a mixture's V part n: V's own arithmetic with ``alpha_n`` folded into its queries.

    Its features are ``(alpha_n q, k)`` and its logits ``(alpha_n q) k^T`` by the product V's logits take, so
    the layer runs it through V's paths (SDPA where V takes SDPA). In a grown mixture ``alpha_n q`` is V's
    pretrained ``q`` exactly (``alpha_n`` a power of two, the weights scaled by its inverse), hence the
    pretrained output bit for bit. Owns no parameters: it reads the mixture's (not registered as a child).
    """

    name = "grown"
    supports_head_dim = True  # its part's head width

    def __init__(self, mixture: Mixture, n: int):
        part = mixture.parts[n]
        super().__init__(part.d_model, part.n_heads, part.max_len, part.causal, head_dim=part.head_dim)
        self.has_features = part.has_features
        self.input_dependent = part.input_dependent
        self.index = n
        object.__setattr__(self, "mixture", mixture)  # a plain reference: nn.Module would register a child

    def features(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        sub = None if state is None else state[str(self.index)]
        q, k = self.mixture.parts[self.index].features(x, start, sub, key_padding_mask)  # (B, H, T|S, d_h)
        return self.mixture.alpha()[:, self.index, None, None] * q, k  # alpha_n (H, 1, 1) on the queries

    def logits(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> Tensor:
        q, k = self.features(x, start, state)
        return q @ k.transpose(-1, -2)  # (B, H, T, S), as DotProduct.logits

    def positioned_logits(
        self, x: Tensor, start: int, state: dict | None, key_padding_mask: Tensor | None, positions: Tensor
    ) -> Tensor:
        """The plain logits, as V's: its keys are tokens, not positions."""
        return self.logits(x, start, state, key_padding_mask)  # (B, H, T, S)
