"""Slow divergence: a run whose loss leaves its range by far without any single step being a spike
(``train.divergence_factor``, ``train.divergence_window``), and which checkpoints are good to go back to.

The spike check (:mod:`.spikes`) compares each step with the largest recent loss, so a loss that climbs a few times
per step passes it forever: at ``train.lr=5 train.warmup_steps=60`` the tiny character LM of the tests went from
3.58 to 181 in 60 steps, at most x4 a step, and the run used to end with exit status 0. The rule here:

* The **range** of a run is the loss of its untrained model: its first applied step's loss (about
  ``ln(vocabulary)`` for a language model), or the best validation loss so far where that is higher. A model whose
  loss is several times an untrained model's has lost what it learned, whatever the task; a converged run whose
  losses are near 0 is never stopped by noise, as a rule relative to the best loss would be.
* The run **diverges** when the mean loss of its last ``divergence_window`` (10) applied steps, or a validation
  loss (``eval_loss``), is more than ``divergence_factor`` (3) times the range, or a validation loss is not finite.
  It then stops with a one-line error (exit status 2) naming the checkpoint to go back to. The mean of a window, not
  one step, so a single hard batch never stops a run (that is the spike check's job, with its own factor).
* Which checkpoints are good to go back to, and which rotation keeps whatever ``train.keep_best`` says, is decided
  by what each checkpoint's weights computed (:mod:`.checkpoint_losses`).

The window and the range are saved in each checkpoint, so a resumed run decides as the uninterrupted one would.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from typing import Any

from .spikes import LossReference

__all__ = ["DivergenceWatch"]


class DivergenceWatch:
    """The divergence rule of the module: a window of the latest applied losses and the best eval loss; the first
    applied loss is the spike check's (``reference``: it accepts every applied step's loss before this rule does,
    and saves and resumes it).

    Args:
        factor: ``train.divergence_factor`` (0: no check).
        window: ``train.divergence_window``.
        reference: the run's :class:`~synthformer.train.spikes.LossReference`.
    """

    def __init__(self, factor: float, window: int, reference: LossReference) -> None:
        self.factor = float(factor)
        self.reference = reference
        self.recent: deque[float] = deque(maxlen=int(window))
        self.best_eval: float | None = None

    @property
    def first(self) -> float | None:
        """The run's first applied loss, an untrained model's (None before it)."""
        return self.reference.first

    @property
    def mean(self) -> float | None:
        """The mean loss of the window (None before the first applied step)."""
        return sum(self.recent) / len(self.recent) if self.recent else None

    @property
    def range(self) -> float | None:
        """The loss of an untrained model, or the best validation loss where that is higher."""
        if self.first is None:
            return self.best_eval
        return self.first if self.best_eval is None else max(self.first, self.best_eval)

    def accept(self, loss: float) -> str | None:
        """The update of a step with this loss was applied (the reference has accepted it); returns why the run
        diverges (once the window is full), or None."""
        self.recent.append(float(loss))
        mean, limit = self.mean, self._limit()
        if limit is None or len(self.recent) < (self.recent.maxlen or 1) or mean is None or mean <= limit:
            return None
        return (f"the mean training loss of the last {len(self.recent)} applied steps, {mean:.4g}, is "
                f"{mean / (self.range or 1.0):.3g} times the run's range {self.range:.4g}")

    def evaluated(self, eval_loss: float) -> str | None:
        """A validation loss was measured; returns why the run diverges, or None (then it may join the range)."""
        limit = self._limit()
        if self.factor > 0 and not math.isfinite(eval_loss):
            return f"the validation loss is {eval_loss:g}"
        if limit is not None and eval_loss > limit:
            return (f"the validation loss {eval_loss:.4g} is {eval_loss / (self.range or 1.0):.3g} times the run's "
                    f"range {self.range:.4g}")
        if math.isfinite(eval_loss):  # with the check off too: the range is kept for the checkpoints' judgement
            self.best_eval = eval_loss if self.best_eval is None else min(self.best_eval, eval_loss)
        return None

    def _limit(self) -> float | None:
        reference = self.range
        if self.factor <= 0 or reference is None or reference <= 0:
            return None
        return self.factor * reference

    def in_range(self, loss: float) -> bool:
        """Whether a loss of a checkpoint (its training or validation loss) is finite and within the divergence
        limit (any finite loss while there is no limit)."""
        limit = self._limit()
        return math.isfinite(loss) and (limit is None or loss <= limit)

    def state(self) -> dict[str, Any]:
        """What a checkpoint's ``trainer_state.json`` keeps to continue the rule (the first loss is the
        reference's)."""
        if not self.recent and self.best_eval is None:
            return {}
        return {"divergence": {"recent": list(self.recent), "best_eval": self.best_eval}}

    def resume(self, trainer_state: Mapping[str, Any]) -> None:
        """Continue the rule of a checkpoint (one of an earlier version, without it, starts the window afresh)."""
        saved = trainer_state.get("divergence")
        if not isinstance(saved, Mapping):
            return
        self.recent.clear()
        self.recent.extend(float(x) for x in saved.get("recent", []))
        best = saved.get("best_eval")
        self.best_eval = None if best is None else float(best)
