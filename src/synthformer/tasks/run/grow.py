"""Growing Synthesizers from a pretrained run: ``init_from`` a run whose self-attention is one kind (T5's ``V``)
into a model whose kind is a mixture containing it (``R+V``, ``D+V``, ``FR+V``, ...).

The pretrained part takes the pretrained weights (its state-dict names move into the mixture:
``self_attn.synth.qk.weight`` becomes ``self_attn.synth.parts.1.qk.weight`` in ``R+V``) and the new parts are new.
The model must compute the pretrained model's function at step 0, yet every new parameter must learn. A mixture
computes ``sum_n alpha_n S_n(X)`` with ``alpha = softmax(w)`` per head (:class:`~synthformer.attention.Mixture`),
so a new part cannot get a zero share with a finite ``w`` (and at ``w = -inf`` it would get no gradient either).
Instead, at step 0:

* each new part's logits are made exactly zero through its last factor (R = 0; FR's R2 = 0; D's, Bottleneck's and
  GLU's W2, b2 = 0; FD's tiled factor = 0; :meth:`~synthformer.attention.SynthesizingFunction.zero_logits_`), which
  keeps a nonzero gradient for that factor;
* the pretrained part's logits are multiplied by ``1 / alpha`` (V: its query rows per head,
  :meth:`~synthformer.attention.SynthesizingFunction.scale_logits_`), with alpha the mixture's initial weight
  (``1/N`` for N parts: exactly 0.5 in R+V, so the product is exact).

So the mixed logits equal the pretrained logits (to rounding), the mixture weights keep the paper's convex
parametrisation, and ``w`` starts learning at once (its gradient involves ``S_new - S_V``). ``init_from.json`` lists
the new parts' parameters as newly initialised and the grown layers under ``grown``.

Only the self-attention kinds may grow (``encoder_kind``, ``decoder_kind``, their options and ``kind_options`` for
the new parts); every other model setting must stay the pretrained one.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch import Tensor, nn

from synthformer.attention import parse_kind
from synthformer.models import ModelConfig
from synthformer.train import ConfigError

__all__ = ["GROWABLE_FIELDS", "grown_layers", "growth_record", "rename_grown_keys", "start_grown_mixtures_"]

logger = logging.getLogger(__name__)

#: Model settings that may differ from the pretrained run's when its kinds grow into mixtures.
GROWABLE_FIELDS: frozenset[str] = frozenset(
    {"encoder_kind", "decoder_kind", "encoder_kind_options", "decoder_kind_options", "kind_options"})


def grown_layers(saved: ModelConfig, ours: ModelConfig) -> dict[str, int]:
    """``{"encoder.layers.3.self_attn": index of the pretrained part in the new mixture, ...}``, one entry per
    self-attention layer whose kind grew; empty when every kind is the pretrained one.

    Raises:
        ConfigError: a layer whose kind changed other than by adding parts to a single pretrained kind.
    """
    grown = {}
    for stack in ours.stacks:
        for i, (old, new) in enumerate(zip(saved.layer_kinds(stack), ours.layer_kinds(stack), strict=True)):
            old_parts, new_parts = parse_kind(old), parse_kind(new)
            if [p.name for p in old_parts] == [p.name for p in new_parts]:
                continue
            if len(old_parts) != 1 or old_parts[0] not in new_parts:
                raise ConfigError(f"init_from: model.{stack}_kind: layer {i} is {old!r} in the pretrained run and "
                                  f"{new!r} here; a kind may only grow into a mixture that contains it "
                                  f"(e.g. {old!r} -> 'R+{old}')")
            grown[f"{stack}.layers.{i}.self_attn"] = new_parts.index(old_parts[0])
    return grown


def rename_grown_keys(state: dict[str, Tensor], grown: dict[str, int]) -> dict[str, Tensor]:
    """The pretrained state dict with each grown layer's ``synth.*`` tensors moved to ``synth.parts.<n>.*``."""
    out = {}
    for key, tensor in state.items():
        layer = next((name for name in grown if key.startswith(f"{name}.synth.")), None)
        if layer is not None:
            rest = key[len(f"{layer}.synth.") :]
            key = f"{layer}.synth.parts.{grown[layer]}.{rest}"
        out[key] = tensor
    return out


@torch.no_grad()
def start_grown_mixtures_(model: nn.Module, grown: dict[str, int]) -> None:
    """Make every grown mixture compute its pretrained part's logits (see the module docstring), in place."""
    for name, old in grown.items():
        mixture = model.get_submodule(name).synth
        alpha = mixture.alpha()  # (H, N)
        for n, part in enumerate(mixture.parts):
            try:
                if n == old:
                    part.scale_logits_(1.0 / alpha[:, n])
                else:
                    part.zero_logits_()
            except NotImplementedError as err:
                raise ConfigError(f"init_from: {name} ({mixture.name}): {err}") from None
    if grown:
        logger.info("init_from: grew %d self-attention layer(s) into mixtures: %s", len(grown), ", ".join(grown))


def growth_record(model: nn.Module, grown: dict[str, int]) -> dict[str, Any]:
    """What ``init_from.json`` says about the grown layers: each layer's mixture and its pretrained part."""
    return {name: {"kind": model.get_submodule(name).kind,
                   "pretrained_part": model.get_submodule(name).synth.parts[n].name} for name, n in grown.items()}
