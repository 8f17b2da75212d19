"""Hooks into the training loop: a :class:`TrainerCallback` is told of each step, evaluation and checkpoint.

Subclass it and override the hooks you need (each does nothing here); register it with ``Trainer(...,
callbacks=[cb])`` or ``trainer.add_callback(cb)``::

    class PrintEvals(TrainerCallback):
        def on_evaluate(self, trainer, metrics):
            logger.info("step %d: %s", trainer.step, metrics)

A callback watches; it does not replace the trainer's methods (nothing in the package assigns to a Trainer's
methods: ``tests/test_layering_patching.py``). A file it keeps in the run directory goes through the run
(``trainer.run.write_extra(...)``, :class:`~synthformer.train.run.ExtraFiles`).

When each hook fires, for every callback in the order they were registered:

* every hook is called on every process (evaluation and checkpoints are collectives); a callback that writes
  checks ``trainer.is_main`` or writes through the run, which writes on the main process only;
* ``trainer.step`` is the number of optimizer steps done (the step just completed, counted from 1);
* a hook that raises stops the trainer there, as an exception of the trainer's own would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["TrainerCallback", "checked_callback", "fire"]

#: The :class:`~synthformer.train.Trainer` a hook is called with (not imported: the trainer imports this module).
Trainer = Any


class TrainerCallback:
    """Hooks called by a :class:`~synthformer.train.Trainer` (see the module docstring for when and where)."""

    def on_step(self, trainer: Trainer) -> None:
        """After each optimizer step of :meth:`Trainer.train` (a non-finite step that was skipped counts), once its
        train metrics are logged (when ``log_every`` says so) and before its evaluation and checkpoint."""

    def on_evaluate_start(self, trainer: Trainer) -> None:
        """When :meth:`Trainer.evaluate` begins (the periodic evaluation, the last one, or a call of your own)."""

    def on_evaluate(self, trainer: Trainer, metrics: Mapping[str, Any]) -> None:
        """When :meth:`Trainer.evaluate` has recorded its ``metrics`` (what it returns, as logged: ``eval_loss``
        with eval data, ``eval_<name>`` for each metric of ``eval_fn``). Not called when the evaluation raised."""

    def on_save_start(self, trainer: Trainer) -> None:
        """When :meth:`Trainer.save` begins checkpointing ``trainer.step`` (periodic, a new best, the last step, a
        stop request, or a call of your own)."""

    def on_save(self, trainer: Trainer, path: Path | None) -> None:
        """When :meth:`Trainer.save` has written the checkpoint: its ``path`` on the main process, None on the
        others. Not called when the save raised, nor for the best-effort save of the last completed step after an
        exception cut the loop short (the exception goes on to the caller)."""


def checked_callback(callback: Any) -> TrainerCallback:
    """``callback``, which must be a :class:`TrainerCallback`.

    Raises:
        TypeError: it is not one (naming its type).
    """
    if not isinstance(callback, TrainerCallback):
        raise TypeError(f"expected a TrainerCallback as a Trainer's callback (subclass it and override its on_* "
                        f"hooks), got {type(callback).__name__}: {callback!r:.60}")
    return callback


def fire(callbacks: Iterable[TrainerCallback], hook: str, trainer: Trainer, *args: Any) -> None:
    """Call ``hook`` (``"on_step"``, ``"on_evaluate"``, ...) of each callback, in order, with the trainer and
    ``args``."""
    for callback in callbacks:
        getattr(callback, hook)(trainer, *args)
