"""Metrics shared by the task types: likelihood (loss, perplexity) and the trivial baselines (:mod:`.baselines`); a
benchmark's own metrics (GLUE, ROUGE, the dialogue set) live in its suite (``tasks/suites``). Import the module you
need; this package imports nothing, so that no task type loads another's dependencies."""
