"""Capturing attention: which layers of a model attend, what each one was given, and the weights of each part.

A model's self-attention layers are found by walking its stacks (``model.encoder.layers``,
``model.decoder.layers``); a forward pre-hook on each :class:`~synthformer.attention.SynthesizerAttention`
records the layer's *input* (the normalised residual stream) and its key padding mask while the model runs on a
batch, so the weights can then be recomputed with the layer's own API (:meth:`attention_weights`) and, for a
mixture, part by part (:func:`part_weights`). Token mixers that are not attention (LightConv, Linformer, ...) have
no L x L weights and are skipped; so is cross-attention (the paper analyses self-attention only).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from synthformer.attention import Mixture, SynthesizerAttention, disallowed, masked_softmax
from synthformer.common import IGNORE_INDEX

__all__ = ["AttentionSite", "Captured", "attention_sites", "capture_inputs", "part_weights", "valid_positions"]

logger = logging.getLogger(__name__)

#: The stacks a model may have, in the order the figures show them.
STACKS = ("encoder", "decoder")


@dataclass(frozen=True)
class AttentionSite:
    """One self-attention layer of a model.

    Attributes:
        stack: ``"encoder"`` or ``"decoder"``.
        layer: layer number counted from 1, as in the paper's figures.
        module: the attention layer.
    """

    stack: str
    layer: int
    module: SynthesizerAttention

    @property
    def key(self) -> str:
        """A stable name for files and JSON keys: ``decoder_layer1``."""
        return f"{self.stack}_layer{self.layer}"

    @property
    def kind(self) -> str:
        """The layer's kind in the paper's notation (``R+V``)."""
        return self.module.kind

    @property
    def parts(self) -> list[str]:
        """The kinds of the layer's parts (one for a plain kind, N for a mixture)."""
        synth = self.module.synth
        return [p.name for p in synth.parts] if isinstance(synth, Mixture) else [self.module.kind]


@dataclass
class Captured:
    """What one attention layer was given in a forward pass.

    Attributes:
        x: (B, L, d_model) the layer's input.
        key_padding_mask: (B, L) bool, True at padding, or None (the model passed none).
        position_bias: (1, H, L, L) the stack's relative position bias (T5's ``position_bias="t5"``), or None.
    """

    x: Tensor
    key_padding_mask: Tensor | None
    position_bias: Tensor | None = None


def attention_sites(model: nn.Module) -> list[AttentionSite]:
    """The self-attention layers of ``model``, encoder first, each stack in layer order.

    Layers whose token mixer is not a :class:`SynthesizerAttention` (LightConv, DynamicConv, Linformer) are left
    out with an info message: they have no attention weights to show.
    """
    sites = []
    for stack in STACKS:
        layers = getattr(getattr(model, stack, None), "layers", None)
        if layers is None:
            continue
        for number, block in enumerate(layers, start=1):
            mixer = getattr(block, "self_attn", None)
            if isinstance(mixer, SynthesizerAttention):
                sites.append(AttentionSite(stack, number, mixer))
            else:
                logger.info("%s layer %d: %s has no attention weights; skipped", stack, number,
                            type(mixer).__name__)
    return sites


@torch.no_grad()
def capture_inputs(model: nn.Module, sites: list[AttentionSite], batch: Mapping[str, Tensor]) -> dict[str, Captured]:
    """Run ``model(**batch)`` (eval mode, no gradients) and record each site's input, keyed by :attr:`site.key`.

    Only the first call of each layer in the pass is kept (a model calls each self-attention layer once).
    """
    captured: dict[str, Captured] = {}
    handles = []

    def hook_for(site: AttentionSite):
        def hook(_module: nn.Module, args: tuple, kwargs: dict) -> None:
            if site.key not in captured:
                x = args[0] if args else kwargs["x"]
                bias = kwargs.get("position_bias")
                captured[site.key] = Captured(x.detach(), kwargs.get("key_padding_mask"),
                                              None if bias is None else bias.detach())

        return hook

    for site in sites:
        handles.append(site.module.register_forward_pre_hook(hook_for(site), with_kwargs=True))
    was_training = model.training
    model.eval()
    try:
        model(**batch)
    finally:
        model.train(was_training)
        for handle in handles:
            handle.remove()
    return captured


@torch.no_grad()
def part_weights(attn: SynthesizerAttention, x: Tensor, key_padding_mask: Tensor | None = None,
                 position_bias: Tensor | None = None) -> dict[str, Tensor]:
    """The attention probabilities of each part of ``attn`` and of the whole layer.

    A mixture (paper eq. 8-9) is formed from its parts' *logits*: ``softmax(sum_n alpha_n S_n(X))``. Each part
    is shown here on its own, as ``softmax(S_n(X))`` with the layer's masks (its own alignment before mixing),
    and the layer's actual weights under its kind (``"R+V"``). A plain kind gives one entry.

    Args:
        attn: the attention layer.
        x: (B, L, d_model) its input.
        key_padding_mask: (B, L) bool, True at padding, or None.
        position_bias: (1|B, H, L, L) added to the logits of the layer and of each part (the positions every part
            sees in the model), or None.

    Returns:
        ``{part kind: (B, H, L, L)}`` in the mixture's order, then ``{layer kind: (B, H, L, L)}``; rows sum to 1
        (0 for a fully masked query).
    """
    whole = attn.attention_weights(x, key_padding_mask, position_bias)  # (B, H, L, L)
    synth = attn.synth
    if not isinstance(synth, Mixture):
        return {attn.kind: whole}
    b, length, _ = x.shape
    mask = disallowed(length, length, 0, attn.causal, key_padding_mask, x.device)  # (B|1, 1, L, L)
    out = {}
    for part in synth.parts:
        logits = part.logits(x, 0, None, key_padding_mask)  # (B|1, H, L, L)
        if position_bias is not None:
            logits = logits + position_bias  # (B|1, H, L, L)
        out[part.name] = masked_softmax(logits, mask).expand(b, -1, -1, -1)  # (B, H, L, L)
    out[attn.kind] = whole
    return out


def valid_positions(batch: Mapping[str, Tensor], site: AttentionSite, captured: Captured) -> Tensor:
    """(B, L) bool, True at the positions of real tokens of the site's input (queries and keys worth showing).

    The layer's own key padding mask when the model passed one; otherwise, in a decoder, the positions with a
    label (an LM's or a seq2seq target's padding carries the ignore index -100: a causal decoder is given no
    mask because right padding cannot affect the real positions); otherwise every position.
    """
    b, length = captured.x.shape[:2]
    if captured.key_padding_mask is not None:
        return ~captured.key_padding_mask
    labels = batch.get("labels")
    if site.stack == "decoder" and labels is not None and tuple(labels.shape) == (b, length):
        return labels != IGNORE_INDEX
    return torch.ones(b, length, dtype=torch.bool, device=captured.x.device)
