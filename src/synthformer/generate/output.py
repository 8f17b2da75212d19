"""The result type of every generation function."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

__all__ = ["GenerationOutput"]


@dataclass
class GenerationOutput:
    """Generated sequences of a batch.

    Attributes:
        tokens: (B, T) long, the generated tokens only (no ``<bos>``, no prompt), ending with ``<eos>`` when the
            sequence finished, right-padded with ``pad_id``.
        lengths: (B,) long, generated tokens per sequence (``<eos>`` included).
        scores: (B,) float32: the sum of the model's log-probabilities of the generated tokens; for beam search
            divided by the length penalty (the score the search ranked by).
    """

    tokens: Tensor
    lengths: Tensor
    scores: Tensor

    def to_lists(self, strip_eos: int | None = None) -> list[list[int]]:
        """The sequences as lists of ids (padding removed; ``strip_eos`` removes a final end token too)."""
        out = []
        for row, n in zip(self.tokens.tolist(), self.lengths.tolist(), strict=True):
            seq = row[:n]
            if strip_eos is not None and seq and seq[-1] == strip_eos:
                seq = seq[:-1]
            out.append(seq)
        return out
