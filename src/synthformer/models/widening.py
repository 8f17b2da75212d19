"""Widening a model to a parameter count: the paper's "T5 (Base+)".

Tables 5 and 6 of the paper compare the Synthesizer mixtures Syn (R+V) and Syn (D+V) with T5 (Base) and with
"T5 (Base+)", T5 given as many parameters as the Syn (+V) models ("approximately 10M more", section 4.2), so that
the mixtures' gain cannot be put down to their extra parameters. :func:`widen_to_parameters` builds such a
baseline from any config: it widens one dimension until the model's parameter count is the closest to a target.

Which dimension: ``d_ff`` by default. Widening the feed-forward layers leaves everything else of the model as it was
(``d_model``, so the head width, the embeddings and the attention shapes, R's and D's parameters included), its
count grows by the same amount for each unit of ``d_ff`` (one hidden unit more in every feed-forward layer), so
the closest count is within one such step of the target; and T5's own larger variants grow ``d_ff``
faster than ``d_model``. ``d_model`` can be widened instead (in steps of ``n_heads``, so that heads stay whole);
its count grows quadratically and every other shape changes with it.

Parameters are counted on models built on the ``meta`` device (shapes only, no memory, no initialisation), by
:func:`count_parameters`, so a base-size model is counted in a fraction of a second. Both functions take any
registered architecture's config.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

import torch

from .config import ModelConfig
from .registry import build_model

__all__ = ["WIDENABLE", "count_parameters", "widen_to_parameters"]

C = TypeVar("C", bound=ModelConfig)

#: The dimensions :func:`widen_to_parameters` can widen.
WIDENABLE: tuple[str, ...] = ("d_ff", "d_model")


def count_parameters(config: ModelConfig) -> int:
    """The trainable parameters of the model ``config`` describes (tied embeddings once, a frozen ``Fix`` not),
    as :func:`~synthformer.models.num_parameters` counts a built model; the model is built on the ``meta`` device.
    """
    with torch.device("meta"):
        model = build_model(config)
    # model.parameters() yields a shared Parameter (tied embeddings) once; meta tensors have no storage to compare
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def widen_to_parameters(config: C, target: int, dim: str = "d_ff", step: int | None = None) -> tuple[C, int]:
    """``config`` with ``dim`` widened so that its parameter count is the closest to ``target``; and that count.

    Args:
        config: the base model (e.g. T5 (Base)); it is not changed.
        target: the parameter count to reach (e.g. :func:`count_parameters` of Syn (R+V)); at least the base's.
        dim: ``"d_ff"`` (the default, see the module docstring) or ``"d_model"``.
        step: the widening granularity: ``dim`` grows by multiples of it (default 1 for ``d_ff``, ``n_heads`` for
            ``d_model``; e.g. 128 keeps ``d_ff`` a multiple of 128 when the base's is).

    Returns:
        The widened config and its count; the count is within one step's worth of parameters of ``target`` (the
        closer of the two widths around it; the wider one on a tie).

    Raises:
        ValueError: ``target`` below the base's count, an unknown ``dim``, or a ``step`` that is not a positive
            integer (a multiple of ``n_heads`` for ``d_model``).
    """
    if dim not in WIDENABLE:
        raise ValueError(f"dim must be one of {', '.join(WIDENABLE)}, got {dim!r}")
    step = (config.n_heads if dim == "d_model" else 1) if step is None else step
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise ValueError(f"step must be a positive integer, got {step!r}")
    if dim == "d_model" and step % config.n_heads:
        raise ValueError(f"step {step} for d_model must be a multiple of n_heads ({config.n_heads}): heads stay whole")
    base = count_parameters(config)
    if isinstance(target, bool) or not isinstance(target, int) or target < base:
        raise ValueError(f"target {target!r} parameters is below the base model's {base:,}: widening only adds "
                         "parameters")
    width = getattr(config, dim)
    counts: dict[int, int] = {0: base}

    def count(k: int) -> int:  # the parameters of the config k steps wider
        if k not in counts:
            counts[k] = count_parameters(dataclasses.replace(config, **{dim: width + k * step}))
        return counts[k]

    # a first guess from the first step's parameters: exact when the count is linear in the width (d_ff), too wide
    # when it grows faster (d_model); then the widths are bisected down to the two around the target
    low, high = 0, max(1, -(-(target - base) // (count(1) - base)))
    while count(high) < target:
        low, high = high, 2 * high
    if count(high - 1) < target:
        low = high - 1
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if count(mid) < target else (low, mid)
    k = low if target - count(low) < count(high) - target else high
    return dataclasses.replace(config, **{dim: width + k * step}), count(k)
