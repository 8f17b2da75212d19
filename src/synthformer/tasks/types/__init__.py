"""The generic task types, one module each; importing this package registers them (in this order). The task types
of one benchmark (``text_to_text``, ``summarization``, ``dialogue``, ``retrieval``) live in its suite
(``tasks/suites``)."""

# isort: off
from .lm import LanguageModeling
from .seq2seq import SequenceToSequence
from .classification import Classification
from .span_corruption import SpanCorruption

# isort: on

__all__ = ["Classification", "LanguageModeling", "SequenceToSequence", "SpanCorruption"]
