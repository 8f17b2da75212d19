"""What each checkpoint's weights computed, which checkpoints are good to go back to after a stop, and which
rotation keeps whatever ``train.keep_best`` says.

* The weights saved at step ``s`` give the loss of the next applied step, and the steps up to the next save move on
  from them: the median loss of those steps is the checkpoint's **training loss** (a median, so one odd batch does
  not decide); its **validation loss** is the one measured at step ``s`` where the run evaluated there. The record
  of the run's checkpoints (``checkpoint_losses`` in each checkpoint's ``trainer_state.json``, keyed by checkpoint
  name) travels with the run, so a resumed run judges as the uninterrupted one, and judging needs no weights
  loaded.
* A checkpoint is **good** when what its weights computed is finite and in range (:mod:`.divergence`): after a stop at
  step ``n`` whose last applied update was step ``since``, the checkpoints of ``since`` and later hold the weights
  that gave the bad loss, so only earlier ones can be good; of those, one whose recorded training or validation
  loss is not finite or out of range is not. A stop names the best good one (the lowest validation loss where some
  have one, else the lowest training loss), or says there is none.
* **Rotation never deletes the best once the run gets worse** (:func:`guarded`): the checkpoint with the lowest
  validation loss, once the latest validation loss is above it, and the one with the lowest training loss, once
  the run's latest level is :data:`GUARD_MARGIN` times it, are kept besides the newest ``train.max_checkpoints``
  (at most two more). A run that does not get worse keeps what rotation always kept.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .checkpoint import checkpoint_name
from .divergence import DivergenceWatch

__all__ = ["GUARD_MARGIN", "RECORD_KEY", "CheckpointLosses", "GoodCheckpoint", "go_back_to", "good_checkpoints",
           "guarded", "losses_of"]

#: The key of a checkpoint's ``trainer_state.json`` that holds the record.
RECORD_KEY = "checkpoint_losses"
#: Rotation keeps the checkpoint of the lowest training loss once the run's latest level is this many times it: the
#: medians of two intervals of a run on a plateau differ by far less, so a run that does not diverge keeps no more.
GUARD_MARGIN = 1.5


class CheckpointLosses:
    """The record: per checkpoint name, ``train`` (the median loss of the applied steps from it to the next save)
    and ``eval`` (its validation loss), each where known; and the run's latest levels, which rotation compares with
    (``latest``: the median of the last finished interval between saves, and the last validation loss)."""

    def __init__(self) -> None:
        self.by_name: dict[str, dict[str, float]] = {}
        self.latest: dict[str, float] = {}
        self.interval: list[float] = []  # the applied losses since the last save
        self.pending: str | None = None  # the checkpoint those losses belong to
        self.eval_at: tuple[int, float] | None = None  # the last validation loss and its step

    def applied(self, loss: float) -> None:
        """An applied step's loss (the weights of the checkpoint saved last, or of the steps after it, gave it)."""
        if len(self.interval) < MAX_INTERVAL:
            self.interval.append(float(loss))

    def evaluated(self, step: int, loss: float) -> None:
        """The validation loss of step ``step``'s weights (its checkpoint's, if one is saved at it)."""
        self.eval_at = (step, float(loss))
        self.latest["eval"] = float(loss)

    def before_save(self, step: int) -> None:
        """A checkpoint of ``step`` is about to be written (every process): the interval since the last save is
        over, its median is the last checkpoint's training loss and the run's latest level."""
        if self.interval:
            level = statistics.median(self.interval)
            self.latest["train"] = level
            if self.pending is not None:
                self.by_name.setdefault(self.pending, {})["train"] = level
        self.interval = []
        if self.eval_at is not None and self.eval_at[0] == step:
            self.by_name.setdefault(checkpoint_name(step), {})["eval"] = self.eval_at[1]

    def judged(self) -> dict[str, dict[str, float]]:
        """The entries to judge checkpoints by now: the record, with the last checkpoint's training loss from the
        steps since it (the interval is not over yet)."""
        out = {k: dict(v) for k, v in self.by_name.items()}
        if self.pending is not None and self.interval:
            out.setdefault(self.pending, {})["train"] = statistics.median(self.interval)
        return out

    def for_save(self, step: int, existing: Iterable[str]) -> dict[str, Any]:
        """What the checkpoint of ``step`` carries: the entries of the ``existing`` checkpoints and its own, and the
        latest levels (main process)."""
        keep = set(existing) | {checkpoint_name(step)}
        self.by_name = {k: v for k, v in self.by_name.items() if k in keep}
        checkpoints = {k: dict(v) for k, v in sorted(self.by_name.items())}
        return {RECORD_KEY: {"checkpoints": checkpoints, "latest": dict(self.latest)}}

    def saved(self, step: int) -> None:
        """The checkpoint of ``step`` is written: the steps that follow give its training loss."""
        self.pending = checkpoint_name(step)

    def resume(self, trainer_state: Mapping[str, Any]) -> None:
        """Continue the record of the checkpoint a run resumes from (absent before this record existed)."""
        saved = trainer_state.get(RECORD_KEY)
        saved = saved if isinstance(saved, Mapping) else {}
        self.by_name = {name: losses_of(entry) for name, entry in _mapping(saved.get("checkpoints")).items()}
        self.latest = losses_of(saved.get("latest"))
        step = trainer_state.get("step")
        self.pending = checkpoint_name(step) if isinstance(step, int) else None


