"""``synthformer eval``'s progress: the batches scored so far, as a bar on a terminal or, off one, a line a minute at
most (as ``train``'s heartbeat), and which of eval's options apply to a run's task.

The evaluation loops belong to each task type (:meth:`~synthformer.tasks.contract.TaskType.evaluate`) and take no
callback, so the batches are counted from outside, with torch's global module hooks while the evaluation runs: a
batch is a call of a whole model (a teacher-forced or classification batch) or of an encoder stack outside one
(a batch of sources about to be decoded, ``model.encode``). The decoding steps that follow are not counted: the
count is batches, not forward passes. No total is known from outside (it depends on each task type's sample), so
the bar counts up with its rate and elapsed time, without a percentage.
"""

from __future__ import annotations

import logging
import time
from types import TracebackType
from typing import Any

__all__ = ["DECODING_OPTIONS", "HEARTBEAT_S", "EvalProgress", "misapplied_options"]

logger = logging.getLogger(__name__)

#: Seconds between two progress lines off a terminal (train's heartbeat default).
HEARTBEAT_S = 60.0

#: eval's options (``argparse`` destinations) that only a task which decodes its outputs uses: the tasks of
#: encoder-decoder models. The others (--split, --batch-size, --checkpoint) apply to every task.
DECODING_OPTIONS: tuple[str, ...] = ("beam", "length_penalty", "min_length", "max_length", "no_repeat_ngram_size",
                                     "max_examples")


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def misapplied_options(given: dict[str, Any], task_type: str, arch: str, encoder_decoder: bool,
                       decoding_types: list[str]) -> str | None:
    """The refusal of the decoding options in ``given`` (destination -> value, None: not given) that a task of
    ``task_type`` (its model's ``arch``, ``encoder_decoder`` or not) does not use, or None when they all apply."""
    wrong = [f"--{name.replace('_', '-')}" for name in DECODING_OPTIONS if given.get(name) is not None]
    if encoder_decoder or not wrong:
        return None
    named = " and ".join(wrong) if len(wrong) <= 2 else ", ".join(wrong[:-1]) + f" and {wrong[-1]}"
    verb = "applies" if len(wrong) == 1 else "apply"
    return (f"{named} {verb} to the tasks of encoder-decoder models, whose evaluation can decode "
            f"({', '.join(decoding_types)}); this run is a {task_type} task ({arch} model): its options are --split, "
            "--batch-size and --checkpoint")


class EvalProgress:
    """Counts the batches an evaluation scores while it is entered (see the module docstring).

    Args:
        label: what is scored, for the lines (``runs/x (test)``).
        bar: a tqdm bar on stderr (a terminal); else a line at most every ``HEARTBEAT_S`` seconds.
    """

    def __init__(self, label: str, *, bar: bool) -> None:
        self.label = label
        self.bar_on = bar
        self.batches = 0
        self._depth = 0
        self._handles: list[Any] = []
        self._bar: Any = None
        self._start = self._last = time.perf_counter()

    def __enter__(self) -> EvalProgress:
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
        from tqdm.auto import tqdm

        from synthformer.models import Encoder, Seq2SeqTransformer, TransformerClassifier, TransformerLM

        self._counted = (TransformerLM, TransformerClassifier, Seq2SeqTransformer, Encoder)
        self._bar = tqdm(desc="eval", unit="batch", dynamic_ncols=True, disable=not self.bar_on, leave=False)
        self._start = self._last = time.perf_counter()
        self._handles = [register_module_forward_pre_hook(self._before),
                         register_module_forward_hook(self._after, always_call=True)]
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        if self._bar is not None:
            self._bar.close()

    def _before(self, module: Any, args: Any) -> None:
        # only the outermost call counts: a model's encoder inside its forward is the same batch
        if self._depth == 0 and isinstance(module, self._counted):
            self.batches += 1
            self._bar.update(1)
            self._heartbeat()
        self._depth += 1

    def _after(self, module: Any, args: Any, output: Any) -> None:
        self._depth = max(self._depth - 1, 0)

    def _heartbeat(self) -> None:
        now = time.perf_counter()
        if self.bar_on or now - self._last < HEARTBEAT_S:
            return
        self._last = now
        elapsed = now - self._start
        logger.info("eval %s: %s batches scored, elapsed %s (%.1f batches/s)", self.label, f"{self.batches:,}",
                    _duration(elapsed), self.batches / max(elapsed, 1e-9))
