"""Input-independent synthesizing functions: ``R`` (random, trained), ``Fix`` (random, frozen), ``FR``.

Their logits depend on no token: one alignment is shared by every sample of the batch (paper: "global"). They
have no width of their own: a layer's ``head_dim`` sets only the width of its values.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .base import SynthesizingFunction
from .registry import register


@register("R", aliases=("random",))
class Random(SynthesizingFunction):
    """Random Synthesizer, paper eq. (4): ``Y = softmax(R) G(X)``, ``R`` an ``l x l`` trained matrix per head.

    Choices the paper leaves open:

    * Initialization: ``R ~ N(0, init_std^2)`` with ``init_std = 1`` (option ``init_std``). The paper says only
      "initialized to random values"; unit variance gives a clearly non-uniform alignment at initialization,
      which matters for ``Fix`` (with a small std, a frozen ``R`` would be mere mean pooling).
    * ``R`` is an ``nn.Parameter`` of shape (H, max_len, max_len), one per head, shared by the whole batch and
      saved in the state dict; the batch's ``R[:, :L, :L]`` is used (causal masking is the shell's job).

    Cross-attention: row = target position, column = source position, ``R[:, start:start+T, :S]``.

    Parameters: ``H l^2`` (Table 1: ``l^2`` per head), no bias.
    """

    paper_name = "Random"
    input_dependent = False
    supports_cross = True
    supports_head_dim = True  # its logits read no width: head_dim is the values' alone
    option_defaults = {"init_std": 1.0}
    trainable = True

    def __init__(self, d_model: int, n_heads: int, max_len: int, causal: bool = False, **options):
        super().__init__(d_model, n_heads, max_len, causal, **options)
        R = torch.randn(n_heads, max_len, max_len) * float(self.options["init_std"])
        if self.trainable:
            self.R = nn.Parameter(R)
        else:
            # A persistent buffer: saved and restored with the state dict (never re-drawn on reload),
            # never handed to the optimizer, and not unfrozen by ``requires_grad_()``.
            self.register_buffer("R", R, persistent=True)

    def logits(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> Tensor:
        t = x.shape[1]
        return self.R[:, start : start + t, : start + t].unsqueeze(0)  # (1, H, T, S)

    def positioned_logits(
        self, x: Tensor, start: int, state: dict | None, key_padding_mask: Tensor | None, positions: Tensor
    ) -> Tensor:
        """``R[h, pos_i, pos_j]``: query i and key j at their rows' positions (left padding), (B, H, T, S)."""
        rows = positions[:, -x.shape[1] :]  # (B, T) the queries' positions
        return self.R[:, rows[:, :, None], positions[:, None, :]].transpose(0, 1)  # (H, B, T, S) -> (B, H, T, S)

    @torch.no_grad()
    def zero_logits_(self) -> None:
        """R = 0 (trained R only: a frozen zero table would never contribute)."""
        if not self.trainable:
            super().zero_logits_()
        self.R.zero_()

    def cross_logits(self, x: Tensor, keys: int, start: int = 0, memory_k: Tensor | None = None) -> Tensor:
        t = x.shape[1]
        return self.R[:, start : start + t, :keys].unsqueeze(0)  # (1, H, T, S): target rows, source columns

    @classmethod
    def macs(cls, batch: int, length: int, d_model: int, heads: int, options: dict, pairs: int) -> int:
        """The logits are parameters (R, and Fix by inheritance): nothing to multiply."""
        return 0

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, **options) -> int:
        """``H l^2`` (Table 1: ``l^2`` per head)."""
        return n_heads * max_len * max_len if cls.trainable else 0


@register("Fix", aliases=("fixed", "fixed_random"))
class FixedRandom(Random):
    """Fixed Random Synthesizer (paper section 3.1, *Fixed*; Table 2 ``Fix``): eq. (4) with ``R`` frozen.

    ``R`` is drawn once as for ``R`` and stored as a persistent buffer: 0 trained parameters, but saved in
    checkpoints so a reloaded model uses the same alignment.
    """

    paper_name = "Fixed Random"
    trainable = False


