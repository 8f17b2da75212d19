"""Abstractive summarization (the paper's Table 3, CNN/DailyMail): the task type ``summarization``
(:mod:`.task_type`, the ``seq2seq`` type with named field layouts) and its ROUGE (:mod:`.metrics`, with the
lead-3 baseline). Importing registers the task type."""

from .metrics import ROUGE_TYPES, lead_scores, lead_summaries, rouge_scores, split_sentences
from .task_type import FIELD_LAYOUTS, Summarization

__all__ = ["FIELD_LAYOUTS", "ROUGE_TYPES", "Summarization", "lead_scores", "lead_summaries", "rouge_scores",
           "split_sentences"]
