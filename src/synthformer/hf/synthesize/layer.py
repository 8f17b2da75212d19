"""The synthesized attention of one ``transformers`` self-attention module: the registered kinds' logits, the
masked softmax of the native shell, the module's own values.

A synthesized module keeps everything of its own except the attention probabilities: its projections (``q_proj``,
``k_proj``, ``v_proj``, ``o_proj`` or GPT-2's ``c_attn``/``c_proj``), its rotary or learned positions, its cache.
What it computes becomes ``softmax(mask(S(X) + bias)) G(X)``, with ``G(X)`` the module's value states and ``S`` a
registered kind or mixture (:mod:`synthformer.attention`), whose ``V`` part is the module's own
``q k^T * scaling`` (:class:`ModelDotProduct`), so that a ``+V`` mixture can start at the pretrained function.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from synthformer.attention import (
    Mixture,
    SynthesizingFunction,
    canonical_kind,
    disallowed,
    masked_softmax,
    parse_kind,
    reject_unknown_options,
)
from synthformer.common import ConfigError

__all__ = ["ATTRIBUTE", "HIDDEN", "ModelDotProduct", "SynthesizedAttention", "record_input"]

#: The name under which a synthesized module holds its :class:`SynthesizedAttention` (a submodule: its parameters
#: are saved with the model's, e.g. ``model.layers.0.self_attn.synthformer.synth.parts.1.R``).
ATTRIBUTE = "synthformer"


class ModelDotProduct(SynthesizingFunction):
    """``V`` of a ``transformers`` module: ``gain_h * ((q k^T) * scaling)`` over the module's own query and key
    states (after its rotary embedding, keys from its cache), which the layer binds before each call.

    It owns no projection (the module's are used, so LoRA on ``q_proj``/``k_proj`` reaches it); its only tensor
    is the per-head ``gain`` buffer (H,), 1 until a mixture grows from it (``scale_logits_`` multiplies it by
    ``1 / alpha_V``, a power of two, so ``alpha_V * gain`` is exactly 1). The logits are formed in the order
    ``transformers``' eager attention forms them, ``(q k^T) * scaling``, and offered as logits, not features, so
    that a mixture multiplies them by its weight afterwards: a grown mixture's V term is then the eager logits
    bit for bit. Not registered: it exists only inside a synthesized ``transformers`` module.
    """

    name = "V"
    uses_qk = True

    def __init__(self, d_model: int, n_heads: int, max_len: int, causal: bool = False, **options: Any):
        super().__init__(d_model, n_heads, max_len, causal, **options)
        self.register_buffer("gain", torch.ones(n_heads), persistent=True)
        self._bound: tuple[Tensor, Tensor, float] | None = None

    def bind(self, q: Tensor | None, k: Tensor | None = None, scaling: float = 1.0) -> None:
        """Give the next call its queries (B, H, T, d_h), keys (B, H, S, d_h) and scale; None releases them."""
        self._bound = None if q is None else (q, k, scaling)

    def logits(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> Tensor:
        if self._bound is None:
            raise RuntimeError("the module's query and key states were not bound (ModelDotProduct.bind)")
        q, k, scaling = self._bound
        logits = (q @ k.transpose(-1, -2)) * scaling  # (B, H, T, S)
        return logits * self.gain.to(logits.dtype)[:, None, None]  # gain (H,) -> (H, 1, 1)

    def positioned_logits(
        self, x: Tensor, start: int, state: dict | None, key_padding_mask: Tensor | None, positions: Tensor
    ) -> Tensor:
        """The plain logits: the module's rotary or learned positions are already in its queries and keys."""
        return self.logits(x, start, state, key_padding_mask)  # (B, H, T, S)

    @torch.no_grad()
    def scale_logits_(self, factor: Tensor) -> None:
        """Multiply head h's logits by ``factor[h]`` through ``gain`` (the module's weights stay as they are)."""
        self.gain.mul_(factor.to(self.gain.dtype))

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, **options: Any) -> int:
        """None of its own: the module's query and key projections serve it."""
        return 0


