"""Probes: small generated tasks that each test one ability of a token mixer, with no file to read.
``algorithmic:<copy|reverse|sort|add>`` (digit-string transduction for encoder-decoders, :mod:`.algorithmic` and
:mod:`.algorithmic_generator`), ``matching:<pair|control>`` (comparing the tokens of two segments, :mod:`.matching`)
and ``mqar:<recall|control>`` (multi-query associative recall, :mod:`.recall`); the last two share :mod:`.common`.
Each probe's control draws the same inputs with a label no token comparison is needed for. Importing registers the
generators."""

from .algorithmic import ALGORITHMIC_TASKS, algorithmic_tokenizer, generate_algorithmic, solve_algorithmic
from .algorithmic_generator import AlgorithmicGenerator
from .matching import MatchingGenerator
from .recall import RecallGenerator

__all__ = ["ALGORITHMIC_TASKS", "AlgorithmicGenerator", "MatchingGenerator", "RecallGenerator",
           "algorithmic_tokenizer", "generate_algorithmic", "solve_algorithmic"]
