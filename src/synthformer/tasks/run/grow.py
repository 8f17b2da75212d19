"""Growing Synthesizers from a pretrained run: ``init_from`` a run whose self-attention is one kind (T5's ``V``)
into a model whose kind is a mixture containing it (``R+V``, ``D+V``, ``FR+V``, ...).

The pretrained part takes the pretrained weights (its state-dict names move into the mixture:
``self_attn.synth.qk.weight`` becomes ``self_attn.synth.parts.1.qk.weight`` in ``R+V``) and the new parts are new.
The model must compute the pretrained model's function at step 0, yet every new parameter must learn. A mixture
computes ``sum_n alpha_n S_n(X)`` with ``alpha = softmax(w)`` per head (:class:`~synthformer.attention.Mixture`),
so a new part cannot get a zero share with a finite ``w`` (and at ``w = -inf`` it would get no gradient either).
Instead, at step 0 (:meth:`~synthformer.attention.Mixture.grow_from_`):

* each new part's logits are made exactly zero through its last factor (R = 0; FR's R2 = 0; D's, Bottleneck's and
  GLU's W2, b2 = 0; FD's tiled factor = 0; :meth:`~synthformer.attention.SynthesizingFunction.zero_logits_`), which
  keeps a nonzero gradient for that factor;
* ``w`` is set so that the pretrained part's weight ``alpha_V`` is a power of two: the mixture's own ``1/N`` when N
  is a power of two, else 1/2 with the new parts sharing the other half (R+D+V: 1/4, 1/4, 1/2);
* the pretrained part's logits are multiplied by ``1 / alpha_V`` (V: its query rows per head,
  :meth:`~synthformer.attention.SynthesizingFunction.scale_logits_`): a power of two, so ``alpha_V (q / alpha_V)``
  is ``q`` exactly.

So the mixed logits equal the pretrained logits exactly, the mixture weights keep the paper's convex
parametrisation, and ``w`` starts learning at once (its gradient involves ``S_new - S_V``). ``init_from.json`` lists
the new parts' parameters as newly initialised and the grown layers under ``grown``.

**The same output bit for bit.** Equal logits are not enough in float32: V runs through PyTorch's fused SDPA
kernel (an online softmax over blocks of keys), while ``R+V`` materializes its logits and takes ``torch.softmax``
(and ``D+V`` multiplies wider concatenated features): the same function rounded another way, about 1e-5 per layer,
1e-2 on the logits of a trained T5 (4e-13 in float64). Making every mixture take V's route would change (and slow)
every mixture's results at every step, to serve step 0 only. So the choice is a state the mixture recognises at run
time: while the new parts' tensors are the ones ``grow_from_`` left (their identity, storage and version counters,
which every in-place change bumps: an optimizer step, ``load_state_dict``, ``copy_``; no value is read), the mixture's
function is ``alpha_V S_V`` and the layer computes it through V's own paths
(:meth:`~synthformer.attention.Mixture.grown_view`), bit for bit the pretrained layer's. It costs a check of a few
tensors per grown layer while the state lasts and one ``None`` test otherwise. When the new parts need a gradient
(training), the value is V's and the gradient the whole mixture's ordinary path's, computed as well (SDPA's
backward does not give the logits' gradient the new parts need); once the backward pass reaches the layer the state
ends for good (an update follows: a loop that writes through ``.data``, unseen by version counters, is covered too),
so from the first update on every result is the ordinary mixture's. What holds, in float32 and float64, for every
kind that can grow next to V (R, FR, D, FD, Bottleneck, GLU; more parts too), with and without padding, T5's
position bias, causal masks, decoding and left-padded positions: eval mode is exact; training is exact without
attention dropout (the forward; the gradient is the mixture's); with attention dropout a forward that needs the new
parts' gradient takes the ordinary path (two paths could not draw one dropout mask), and matches to rounding.

The module is a leaf of ``init_from``'s start (:func:`~.init_from.start_from_pretrained`): it is asked once which
layers grow (:func:`grown_layers`) and once to grow them from the loaded checkpoint (:func:`load_grown_`), and calls
nothing back.

Only the self-attention kinds may grow (``encoder_kind``, ``decoder_kind``, their options and ``kind_options`` for
the new parts); every other model setting must stay the pretrained one.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from synthformer.attention import parse_kind
from synthformer.common import ConfigError
from synthformer.models import ModelConfig

__all__ = ["GROWABLE_FIELDS", "grown_layers", "growth_record", "load_grown_", "rename_grown_keys",
           "start_grown_mixtures_"]

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
    """Make every grown mixture compute its pretrained part's function (see the module docstring), in place.

    Raises:
        ConfigError: a new part that cannot start at zero logits, or a pretrained part that cannot rescale its own.
    """
    for name, part in grown.items():
        mixture = model.get_submodule(name).synth
        try:
            exact = mixture.grow_from_(part)
        except NotImplementedError as err:
            raise ConfigError(f"init_from: {name} ({mixture.name}): {err}") from None
        if not exact:  # this machine's softmax did not give a power of two: 1/alpha rounds
            logger.warning("init_from: %s (%s): its pretrained part's mixture weight is not a power of two here; "
                           "its step 0 matches the pretrained output to rounding only", name, mixture.name)
    if grown:
        logger.info("init_from: grew %d self-attention layer(s) into mixtures: %s", len(grown), ", ".join(grown))


def growth_record(model: nn.Module, grown: dict[str, int]) -> dict[str, Any]:
    """What ``init_from.json`` says about the grown layers: each layer's mixture and its pretrained part."""
    return {name: {"kind": model.get_submodule(name).kind,
                   "pretrained_part": model.get_submodule(name).synth.parts[n].name} for name, n in grown.items()}


def load_grown_(model: nn.Module, state: dict[str, Tensor], grown: dict[str, int],
                source: str | Path) -> tuple[list[str], list[str], dict[str, Any]]:
    """Load the pretrained ``state`` (a checkpoint's tensors, read from ``source``) into ``model``, whose layers in
    ``grown`` are mixtures grown from a pretrained part: the part's tensors are renamed into the mixture
    (:func:`rename_grown_keys`), loaded, and each mixture started at its part's function
    (:func:`start_grown_mixtures_`).

    Returns:
        ``(missing, unexpected, record)``: the model's tensors the checkpoint did not fill (newly initialised, in
        the model's order), the checkpoint's tensors the model has no place for (sorted; the model took the rest,
        the caller refuses these) and what ``init_from.json`` says of the grown layers (:func:`growth_record`).

    Raises:
        ConfigError: a tensor whose shape is not the model's (each named with both shapes), or a mixture that
            cannot start at its pretrained part's function.
    """
    state = rename_grown_keys(state, grown)
    ours = model.state_dict()
    wrong = [f"{k}: checkpoint {list(t.shape)}, model {list(ours[k].shape)}" for k, t in state.items()
             if k in ours and t.shape != ours[k].shape]
    if wrong:
        raise ConfigError(f"init_from: parameter shapes differ from {source} ({'; '.join(wrong)})")
    unexpected = sorted(set(state) - set(ours))
    loaded_storage = {ours[k].data_ptr() for k in state if k in ours}
    # a tied tensor is stored once: its other names (tgt_embed, lm_head) share the loaded storage
    missing = [k for k, t in ours.items() if k not in state and t.data_ptr() not in loaded_storage]
    model.load_state_dict({**ours, **{k: t for k, t in state.items() if k in ours}}, strict=True)
    start_grown_mixtures_(model, grown)
    return missing, unexpected, growth_record(model, grown)