def _build_part(cls: type[SynthesizingFunction], d_model: int, heads: int, max_len: int, causal: bool,
                options: dict[str, Any]) -> SynthesizingFunction:
    if cls.name == "V":
        return ModelDotProduct(d_model, heads, max_len, causal)
    if cls.reads_context:
        raise ConfigError(f"kind {cls.name!r} reads neighbouring tokens, which a transformers cache cannot hold "
                          "for it: synthesize with kinds whose logits need no decoding state (R, Fix, FR, D, FD, "
                          "Bottleneck, GLU, V and their mixtures)")
    part = cls(d_model, heads, max_len, causal, **{k: v for k, v in options.items() if k in cls.option_defaults})
    if part.init_state(1, "cpu", torch.float32):
        raise ConfigError(f"kind {cls.name!r} keeps decoding state, which a transformers cache cannot hold for it")
    return part


class SynthesizedAttention(nn.Module):
    """The synthesizing function of one synthesized module and the attention it computes.

    Args:
        kind: a registered kind or ``+``-joined mixture (``"R"``, ``"D"``, ``"R+V"``, ...).
        d_model: width of the module's input hidden states (the token-conditioned kinds read them).
        n_heads: the module's query heads H (``d_model`` must be divisible by H).
        max_len: the longest attention (keys, padding included) the length-dependent kinds are sized for.
        causal: the module's own causality (its mask is built by ``transformers``; kept for a missing mask).
        options: kind options (``k`` of FR, ``init_std`` of R, ...); one no part declares is an error.
    """

    def __init__(self, kind: str, d_model: int, n_heads: int, max_len: int, causal: bool,
                 options: dict[str, Any] | None = None):
        super().__init__()
        options = dict(options or {})
        parts = parse_kind(kind)
        reject_unknown_options(f"attention kind {kind!r}", options, {n for p in parts for n in p.option_defaults})
        if d_model % n_heads:
            raise ConfigError(f"hidden size {d_model} is not divisible by the {n_heads} heads: the token-conditioned "
                              "kinds split the hidden states into the heads")
        built = [_build_part(cls, d_model, n_heads, max_len, causal, options) for cls in parts]
        self.synth: SynthesizingFunction = built[0] if len(built) == 1 else Mixture(built, n_heads)
        self.kind = canonical_kind(kind)
        self.d_model, self.n_heads, self.max_len, self.causal = d_model, n_heads, max_len, causal

    def extra_repr(self) -> str:
        return f"kind={self.kind!r}, heads={self.n_heads}, max_len={self.max_len}, causal={self.causal}"

    def dot_products(self) -> list[ModelDotProduct]:
        """The ``V`` parts (zero or one)."""
        parts = self.synth.parts if isinstance(self.synth, Mixture) else [self.synth]
        return [p for p in parts if isinstance(p, ModelDotProduct)]

    def key_positions(self, position_ids: Tensor | None, batch: int, keys: int) -> Tensor | None:
        """(B, S) the position of every key column, or None when every row's positions are its columns.

        The queries are the last T of the S key columns (``transformers``' dynamic cache). Rows may be
        left-padded: a row's last query is a real token, and its position (``position_ids[:, -1]``) minus its
        column is the row's padding; the keys before it count back from it (padding columns clamp to 0 and are
        masked anyway), the convention of the native models.
        """
        if position_ids is None:
            return None
        last = position_ids[..., -1].reshape(-1).expand(batch)  # (B,): (1, T) position ids broadcast
        offset = (keys - 1) - last  # (B,) padding columns on each row's left
        if bool((offset < 0).any()):
            raise ValueError(f"position {int(last.max())} lies past its column {keys - 1}: the synthesized kinds need "
                             "the keys of every position so far (left padding only; no sliding-window cache)")
        if not bool(offset.any()):
            return None
        columns = torch.arange(keys, device=position_ids.device)
        return (columns[None, :] - offset[:, None]).clamp_min(0)  # (B, S)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, scaling: float,
                dropout: float = 0.0, position_ids: Tensor | None = None, position_bias: Tensor | None = None,
                hidden: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """``softmax(mask(S(X) + position_bias)) value``.

        A forward (not a method of its own), so that what wraps the layer (PEFT's ``modules_to_save`` copies it)
        is called the same way.

        Args:
            query: (B, H, T, d_h) the module's query states; key: (B, H_kv, S, d_h) and value: (B, H_kv, S, d_v)
                its key and value states, grouped-query heads (H_kv dividing H) included.
            mask: (B, 1, T, S) bool, True where a query may attend (the mask :mod:`.backend` registers), an
                additive float mask, or None.
            scaling: the module's dot-product scale; dropout: on the probabilities (0 outside training).
            position_ids: (B or 1, T) the queries' positions, or None (positions are the columns).
            position_bias: (1 or B, H, T, S) added to the logits (T5's relative position bias), or None.
            hidden: (B, T, d_model) the module's input hidden states (the token-conditioned kinds read them).

        Returns:
            the output (B, T, H, d_v) as ``transformers`` attention functions return it, and the probabilities
            (B, H, T, S).
        """
        b, h, t, _ = query.shape
        s = key.shape[2]
        if s > self.max_len:
            raise ValueError(f"attention over {s} positions exceeds max_len {self.max_len} of the synthesized "
                             f"{self.kind} attention; synthesize with max_len >= {s} or pass shorter inputs")
        x = hidden
        if x is None or tuple(x.shape[:2]) != (b, t):
            raise RuntimeError("the module's input hidden states were not recorded for this call (record_input)")
        groups = h // key.shape[1]
        key = key.repeat_interleave(groups, dim=1) if groups > 1 else key  # (B, H_kv, S, d_h) -> (B, H, S, d_h)
        value = value.repeat_interleave(groups, dim=1) if groups > 1 else value  # -> (B, H, S, d_v)
        for part in self.dot_products():
            part.bind(query, key, scaling)
        try:
            positions = self.key_positions(position_ids, b, s)
            start = s - t
            if positions is None:
                logits = self.synth.logits(x, start)  # (B|1, H, T, S)
            else:
                logits = self.synth.positioned_logits(x, start, None, None, positions)  # (B, H, T, S)
        finally:
            for part in self.dot_products():
                part.bind(None)
        logits = logits.float()  # the softmax in float32, as transformers' eager attention takes it
        if position_bias is not None:
            logits = logits + position_bias.float()  # (1|B, H, T, S)
        if mask is None:
            banned = disallowed(t, s, start, self.causal, None, query.device)
        elif mask.dtype == torch.bool:
            banned = ~mask  # (B, 1, T, S): True where a query may not attend
        else:
            logits, banned = logits + mask.float(), None  # an additive mask
        probs = masked_softmax(logits, banned).to(value.dtype)  # (B, H, T, S)
        if dropout > 0:
            probs = F.dropout(probs, dropout, training=True)
        out = probs @ value  # (B, H, T, S) @ (B, H, S, d_v) -> (B, H, T, d_v)
        return out.transpose(1, 2), probs  # (B, T, H, d_v)


#: The attribute of a synthesized ``transformers`` module holding its input hidden states during its forward.
HIDDEN = "_synthformer_hidden"


def record_input(module: nn.Module, args: tuple, kwargs: dict) -> None:
    """Forward pre-hook of a synthesized module: keep its input hidden states (``hidden_states``, by keyword or
    first) for the token-conditioned kinds (D, FD, ...), which ``transformers`` does not give the attention
    function. A module-level function (no closure), so that a deep copy of the model keeps its own."""
    setattr(module, HIDDEN, kwargs.get("hidden_states", args[0] if args else None))
