"""Metrics of the task types: likelihood (loss, perplexity), GLUE (:mod:`.glue`), summaries (:mod:`.summary`:
ROUGE with sentence splitting) and dialogue (:mod:`.dialogue`: the PersonaChat set). Import the module you need;
this package imports nothing, so that no task type loads another's dependencies."""