@register("FR", aliases=("factorized_random", "factorised_random"))
class FactorizedRandom(SynthesizingFunction):
    """Factorized Random Synthesizer, paper eq. (7): ``Y = softmax(R1 R2^T) G(X)``, ``R1, R2`` in ``l x k``.

    Choices the paper leaves open:

    * Rank ``k`` (option ``k``): 8 by default, as in the paper's section 3.1; 32 for its encoder tasks (Table 7).
    * Initialization: ``R1, R2 ~ N(0, k^{-1/2})`` entrywise, so each logit ``sum_k R1_ik R2_jk`` has unit
      variance, matching the ``R`` initialization.
    * One ``(R1, R2)`` pair per head; logits ``R1[start:start+T] @ R2[:S]^T``: every query row differs.

    Cross-attention: ``R1[start:start+T] @ R2[:S]^T`` (R1 indexes target positions, R2 source positions).

    Parameters: ``2 H l k`` (Table 1: ``2 l k`` per head).
    """

    paper_name = "Factorized Random"
    input_dependent = False
    has_features = True
    supports_cross = True
    supports_head_dim = True  # its features are k wide whatever the head width: head_dim is the values' alone
    option_defaults = {"k": 8}

    def __init__(self, d_model: int, n_heads: int, max_len: int, causal: bool = False, **options):
        super().__init__(d_model, n_heads, max_len, causal, **options)
        k = int(self.options["k"])
        if k < 1:
            raise ValueError(f"FR rank k must be >= 1, got {k}")
        std = k**-0.25
        self.R1 = nn.Parameter(torch.randn(n_heads, max_len, k) * std)
        self.R2 = nn.Parameter(torch.randn(n_heads, max_len, k) * std)

    @torch.no_grad()
    def zero_logits_(self) -> None:
        """R2 = 0: the logits R1 R2^T are 0 and R2's gradient (dS^T R1) is not."""
        self.R2.zero_()

    def features(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        t = x.shape[1]
        return self.R1[:, start : start + t].unsqueeze(0), self.R2[:, : start + t].unsqueeze(0)  # (1, H, T|S, k)

    def logits(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> Tensor:
        q, k = self.features(x, start, state)
        return q @ k.transpose(-1, -2)  # (1, H, T, S)

    def positioned_logits(
        self, x: Tensor, start: int, state: dict | None, key_padding_mask: Tensor | None, positions: Tensor
    ) -> Tensor:
        """``R1[pos_i] . R2[pos_j]``: query i and key j at their rows' positions (left padding), (B, H, T, S)."""
        rows = positions[:, -x.shape[1] :]  # (B, T) the queries' positions
        q = self.R1[:, rows].transpose(0, 1)  # (H, B, T, k) -> (B, H, T, k)
        k = self.R2[:, positions].transpose(0, 1)  # (H, B, S, k) -> (B, H, S, k)
        return q @ k.transpose(-1, -2)  # (B, H, T, S)

    def cross_logits(self, x: Tensor, keys: int, start: int = 0, memory_k: Tensor | None = None) -> Tensor:
        t = x.shape[1]
        return (self.R1[:, start : start + t] @ self.R2[:, :keys].transpose(-1, -2)).unsqueeze(0)  # (1, H, T, S)

    @classmethod
    def macs(cls, batch: int, length: int, d_model: int, heads: int, options: dict, pairs: int) -> int:
        """``R1 R2^T`` once per batch (it reads no token), ``k`` per pair and head."""
        return heads * pairs * int(options["k"])

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, **options) -> int:
        """``2 H l k`` (Table 1: ``2 l k`` per head)."""
        k = int(cls.resolved_options(**options)["k"])
        return 2 * n_heads * max_len * k
