"""The doc-tables room of benchmarks/: records turned into the docs' generated tables (see benchmarks/README.md)."""
