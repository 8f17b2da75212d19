"""The speed room of benchmarks/: timing scripts and what they record (see benchmarks/README.md)."""
