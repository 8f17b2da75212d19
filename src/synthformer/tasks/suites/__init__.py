"""The benchmark suites, one package each, holding everything of its benchmark: readers, generators, task types
and metrics (docs/extending.md, "A task suite"). Importing this package imports every suite, which registers its
task types and generators; the rest of synthformer reaches a suite only through the registry, by name.

``glue`` (GLUE and SuperGLUE as text to text), ``summarization``, ``dialogue``, ``lra`` (Long Range Arena) and
``probes`` (algorithmic, matching and associative-recall generators) and ``mixing`` (the token-mixing benchmarks:
MQAR and the MAD tasks). What stays outside them is generic: the
tokenizers, batching and file formats of ``synthformer.data``, and the task types ``lm``, ``seq2seq``,
``classification`` and ``span_corruption`` of ``tasks/types``, which the suites build on.
"""

# isort: off
# The import order is the registration order: list_task_types() ends text_to_text, summarization, dialogue, retrieval,
# token_mixing.
from . import glue, summarization, dialogue, lra, probes, mixing  # noqa: F401

# isort: on
