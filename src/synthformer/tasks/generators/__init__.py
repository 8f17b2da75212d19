"""The generic data generators (no files, no network); importing registers them. ``pystdlib`` (the Python standard
library's sources, the default corpus of ``lm`` and ``span_corruption``) is the one left here: a benchmark's own
generators (ListOps, Pathfinder, the probes) live in its suite (``tasks/suites``)."""

from .pystdlib import PyStdlibGenerator, load_pystdlib, stdlib_source_files

__all__ = ["PyStdlibGenerator", "load_pystdlib", "stdlib_source_files"]
