"""The built-in task types, one module each; importing this package registers them (in this order)."""

# isort: off
from .lm import LanguageModeling
from .seq2seq import SequenceToSequence
from .classification import Classification
from .span_corruption import SpanCorruption
from .text_to_text import TextToText
from .summarization import Summarization
from .dialogue import DialogueGeneration
from .retrieval import Retrieval

# isort: on

__all__ = ["Classification", "DialogueGeneration", "LanguageModeling", "Retrieval", "SequenceToSequence",
           "SpanCorruption", "Summarization", "TextToText"]
