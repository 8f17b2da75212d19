"""The built-in task types, one module each; importing this package registers them (in this order)."""

# isort: off
from .lm import LanguageModeling
from .seq2seq import SequenceToSequence
from .classification import Classification

# isort: on

__all__ = ["Classification", "LanguageModeling", "SequenceToSequence"]
