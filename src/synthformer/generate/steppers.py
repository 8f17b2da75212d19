"""Next-token scorers over a model, with or without the decoding cache.

A *stepper* turns a model into the function the search loops need: given every token generated so far,
``(N, t)``, return the log-probabilities of the next token, ``(N, V)``. With the cache it feeds the model only the
tokens it has not seen yet (one per step after the prompt); without it (a mixer that cannot decode incrementally)
it recomputes the whole prefix, which gives the same numbers at a higher cost. ``select(index)`` reorders or
expands the N rows (beam search) so that row i continues what row ``index[i]`` was.
"""

from __future__ import annotations

import logging

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from synthformer.common import positions_from_padding

__all__ = ["LMStepper", "Seq2SeqStepper", "resolve_use_cache"]

logger = logging.getLogger(__name__)


def resolve_use_cache(model: nn.Module, use_cache: bool | None) -> bool:
    """``use_cache`` if given, else whether the model can decode incrementally (``model.supports_cache``)."""
    supported = bool(getattr(model, "supports_cache", False))
    if use_cache is None:
        if not supported:
            logger.info("%s cannot decode incrementally: recomputing the prefix at every step", type(model).__name__)
        return supported
    if use_cache and not supported:
        raise ValueError(
            f"use_cache=True but {type(model).__name__} has a token mixer without a decoding cache; "
            f"pass use_cache=None or False to recompute the prefix instead"
        )
    return use_cache


class LMStepper:
    """Stepper over a decoder-only LM (``model(input_ids=...)["logits"]``, ``init_cache``, ``decode_step``).

    ``padding_mask`` (N, P) bool, True at the left padding of the prompts (the first P columns): the model then
    gets the padding and each token's position within its row (:func:`~synthformer.models.positions_from_padding`),
    so that a padded row is scored as it is alone. The columns after the prompts are real tokens.
    """

    def __init__(self, model: nn.Module, batch_size: int, use_cache: bool, padding_mask: Tensor | None = None) -> None:
        self.model = model
        self.cache = model.init_cache(batch_size) if use_cache else None
        self.fed = 0  # tokens already inside the cache
        self.padding_mask = padding_mask if padding_mask is not None and bool(padding_mask.any()) else None

    def _padding(self, t: int) -> dict[str, Tensor]:
        """The padding mask (N, t) and positions (N, t) of the first t columns, or nothing without padding."""
        if self.padding_mask is None:
            return {}
        prompt = self.padding_mask.shape[1]
        mask = F.pad(self.padding_mask[:, :t], (0, max(t - prompt, 0)), value=False)  # (N, t): generated = real
        return {"padding_mask": mask, "positions": positions_from_padding(mask)}

    def logits(self, tokens: Tensor) -> Tensor:
        """Raw next-token logits (N, V) in float32 after the prefix ``tokens`` (N, t)."""
        padding = self._padding(tokens.shape[1])
        if self.cache is None:
            return self.model(input_ids=tokens, **padding)["logits"][:, -1].float()
        if padding:
            padding["positions"] = padding["positions"][:, self.fed :]  # the new tokens' positions (N, t - fed)
        logits, self.cache = self.model.decode_step(tokens[:, self.fed :], self.cache, **padding)  # (N, t - fed, V)
        self.fed = tokens.shape[1]
        return logits[:, -1].float()

    def __call__(self, tokens: Tensor) -> Tensor:
        return torch.log_softmax(self.logits(tokens), dim=-1)

    def select(self, index: Tensor) -> None:
        if self.cache is not None:
            self.cache = self.cache.select(index)
        if self.padding_mask is not None:
            self.padding_mask = self.padding_mask.index_select(0, index)


class Seq2SeqStepper:
    """Stepper over an encoder-decoder: the source is encoded once by the caller; with the cache the
    cross-attention keys/values are computed once too (in ``model.init_cache``)."""

    def __init__(self, model: nn.Module, memory: Tensor, memory_padding_mask: Tensor | None, use_cache: bool) -> None:
        self.model = model
        self.memory, self.memory_padding_mask = memory, memory_padding_mask
        self.cache = model.init_cache(memory, memory_padding_mask) if use_cache else None
        self.fed = 0

    def __call__(self, tokens: Tensor) -> Tensor:
        if self.cache is None:
            logits = self.model.decode(tokens, self.memory, self.memory_padding_mask)[:, -1]  # (N, V)
        else:
            logits, self.cache = self.model.decode_step(tokens[:, self.fed :], self.cache)
            logits = logits[:, -1]
            self.fed = tokens.shape[1]
        return torch.log_softmax(logits.float(), dim=-1)

    def select(self, index: Tensor) -> None:
        if self.cache is not None:
            # the cache holds the memory's keys/values and padding mask: nothing else to move
            self.cache = self.cache.select(index)
            return
        self.memory = self.memory.index_select(0, index)
        if self.memory_padding_mask is not None:
            self.memory_padding_mask = self.memory_padding_mask.index_select(0, index)
