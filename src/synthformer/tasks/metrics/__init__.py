"""Metrics shared by the task types: likelihood (loss, perplexity: :mod:`.likelihood`), the units they report
(:mod:`.units`), corpus text metrics (BLEU, chrF, ROUGE: :mod:`.text`) and the trivial baselines
(:mod:`.baselines`); a benchmark's own metrics (GLUE, the ROUGE set of summaries, the dialogue set) live in its
suite (``tasks/suites``). Import the module you need; this package imports nothing, so that no task type loads
another's dependencies."""
