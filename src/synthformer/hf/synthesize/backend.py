"""The ``synthformer`` attention implementation of ``transformers``: an attention function registered with
``AttentionInterface`` and its mask function registered with ``AttentionMaskInterface``.

Both registrations matter: ``transformers`` builds no mask at all for an implementation it has no mask function
for (it takes such a name for an external kernel that masks by itself), so a custom attention function alone
would silently attend to future tokens. The mask registered here is ``sdpa``'s boolean one (True where a query
may attend) with the causal shortcut turned off: a causal model always gets its causal mask, since the synthesized
kinds cannot take SDPA's ``is_causal`` instead.

Modules without a synthesized layer (cross-attention, the layers left out by ``layers=``) run ``transformers``'
own SDPA attention on the same mask, as they did before.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from .layer import ATTRIBUTE, HIDDEN

__all__ = ["IMPLEMENTATION", "register_backend", "synthformer_attention", "synthformer_mask"]

#: The ``attn_implementation`` name of a synthesized model (``model.config._attn_implementation``).
IMPLEMENTATION = "synthformer"


def synthformer_attention(module: nn.Module, query: Tensor, key: Tensor, value: Tensor,
                          attention_mask: Tensor | None, scaling: float | None = None, dropout: float = 0.0,
                          **kwargs: Any) -> tuple[Tensor, Tensor | None]:
    """A ``transformers`` attention function: query (B, H, T, d_h), key and value (B, H_kv, S, d) in, the output
    (B, T, H, d_v) and the probabilities out. A module holding a synthesized layer is computed by it; any other
    by SDPA."""
    layer = module._modules.get(ATTRIBUTE)
    if layer is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout,
                                      **kwargs)
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    hidden = module.__dict__.pop(HIDDEN, None)  # read once: the activation is not kept past the call
    return layer(query, key, value, attention_mask, scale, dropout, kwargs.get("position_ids"),
                 kwargs.get("position_bias"), hidden)


def synthformer_mask(*args: Any, **kwargs: Any) -> Tensor | None:
    """``sdpa_mask`` that never drops a causal mask (``allow_is_causal_skip`` off): (B, 1, T, S) bool, True where a
    query may attend; None only for a bidirectional layer without padding."""
    from transformers.masking_utils import sdpa_mask

    kwargs["allow_is_causal_skip"] = False
    return sdpa_mask(*args, **kwargs)


def register_backend() -> None:
    """Register :data:`IMPLEMENTATION` with ``AttentionInterface`` and ``AttentionMaskInterface`` (idempotent)."""
    from transformers import AttentionInterface, AttentionMaskInterface

    AttentionInterface.register(IMPLEMENTATION, synthformer_attention)
    AttentionMaskInterface.register(IMPLEMENTATION, synthformer_mask)