#: At most this many losses of an interval between saves count for its median (a run that saves rarely).
MAX_INTERVAL = 10_000


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def losses_of(entry: Any) -> dict[str, float]:
    """The finite ``train`` and ``eval`` numbers of a record entry (anything else counts for nothing)."""
    out = {}
    for key in ("train", "eval"):
        value = _mapping(entry).get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[key] = float(value)
    return out


@dataclass(frozen=True)
class GoodCheckpoint:
    """A good checkpoint and what its weights computed (None: not known)."""

    step: int
    path: Path
    train: float | None
    eval: float | None


def good_checkpoints(checkpoints: Sequence[tuple[int, Path]], record: Mapping[str, Mapping[str, float]],
                     since: int, watch: DivergenceWatch) -> list[GoodCheckpoint]:
    """The good checkpoints (see the module) among ``(step, path)``, oldest first; ``since``: the last step whose
    update was applied."""
    good = []
    for step, path in sorted(checkpoints, key=lambda c: c[0]):
        losses = record.get(checkpoint_name(step), {})
        train, eval_loss = losses.get("train"), losses.get("eval")
        if step >= since or any(v is not None and not watch.in_range(v) for v in (train, eval_loss)):
            continue
        good.append(GoodCheckpoint(step, path, train, eval_loss))
    return good


def _best(good: Sequence[GoodCheckpoint]) -> GoodCheckpoint:
    """The lowest validation loss where some have one, else the lowest training loss (the newest on a tie; one
    without a record, from an earlier version, only when no other is known)."""
    for key in ("eval", "train"):
        known = [c for c in reversed(good) if getattr(c, key) is not None and math.isfinite(getattr(c, key))]
        if known:
            return min(known, key=lambda c: getattr(c, key))
    return good[-1]


def go_back_to(good: Sequence[GoodCheckpoint], newest: Path | None, run: Path) -> str:
    """The clause of a stop's error that names the checkpoint to go back to (``newest``: the run's latest)."""
    if not good:
        if newest is None:
            return "there is no checkpoint yet"
        return (f"no checkpoint is good: {newest.name} and any older one hold weights whose loss was not finite or "
                "out of range; start the run again (--overwrite)")
    best = _best(good)
    what = (f" (validation loss {best.eval:.4g})" if best.eval is not None else
            f" (training loss {best.train:.4g})" if best.train is not None else "")
    if newest is not None and best.path.name == newest.name:
        return f"the last good checkpoint is {best.path}{what}"
    return (f"the checkpoint to go back to is {best.path}{what}; the newer ones hold weights that gave a bad loss, "
            "so --resume would continue from those: move them aside first, or start a new run from it with "
            f"init_from={run}@{best.step}")


def guarded(record: Mapping[str, Any]) -> set[str]:
    """The checkpoints rotation keeps whatever ``train.keep_best`` says, from the newest checkpoint's record
    (``checkpoint_losses``): the one with the lowest validation loss once the latest validation loss is above it,
    and the one with the lowest training loss once the latest level is :data:`GUARD_MARGIN` times it (the newest on
    a tie). While the run does not get worse than its best checkpoint, none: rotation keeps what it always kept."""
    entries = {str(name): losses_of(entry) for name, entry in _mapping(_mapping(record).get("checkpoints")).items()}
    latest = losses_of(_mapping(record).get("latest"))
    kept = set()
    for key, margin in (("eval", 1.0), ("train", GUARD_MARGIN)):
        found = [(losses[key], name) for name, losses in entries.items() if key in losses]
        if not found or key not in latest:
            continue
        best = min(v for v, _ in found)
        if latest[key] > margin * best:
            kept.add(max(name for v, name in found if v == best))  # names sort like steps: the newest
    return kept
