"""Loss spikes: a finite loss that leaves its recent range by far (``train.spike_factor``, ``train.spike_window``).

A run whose learning rate is far too high does not always reach NaN: at ``train.lr=1e4`` a tiny character LM went
from a loss of 3.58 at step 1 to 1.1e9 at step 2 and stayed there, every number finite, and the run ended with exit
status 0. Large-scale training watches for loss spikes (PaLM restarted from a checkpoint about 100 steps before each
and skipped the few hundred batches around it). The rule here:

* The **reference** is the largest loss among the run's first step and its last ``spike_window`` (100) steps whose
  update was applied. Using the largest, not a mean, keeps the noise of small batches (a step with one confidently
  wrong example) inside the range; keeping the first step's loss (an untrained model's, about ``ln(vocabulary)``)
  means a converged run whose losses are near 0 is not stopped by a harder batch that is still below it.
* A step's loss is a **spike** when it is more than ``spike_factor`` (10) times the reference. It is then handled
  as a non-finite step (``train.nonfinite``: stop the run in one line, or skip the update; ``nonfinite_limit``
  skipped steps in a row stop it too). A spike's loss never enters the reference.
* The **warm-up** is the first step alone: its loss starts the reference, and the check runs from the second step
  on. A longer warm-up would let the blow-up above in (its second step is already the spike).
* Under several processes the loss checked is the largest of the processes' step losses, agreed on by the one
  all-reduce each step already makes (:meth:`~synthformer.train.longrun.LongRunPolicy.check_step`), so every
  process holds the same reference and takes the same decision.

The reference is saved in each checkpoint's ``trainer_state.json``, so a resumed run decides as the uninterrupted
one would have.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["LossReference", "spike_message"]


class LossReference:
    """The reference of the spike check (see the module): the first applied loss and a window of the latest.

    Args:
        factor: ``train.spike_factor`` (0: no check).
        window: ``train.spike_window``.
    """

    def __init__(self, factor: float, window: int) -> None:
        self.factor = float(factor)
        self.first: float | None = None
        self.recent: deque[float] = deque(maxlen=int(window))

    @property
    def value(self) -> float | None:
        """The reference loss (None before the first applied step)."""
        if self.first is None:
            return None
        return max(self.first, *self.recent) if self.recent else self.first

    def is_spike(self, loss: float) -> bool:
        """Whether ``loss`` (finite) is a spike: more than ``factor`` times a positive reference."""
        reference = self.value
        return self.factor > 0 and reference is not None and reference > 0 and loss > self.factor * reference

    def accept(self, loss: float) -> None:
        """The update of a step with this loss was applied: it joins the reference."""
        if self.first is None:
            self.first = float(loss)
        self.recent.append(float(loss))

    def state(self) -> dict[str, Any]:
        """What a checkpoint's ``trainer_state.json`` keeps (JSON floats round-trip exactly)."""
        return {} if self.first is None else {"loss_reference": {"first": self.first, "recent": list(self.recent)}}

    def resume(self, trainer_state: Mapping[str, Any]) -> None:
        """Continue the reference of a checkpoint (absent in checkpoints of earlier versions: it starts afresh). A
        smaller ``spike_window`` than the checkpoint's keeps its newest losses."""
        saved = trainer_state.get("loss_reference")
        if not isinstance(saved, Mapping) or saved.get("first") is None:
            return
        self.first = float(saved["first"])
        self.recent.clear()
        self.recent.extend(float(x) for x in saved.get("recent", []))


def spike_message(step: int, since: int, loss: float, reference: float, factor: float, window: int,
                  checkpoints: list[tuple[int, Path]], row: str) -> str:
    """The error of a run stopped by a loss spike at ``step``: the loss, the reference and the rule, which
    checkpoint to go back to, and what to try.

    ``since``: the last step whose update was applied; the weights after it gave the loss (skipped steps leave
    them as they are), so a checkpoint of that step or later holds them and the newest one before is named.
    ``checkpoints``: ``(step, path)`` of the run's complete checkpoints, oldest first. ``row``: what the
    ``nonfinite_limit`` adds (empty with ``nonfinite: stop``).
    """
    what = (f"step {step}: the loss {loss:.4g} is {loss / reference:.3g} times the reference {reference:.4g} (the "
            f"largest loss of the first step and the last {window} applied steps; train.spike_factor {factor:g}): "
            "a loss spike")
    earlier = [path for saved, path in checkpoints if saved < since]
    if not checkpoints:
        kept = "there is no checkpoint yet"
    elif len(earlier) == len(checkpoints):
        kept = f"the last checkpoint, {checkpoints[-1][1]}, was saved before the loss rose"
    elif not earlier:
        kept = f"every checkpoint holds the weights that gave this loss (unchanged since the update of step {since})"
    else:
        kept = (f"the checkpoints of step {since} and later hold the weights that gave this loss; the newest one "
                f"before is {earlier[-1]} (delete the newer ones to resume from it)")
    return (f"{what}{row}; nothing was saved from it; {kept}; try a lower train.lr or more train.warmup_steps, "
            "train.grad_clip (e.g. 1.0), resume with train.nonfinite=skip to drop such steps, or raise "
            "train.spike_factor (0 turns the check off)")
