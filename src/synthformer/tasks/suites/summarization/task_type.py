"""Task type ``summarization``: abstractive summarization with an encoder-decoder, scored by ROUGE (the paper's
Table 3, CNN/DailyMail).

It is the ``seq2seq`` type (its readers, datasets, model and decoding) with summarization's data conventions and
metrics:

* Data: ``jsonl`` / ``csv`` / ``tsv`` files or a Hugging Face data set, documents in ``task.source_field`` and
  summaries in ``task.target_field``, or a named field layout in ``task.options.fields``: ``cnn_dailymail``
  (``article`` / ``highlights``), ``xsum`` (``document`` / ``summary``), ``samsum`` and ``dialogsum``
  (``dialogue`` / ``summary``, their Hugging Face layouts). The copies in ``shared/data`` use ``document`` /
  ``summary`` for SAMSum and DialogSum, and the CNN/DailyMail sample is a CSV with ``article`` / ``highlights``.
* Lengths: documents longer than ``task.max_len`` tokens and summaries longer than ``task.max_target_len`` are
  truncated (``task.overflow``); the dataset logs how many, and every evaluation reports
  ``truncated_examples`` and ``truncated_percent`` of the split.
* Metrics: ``loss`` / ``perplexity`` (teacher forcing) and ``rouge``: ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum F1
  (``rouge1`` .. ``rougeLsum``, 0-100) through ``rouge-score`` with its stemmer, sentences split one per line for
  ROUGE-Lsum (:mod:`.metrics`).
* Decoding: beam search with the GNMT length penalty (``eval.beam``, ``eval.length_penalty``), at most
  ``eval.max_decode_len`` and at least ``eval.min_length`` tokens, and ``eval.no_repeat_ngram_size`` blocking;
  during training ``eval.train_decode_examples`` validation examples are decoded greedily.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from torch import nn

from synthformer.common import ConfigError

from ...prepared.preparation import Preparation
from ...registry import register_task_type
from ...types.seq2seq import SequenceToSequence
from ...types.seq2seq_decoding import evaluate_decoded
from .metrics import rouge_scores

if TYPE_CHECKING:
    from synthformer.train import EvalShard

    from ...contract import RawData, TaskData
    from ...run.config import RunConfig
    from ...run.task_config import TaskConfig

__all__ = ["FIELD_LAYOUTS", "Summarization"]

#: ``task.options.fields`` -> (document field, summary field).
FIELD_LAYOUTS: dict[str, tuple[str, str]] = {
    "cnn_dailymail": ("article", "highlights"),
    "xsum": ("document", "summary"),
    "samsum": ("dialogue", "summary"),
    "dialogsum": ("dialogue", "summary"),
}
_DEFAULT_FIELDS = ("source", "target")  # TaskConfig's defaults


def _fields(task: TaskConfig) -> tuple[str, str]:
    layout = task.task_options["fields"]
    given = (task.source_field, task.target_field)
    if layout is None:
        return given
    if layout not in FIELD_LAYOUTS:
        raise ConfigError(f"task.options.fields: expected one of {', '.join(FIELD_LAYOUTS)} (or null), got {layout!r}")
    if given != _DEFAULT_FIELDS and given != FIELD_LAYOUTS[layout]:
        raise ConfigError(f"task.options.fields: {layout!r} means fields {FIELD_LAYOUTS[layout]}, but "
                          f"source_field/target_field say {given}; set one or the other")
    return FIELD_LAYOUTS[layout]


@register_task_type
class Summarization(SequenceToSequence):
    """``task.type: summarization`` (see the module docstring)."""

    name = "summarization"
    metrics = ("loss", "perplexity", "rouge")
    formats = ("jsonl", "csv", "tsv")
    suffix_formats = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "tsv"}
    option_defaults = {"fields": None}

    def check_config(self, task: TaskConfig) -> None:
        _fields(task)

    def default_metrics(self, task: TaskConfig) -> list[str]:
        return ["loss", "rouge"]

    def preparation(self) -> Preparation:
        # the records' fields are those of the layout task.options.fields names, as read() takes them
        return dataclasses.replace(super().preparation(), fields=_fields)

    def read(self, task: TaskConfig) -> RawData:
        source, target = _fields(task)
        return super().read(dataclasses.replace(task, source_field=source, target_field=target))

    def evaluate(self, run: RunConfig, data: TaskData, model: nn.Module, split: str, names: list[str], *,
                 batch_size: int, max_batches: int, beam: int | None,
                 max_examples: int | None, shard: EvalShard | None = None) -> tuple[dict[str, Any], list[str]]:
        pairs, dataset = data.raw.splits[split], data.datasets[split]
        return evaluate_decoded(run, data, model, split, names,
                                references=lambda: [pairs[i][1] for i in dataset.indices],  # skipped ones excluded
                                score=rouge_scores, decode="rouge" in names, batch_size=batch_size,
                                max_batches=max_batches, beam=beam, max_examples=max_examples, shard=shard)

    def comparison_metric(self, task: TaskConfig) -> str:
        return "rougeL"
