"""Long Range Arena (docs/lra.md): ListOps (:mod:`.listops`, the generator ``listops`` in
:mod:`.listops_generator`), Text (the ``classification`` type on bytes), Retrieval (the task type ``retrieval``,
:mod:`.retrieval`, on :mod:`.matching`'s TSV files), Image (CIFAR-10, :mod:`.cifar10`) and Pathfinder / Path-X
(:mod:`.pathfinder`, the generator ``pathfinder``). Importing registers the task type and the generators, and adds
the file formats ``listops_tsv`` and ``cifar10`` to the ``classification`` type.
"""

from ...types.classification import Classification
from .cifar10 import read_cifar10, read_cifar10_batch
from .listops import (
    ListOpsExample,
    evaluate_source,
    generate_listops,
    listops_tokenizer,
    read_listops_tsv,
    tokenize_source,
    write_listops_splits,
    write_listops_tsv,
)
from .listops_generator import ListOpsGenerator
from .matching import MatchingExample, PairClassificationDataset, read_matching_tsv
from .pathfinder import PATHFINDER_SPECS, generate_pathfinder
from .pathfinder_generator import PathfinderGenerator
from .retrieval import Retrieval

__all__ = ["PATHFINDER_SPECS", "ListOpsExample", "ListOpsGenerator", "MatchingExample", "PairClassificationDataset",
           "PathfinderGenerator", "Retrieval", "evaluate_source", "generate_listops", "generate_pathfinder",
           "listops_tokenizer", "read_cifar10", "read_cifar10_batch", "read_listops_examples", "read_listops_tsv",
           "read_matching_tsv", "tokenize_source", "write_listops_splits", "write_listops_tsv"]


def read_listops_examples(path: str) -> list[tuple[str, str]]:
    """LRA's ListOps TSV as (text, label) records for the classifier."""
    # LRA's input pipeline drops the parentheses (they only mark where a number ends): without this the sequences
    # are 3x longer and 81% of the shared sample's examples exceed max_len 2000
    return [(" ".join(tokenize_source(ex.source)), str(ex.target)) for ex in read_listops_tsv(path)]


Classification.add_format("listops_tsv", read_listops_examples)
# CIFAR-10's python batches as LRA's Image task sees them (a batch file, or a cifar-10-batches-py folder's five
# training batches): 1024 gray pixels per image, one byte each, which only the byte tokenizer reads as pixels
Classification.add_format("cifar10", read_cifar10, tokenizer="byte")
