"""Persona dialogue (the paper's Table 3, PersonaChat): the readers of PersonaChat's ParlAI text and
DailyDialog-style files (:mod:`.reader`), the datasets with speaker separators (:mod:`.dataset`), the task type
``dialogue`` (:mod:`.task_type`, with its prepared corpus in :mod:`.prepared`) and nlg-eval's metrics
(:mod:`.metrics`, with the most-frequent-reply baseline). Importing registers the task type."""

from .dataset import SPEAKER_TOKENS, DialogueDataset, encode_source
from .metrics import DIALOGUE_METRICS, dialogue_scores, frequent_reply_scores
from .reader import DIALOGUE_FORMATS, Dialogue, Exchange, dialogue_exchanges, read_dialogues
from .task_type import DialogueGeneration

__all__ = ["DIALOGUE_FORMATS", "DIALOGUE_METRICS", "SPEAKER_TOKENS", "Dialogue", "DialogueDataset",
           "DialogueGeneration", "Exchange", "dialogue_exchanges", "dialogue_scores", "encode_source",
           "frequent_reply_scores", "read_dialogues"]
