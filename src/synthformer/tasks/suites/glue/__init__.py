"""GLUE and SuperGLUE, T5-style: every task as text to text, one encoder-decoder finetuned on their mixture (the
paper's Tables 5 and 6; docs/text_to_text.md).

:mod:`.table` (each task's fields, prefix, label words and metrics), :mod:`.reader` and :mod:`.superglue` (the
official files and the Hugging Face copies; SuperGLUE's nested records), :mod:`.metrics` and
:mod:`.superglue_metrics` (the official scoring), :mod:`.text_to_text` (the task type ``text_to_text``) and
:mod:`.text_to_text_prepared` (its prepared corpus). Importing registers the task type.
"""

from .metrics import TaskScore, glue_average, score_predictions
from .reader import glue_split_path, load_hf_glue, read_glue_split
from .table import GLUE_TASKS, GlueTask, TextToTextExample, get_glue_task
from .text_to_text import TextToText, majority_scores

__all__ = ["GLUE_TASKS", "GlueTask", "TaskScore", "TextToText", "TextToTextExample", "get_glue_task", "glue_average",
           "glue_split_path", "load_hf_glue", "majority_scores", "read_glue_split", "score_predictions"]
