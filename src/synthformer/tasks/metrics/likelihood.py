"""Scoring a model on a dataset by its likelihood, and the in-order batching the task types share.

Losses are plain cross-entropy in nats per target computed from the logits, so a model trained with label
smoothing is still scored by its true likelihood. :func:`batches` reads a dataset in order (or an evenly spaced
sample of it); the task types' own metrics (:mod:`synthformer.tasks.types`) and ``synthformer analyze`` use it too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.data import DataLoader, Subset

from synthformer.models import IGNORE_INDEX
from synthformer.train import EvalShard

from .units import perplexity

__all__ = ["batches", "device_of", "likelihood_metrics", "sample_indices", "to_device", "token_nll"]


def device_of(model: nn.Module) -> torch.device:
    """The device of the model's parameters."""
    return next(model.parameters()).device


def sample_indices(n: int, batch_size: int, max_batches: int = 0) -> list[int] | None:
    """The items of a dataset of ``n`` an evaluation scores: ``max_batches * batch_size`` evenly spaced ones, or
    None for all of them (``max_batches`` 0, or no more items than that).

    Evenly spaced rather than the first ones: data files are often sorted (IMDb by label), and the beginning of
    a text is not typical of all of it. The sample depends on the config alone (``batch_size`` is the evaluation
    batch of the config, not divided by the number of processes), never on how many processes share it.
    """
    if max_batches and n > max_batches * batch_size:
        keep = max_batches * batch_size
        return [i * n // keep for i in range(keep)]
    return None


def batches(dataset: Any, batch_size: int, max_batches: int = 0,
            shard: EvalShard | None = None) -> Iterator[dict[str, Tensor]]:
    """Batches of ``dataset`` in order; with ``max_batches``, of an evenly spaced sample of that many batches
    (:func:`sample_indices`). With a ``shard`` of several processes, only this process's contiguous part of that
    sample (:meth:`EvalShard.part`), in batches of ``batch_size``."""
    data = dataset
    indices = sample_indices(len(dataset), batch_size, max_batches)
    if shard is not None and not shard.whole:
        data = Subset(dataset, list(shard.part(indices if indices is not None else range(len(dataset)))))
    elif indices is not None:
        data = Subset(dataset, indices)
    return iter(DataLoader(data, batch_size=batch_size, shuffle=False, collate_fn=dataset.collate))


def to_device(batch: Mapping[str, Tensor], device: torch.device) -> dict[str, Tensor]:
    """The batch's tensors on ``device``."""
    return {k: v.to(device) for k, v in batch.items()}


@torch.no_grad()
def token_nll(model: nn.Module, dataset: Any, batch_size: int, max_batches: int,
              shard: EvalShard | None = None) -> tuple[float, int]:
    """Summed cross-entropy (nats) over the target tokens (labels not ``IGNORE_INDEX``), and their number; with a
    ``shard``, each process scores its part of the sample and the sums are gathered (collective)."""
    total, count = 0.0, 0
    device = device_of(model)
    for batch in batches(dataset, batch_size, max_batches, shard):
        batch = to_device(batch, device)
        logits = model(**batch)["logits"].float()  # (B, L, V)
        labels = batch["labels"]
        total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),  # (B*L, V)
                                       ignore_index=IGNORE_INDEX, reduction="sum"))
        count += int((labels != IGNORE_INDEX).sum())
    if shard is not None and not shard.whole:
        total, gathered = shard.sum(total, count)
        count = int(gathered)
    return total, count


def likelihood_metrics(model: nn.Module, dataset: Any, names: list[str], batch_size: int,
                       max_batches: int, shard: EvalShard | None = None) -> dict[str, Any]:
    """Teacher-forced ``loss`` (nats per target token), ``log_perplexity`` (the same number, under the name the
    paper's Table 4 uses) and ``perplexity``, those of them in ``names``, plus the target ``tokens`` counted;
    empty when ``names`` asks for none of them. ``shard``: see :func:`token_nll`."""
    wanted = [n for n in ("loss", "log_perplexity", "perplexity") if n in names]
    if not wanted:
        return {}
    total, count = token_nll(model, dataset, batch_size, max_batches, shard)
    mean = total / max(count, 1)
    values = {"loss": mean, "log_perplexity": mean, "perplexity": perplexity(mean)}
    return {**{n: values[n] for n in wanted}, "tokens": count}
