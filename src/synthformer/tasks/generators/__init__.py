"""The built-in data generators (no files, no network), one module each; importing registers them."""

# isort: off
from .pystdlib import PyStdlibGenerator, load_pystdlib, stdlib_source_files
from .listops import ListOpsGenerator
from .algorithmic import AlgorithmicGenerator
from .matching import MatchingGenerator
from .recall import RecallGenerator
from .pathfinder import PathfinderGenerator

# isort: on

__all__ = [
    "AlgorithmicGenerator",
    "ListOpsGenerator",
    "MatchingGenerator",
    "PathfinderGenerator",
    "PyStdlibGenerator",
    "RecallGenerator",
    "load_pystdlib",
    "stdlib_source_files",
]
