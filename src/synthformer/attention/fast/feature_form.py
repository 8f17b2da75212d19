"""The feature form's branch: SDPA (the shell's :mod:`~synthformer.attention.sdpa` path) or the materialized
blocks.

Kinds with a feature form give ``logits == q @ k^T``; through SDPA (``scale=1``) their logits are never
materialized. Where the widths of q and v differ (every kind but ``V``) the measured choice is often one GEMM
over the features with the logits materialized in blocks instead (:func:`materialize_features`, the ``blocks``
path): why is in docs/benchmarks.md, "Why the fast paths look the way they do".
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import sdpa
from ..base import dot_logits
from ..paths import AttentionCall
from .settings import current

__all__ = ["attend_sdpa", "feature_logits", "feature_rows", "materialize_features", "materializes", "sdpa_runs_fused"]


def sdpa_runs_fused(drop: float, device: torch.device) -> bool:
    """Whether ``F.scaled_dot_product_attention`` with ``dropout_p=drop`` runs a fused kernel on ``device``.

    Not on the CPU with dropout: PyTorch's CPU flash kernel takes no dropout, so SDPA falls back to its math path,
    which materializes the (B, H, T, S) probabilities and their dropout mask and stores both for the backward
    (checked by tests/attention/test_decoding_and_fast_paths.py, which asks for the flash kernel alone). There
    the materialized paths are the faster and smaller choice for every kind but V (vanilla attention stays
    PyTorch's SDPA, the baseline users compare with).
    """
    return drop == 0.0 or device.type != "cpu"


def materialize_features(e: int, dh: int, s: int, drop: float = 0.0, device: torch.device | None = None) -> bool:
    """Whether q/k features of width e against values of width d_h over s keys take the materialized blocks.

    The settings' ``features`` branch decides, or when it is "auto" the measured lengths
    (``features_materialize_max_len``, a separate one without gradients). With attention dropout ``drop`` on a
    CPU ``device`` (:func:`sdpa_runs_fused` False) a kind with its own feature width always does, since SDPA
    would run its math path, which the blocks measured faster than (docs/benchmarks.md, "Why the fast paths look
    the way they do", has the A/B).
    """
    settings = current()
    if settings.features != "auto":
        return settings.features == "blocks"
    if e != dh and device is not None and not sdpa_runs_fused(drop, device):
        return True
    if torch.is_grad_enabled():
        limit = settings.features_materialize_max_len
    else:
        limit = settings.features_materialize_max_len_no_grad
    return e != dh and s <= limit  # one width (V): the fused kernel needs no padding, it always wins


def materializes(call: AttentionCall) -> bool:
    """:func:`materialize_features` for ``call``'s features (computed here, once per call)."""
    q, _ = call.features()
    return materialize_features(q.shape[-1], call.v.shape[-1], call.keys, call.drop, call.v.device)


def attend_sdpa(call: AttentionCall) -> Tensor:
    """The shell's SDPA path with the feature widths padded to the settings' ``width_multiple``: (B, H, T, d_h)."""
    return sdpa.attend_sdpa(call, current().width_multiple)


def feature_logits(factors: tuple, keys: int) -> Tensor:
    """(samples|1, h, T, keys) logits ``q k^T`` of a block of the feature pair (k already cut to the keys)."""
    return dot_logits(*factors)


def feature_rows(factors: tuple, q0: int, q1: int) -> tuple:
    """The feature pair of queries ``q0 .. q1-1`` over keys ``0 .. q1-1`` (views)."""
    q, k = factors
    return q[..., q0:q1, :], k[..., :q1, :]
