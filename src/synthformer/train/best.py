"""``train.keep_best``: which way a metric improves, and the record of the best checkpoint.

The best checkpoint is named by ``RUN/checkpoints/best`` (a JSON object: the checkpoint's name, the metric, its
value and direction), written atomically after the checkpoint itself is in place, as ``latest`` is. Rotation
(:func:`~synthformer.train.checkpoint.save_checkpoint`) never deletes what either pointer names.

Directions are inferred from the metric's name, as the Hugging Face Trainer's ``greater_is_better`` is by default
(a name with "loss" is lower-is-better): here losses, perplexities and bits are lower-is-better, and the scores
the task types report (accuracy, BLEU, chrF, ROUGE, F1, correlations, GLUE averages, ...) higher-is-better. A
task-prefixed name (``mnli_accuracy``, ``cola_matthews_corrcoef``) takes its base's direction.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from synthformer.common import ConfigError

__all__ = ["BEST_FILE", "HIGHER", "LOWER", "BestRecord", "improves", "metric_direction", "metric_key",
           "read_best"]

BEST_FILE = "best"

#: Metrics whose smaller values are better.
LOWER: tuple[str, ...] = ("loss", "perplexity", "ppl", "log_perplexity", "bits", "bits_per_character",
                          "bits_per_byte", "bpc")
#: Metrics whose larger values are better (the scores the task types report).
HIGHER: tuple[str, ...] = (
    "accuracy", "bleu", "bleu_1", "bleu_4", "chrf", "rouge1", "rouge2", "rougeL", "rougeLsum", "rouge_l",
    "meteor", "cider", "distinct_1", "distinct_2", "exact_match", "f1", "f1a", "f1_macro", "matthews_corrcoef",
    "mcc", "pearson", "spearman", "glue_average", "superglue_average", "average",
)


def metric_key(metric: str) -> str:
    """The key of ``metric`` in the trainer's evaluation records (``eval_`` prefixed)."""
    return metric if metric.startswith("eval_") else f"eval_{metric}"


def metric_direction(metric: str) -> Literal["min", "max"]:
    """``"min"`` for a lower-is-better metric, ``"max"`` for a higher-is-better one.

    Raises:
        ConfigError: a name that is neither (naming the known ones).
    """
    if not isinstance(metric, str) or not metric.strip():
        raise ConfigError(f"keep_best: expected the name of an evaluation metric, got {metric!r}")
    base = metric[len("eval_"):] if metric.startswith("eval_") else metric
    for names, direction in ((LOWER, "min"), (HIGHER, "max")):
        if any(base == name or base.endswith(f"_{name}") for name in names):
            return direction  # type: ignore[return-value]
    raise ConfigError(f"keep_best: unknown metric {metric!r}; known (lower is better): {', '.join(LOWER)}; "
                      f"(higher is better): {', '.join(HIGHER)}; a task prefix is allowed (mnli_accuracy)")


def improves(value: float, best: float | None, direction: str) -> bool:
    """Whether ``value`` beats ``best`` (None: nothing yet); a non-finite value never does."""
    if not math.isfinite(value):
        return False
    if best is None:
        return True
    return value < best if direction == "min" else value > best


@dataclass(frozen=True)
class BestRecord:
    """What ``checkpoints/best`` holds."""

    checkpoint: str
    metric: str
    value: float
    direction: str
    step: int

    def to_json(self) -> str:
        """The pointer file's text."""
        return json.dumps({"checkpoint": self.checkpoint, "metric": self.metric, "value": self.value,
                           "direction": self.direction, "step": self.step}) + "\n"


def read_best(root: Path) -> BestRecord | None:
    """The record in ``root/best`` (``root``: a run's ``checkpoints`` folder); None if there is none or it is
    damaged (a damaged pointer only loses the knowledge of the best, never a checkpoint)."""
    path = root / BEST_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
        if not isinstance(data, Mapping):
            return None
        return BestRecord(str(data["checkpoint"]), str(data["metric"]), float(data["value"]),
                          str(data["direction"]), int(data["step"]))
    except (ValueError, KeyError, TypeError):
        return None
