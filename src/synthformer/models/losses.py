"""Losses of the task models (the ``"loss"`` entry of the batch contract in ``docs/CONTRACTS.md``)."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from synthformer.common import IGNORE_INDEX

__all__ = ["IGNORE_INDEX", "classification_loss", "token_cross_entropy"]


def token_cross_entropy(logits: Tensor, labels: Tensor, label_smoothing: float = 0.0) -> Tensor:
    """Label-smoothed cross-entropy over the counted targets (labels != -100), averaged over them.

    With smoothing ``eps`` and V classes the target distribution puts ``1 - eps + eps / V`` on the label and
    ``eps / V`` on every other class, so the loss is ``(1 - eps) * NLL + eps * mean_c(-log p_c)``
    (PyTorch's definition; the paper used ``eps = 0.1`` for MT).

    Args:
        logits: (B, L, V) (any float dtype; the loss is computed in float32).
        labels: (B, L) long, -100 at positions that do not count.
        label_smoothing: eps in [0, 1).

    Returns:
        A scalar. A batch without any counted target gives 0 (connected to the graph) instead of NaN.
    """
    flat_logits = logits.reshape(-1, logits.shape[-1]).float()  # (B, L, V) -> (B*L, V)
    flat_labels = labels.reshape(-1)  # (B, L) -> (B*L,)
    # (meta tensors hold no values to test: shape-only runs, the device tests, go straight to the loss)
    if flat_labels.device.type != "meta" and not bool((flat_labels != IGNORE_INDEX).any()):
        return flat_logits.sum() * 0.0
    return F.cross_entropy(flat_logits, flat_labels, ignore_index=IGNORE_INDEX, label_smoothing=label_smoothing)


def classification_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Plain cross-entropy averaged over the batch: logits (B, C), labels (B,) long."""
    return F.cross_entropy(logits.float(), labels)
