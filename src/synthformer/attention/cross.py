"""Cross-attention through the registry: the decoder's attention over an encoder memory, for any kind that can
form its logits for target queries over source positions.

``Y = softmax(mask(S(X, M))) G(M)`` then the output projection, with X the target (B, T, d), M the memory
(B, S, d) and G the value projection of the memory. The logits come from the registered kinds, built with
``cross=True`` (:meth:`SynthesizingFunction.cross_logits`): ``V`` scores target queries against memory keys,
``R``/``Fix`` use ``R[start:start+T, :S]``, ``FR`` ``R1[start:start+T] R2[:S]^T``, the token-local kinds let each
target token predict its row cropped to S, and mixtures weight their parts as in self-attention. Masks are
``masking``'s; the layer owns values, the softmax, dropout and the output projection, as the self-attention shell
does. ``V`` is the default, as in the paper (its section 5: synthetic cross-attention did not work); alone it
runs through the fused ``F.scaled_dot_product_attention`` kernel.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch.nn.functional as F
from torch import Tensor, nn

from .base import SynthesizingFunction, merge_heads, split_heads
from .contract import check_core_args
from .masking import check_padding_mask, disallowed, masked_softmax
from .registry import canonical_kind, get_kind, parse_kind, registered_kinds
from .sdpa import masked_sdpa
from .shell import SynthesizerAttention, build_synth, own_head_dim, split_layer_options, take_head_dim
from .vanilla import DotProduct

__all__ = ["SynthesizerCrossAttention", "check_cross_kind", "cross_kinds"]


def cross_kinds() -> list[str]:
    """Canonical names of the registered kinds that can serve as cross-attention (``supports_cross``); any
    ``+``-joined mixture of them can too."""
    return [name for name in registered_kinds() if get_kind(name).supports_cross]


def check_cross_kind(kind: str) -> str:
    """The canonical spelling of a cross-attention kind (``"random+vanilla"`` -> ``"R+V"``).

    Raises:
        ValueError: naming ``kind`` and listing the cross-capable kinds, for an unknown kind or one with a part
            that cannot attend over a memory (the convolutions read a window of neighbouring query tokens).
    """
    valid = f"cross-capable kinds: {', '.join(cross_kinds())}, or a '+'-joined mixture of them"
    try:
        parts = parse_kind(kind)
    except ValueError as err:
        raise ValueError(f"cross-attention kind {kind!r} is not valid ({err}); {valid}") from None
    unsupported = [p.name for p in parts if not p.supports_cross]
    if unsupported:
        raise ValueError(
            f"cross-attention kind {kind!r} is not supported: {', '.join(unsupported)} cannot form logits for target "
            f"queries over source positions; {valid}"
        )
    return canonical_kind(kind)


# state-dict names of the encoder-decoder's former CrossAttention (before it went through the registry)
_LEGACY_MODULES = {"query.": "synth.query.", "key.": "synth.key.", "w1.": "synth.W1."}
_LEGACY_TENSORS = {"R": "synth.R", "W2": "synth.W2", "b2": "synth.b2"}


def _rename_legacy_keys(module: nn.Module, state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
    """Load-state-dict pre-hook: rename the former CrossAttention's keys, in place, to this layer's.

    ``query.*``, ``key.*`` (V), ``R`` (R), ``w1.*``, ``W2``, ``b2`` (D) held by the layer itself became
    ``synth.query.*``, ``synth.key.*``, ``synth.R``, ``synth.W1.*``, ``synth.W2``, ``synth.b2``: the kind's
    parameters live in its synthesizing function, as in self-attention. ``value.*`` and ``out.*`` are unchanged.
    """
    for key in [k for k in state_dict if k.startswith(prefix)]:
        rest = key[len(prefix) :]
        new = _LEGACY_TENSORS.get(rest)
        for old, renamed in _LEGACY_MODULES.items():
            if rest.startswith(old):
                new = renamed + rest[len(old) :]
        if new is not None:
            state_dict[prefix + new] = state_dict.pop(key)


class SynthesizerCrossAttention(nn.Module):
    """Multi-head attention of target queries over an encoder memory, for any cross-capable ``kind``.

    Args:
        d_model: model width d (divisible by ``n_heads``).
        n_heads: number of heads H.
        max_len: longest target and source; length-dependent parameters (R's rows and columns, D's ``W2``) are
            sized for it and cropped.
        kind: a kind of :func:`cross_kinds` or a mixture of them (``"V"``, ``"R"``, ``"D"``, ``"FR+V"``, ...).
        dropout: dropout on the attention probabilities (training only).
        **options: kind options, as for :class:`SynthesizerAttention` (``k`` of FR, ``r`` of Bottleneck, ...),
            the layer options ``bias`` and ``scaled`` (T5's cross-attention: both False) and ``head_dim`` (the
            head width d_h, None for ``d_model // n_heads``; the values and V's queries and keys are then
            ``n_heads * head_dim`` wide, the output projection maps them back to ``d_model``).

    The memory's keys and values depend on the source only: :meth:`memory_kv` computes them once per source
    batch (in decoding they are kept in the layer cache) and :meth:`forward` takes them.

    Shapes: ``memory_kv(memory (B, S, d)) -> (k (B, H, S, e) or None, v (B, H, S, d_h))``, ``k`` None for kinds
    that read no memory token (all without V); ``forward(x (B, T, d), k, v, memory_padding_mask (B, S) bool |
    None, start=0) -> (B, T, d)``, ``start`` the target position of ``x[:, 0]`` (nonzero in decoding).

    Compatibility with the encoder-decoder's former ``CrossAttention`` (V, R, D): the random draws at
    construction come in its order (value, output projection, then the kind's), :meth:`named_modules` yields the
    parameters in its order (the optimizer state of a resumed run is indexed by it), and its state-dict names
    (``query.*``, ``key.*``, ``R``, ``w1.*``, ``W2``, ``b2``) load through a pre-hook. The forward computes
    what it computed, bit for bit; a query whose source is all padding now gets zeros under every kind (V gave
    the mean of the padded values).
    """

    def __init__(
        self, d_model: int, n_heads: int, max_len: int, kind: str = "V", dropout: float = 0.0, **options: Any
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        head_dim, options = take_head_dim(owner, options)
        check_core_args(owner, d_model, n_heads, max_len, dropout, head_dim)
        head_dim = own_head_dim(d_model, n_heads, head_dim)
        self.kind = check_cross_kind(kind)
        self.d_model, self.n_heads, self.max_len = d_model, n_heads, max_len
        #: d_h and H d_h (d_model // n_heads and d_model without head_dim)
        self.head_dim = d_model // n_heads if head_dim is None else head_dim
        self.inner_dim = n_heads * self.head_dim
        self.dropout = dropout
        bias = split_layer_options(options)[0]["bias"]  # T5: no biases
        self.value = nn.Linear(d_model, self.inner_dim, bias=bias)  # G(memory), drawn first
        self.out = nn.Linear(self.inner_dim, d_model, bias=bias)
        self.synth: SynthesizingFunction = build_synth(kind, d_model, n_heads, max_len, False, options, cross=True,
                                                       head_dim=head_dim)
        #: False forces the materialized path for V too (``softmax(mask(cross_logits)))`` instead of the fused
        #: kernel); both compute the same function.
        self.use_fast_paths = True
        self.register_load_state_dict_pre_hook(_rename_legacy_keys)

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, kind: str = "V", **options: Any) -> int:
        """Trained parameters: the same count as :meth:`SynthesizerAttention.num_params` for ``kind``."""
        check_cross_kind(kind)
        return SynthesizerAttention.num_params(d_model, n_heads, max_len, kind, **options)

    def extra_repr(self) -> str:
        return f"kind={self.kind!r}, dropout={self.dropout}"

    def named_modules(
        self, memo: set[nn.Module] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, nn.Module]]:
        """The submodules in the parameter order of the former ``CrossAttention``: the kind's own parameters
        (``R``; D's ``W2``, ``b2``), then ``value`` and ``out``, then the kind's submodules (V's ``query`` and
        ``key``, D's ``W1``). ``parameters()`` and ``named_parameters()`` follow this order; the state dict's keys
        follow the module tree as usual."""
        memo = set() if memo is None else memo
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        dot = f"{prefix}." if prefix else ""
        if self.synth not in memo:
            if remove_duplicate:
                memo.add(self.synth)
            yield f"{dot}synth", self.synth
        for name in ("value", "out"):
            yield from self._modules[name].named_modules(memo, f"{dot}{name}", remove_duplicate)
        for name, child in self.synth.named_children():
            yield from child.named_modules(memo, f"{dot}synth.{name}", remove_duplicate)

    def memory_kv(self, memory: Tensor) -> tuple[Tensor | None, Tensor]:
        """Keys (None for kinds that read no memory token) and values of the memory, computed once per source."""
        if memory.dim() != 3 or memory.shape[-1] != self.d_model:
            raise ValueError(f"expected a memory of shape (batch, source length, {self.d_model}), got "
                             f"{tuple(memory.shape)}")
        if memory.shape[1] > self.max_len:
            raise ValueError(f"source length {memory.shape[1]} exceeds max_len {self.max_len} of this cross-attention")
        return self.synth.memory_keys(memory), split_heads(self.value(memory), self.n_heads)  # (B, H, S, e|d_h)

    def forward(
        self,
        x: Tensor,
        k: Tensor | None,
        v: Tensor,
        memory_padding_mask: Tensor | None = None,
        start: int = 0,
    ) -> Tensor:
        """Attend from the target ``x`` over the memory whose keys and values :meth:`memory_kv` returned."""
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"expected a target of shape (batch, length, {self.d_model}), got {tuple(x.shape)}")
        b, t, _ = x.shape
        s = v.shape[2]
        if start + t > self.max_len:
            raise ValueError(f"target length {start + t} exceeds max_len {self.max_len} of this cross-attention")
        if (k is None) != (self.synth.memory_key_width == 0):
            raise ValueError(f"cross-attention kind {self.kind!r} needs k as returned by memory_kv, got "
                             f"{None if k is None else tuple(k.shape)}")
        memory_padding_mask = check_padding_mask(memory_padding_mask, b, s)
        mask = disallowed(t, s, start, False, memory_padding_mask, x.device)  # (B, 1, 1, S) or None
        drop = self.dropout if self.training else 0.0
        if self.use_fast_paths and type(self.synth) is DotProduct:
            # V alone: exactly SDPA's scaled q k^T, on its fused CPU kernel with an additive float mask
            y = masked_sdpa(self.synth.queries(x), k, v, mask, drop, self.synth.scale)  # (B, H, T, d_h)
        else:
            logits = self.synth.cross_logits(x, s, start, k)  # (B|1, H, T, S)
            probs = F.dropout(masked_softmax(logits, mask), drop, self.training)
            y = probs @ v  # (B|1, H, T, S) @ (B, H, S, d_h) -> (B, H, T, d_h)
        return self.out(merge_heads(y))  # (B, H, T, d_h) -> (B, T, H d_h) -> (B, T, d)
