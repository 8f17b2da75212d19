"""The studies room of benchmarks/: experiment drivers whose rows are the results tables (see benchmarks/README.md)."""
