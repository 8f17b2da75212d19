"""``generator: listops``: Long Range Arena's ListOps (10 classes), generated at CPU-sized lengths by default, at
LRA's (96k / 2k / 2k examples of 500-2000 tokens, ``configs/lra_listops.yaml``) with its options.

LRA's sizes take about 10 ms per example to draw (16 minutes for the 100k), and every process that reads the
data (training, ``eval``, a resumed run) would draw them again: with ``cache_dir`` the splits are written once,
in LRA's file format, to a folder named by a hash of the options, and read back from there afterwards.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...contract import Generator, RawData
from ...registry import register_generator
from .listops import generate_listops, listops_tokenizer, read_listops_tsv, write_listops_tsv

if TYPE_CHECKING:
    from synthformer.data import Tokenizer

    from ...run.task_config import TaskConfig

__all__ = ["ListOpsGenerator"]

#: Our split names -> LRA's file names (``basic_train.tsv``, ``basic_val.tsv``, ``basic_test.tsv``).
_FILE_SPLITS = {"train": "train", "valid": "val", "test": "test"}


@register_generator
class ListOpsGenerator(Generator):
    """Options: ``num_train``, ``num_valid``, ``num_test``, ``seed`` (split k uses ``seed + k``),
    :func:`.listops.generate_listops`'s ``min_length``, ``max_length``, ``max_depth``, ``max_args``, and
    ``cache_dir`` (see the module docstring; ``None``: generate in memory every time). The vocabulary is fixed
    (:func:`.listops.listops_tokenizer`) and the classes are always 0-9."""

    name = "listops"
    task_type = "classification"
    # sized so a small model learns something in minutes on a CPU
    option_defaults: dict[str, Any] = dict(num_train=10000, num_valid=500, num_test=500, seed=0, min_length=10,
                                           max_length=100, max_depth=4, max_args=5, cache_dir=None)
    fixed_vocabulary = True
    tokenizer_kind = "fixed"

    def load(self, task: TaskConfig) -> RawData:
        opts = self.options(task)
        sizes = {"train": opts.pop("num_train"), "valid": opts.pop("num_valid"), "test": opts.pop("num_test")}
        seed = opts.pop("seed")
        cache = opts.pop("cache_dir")
        folder = None if cache is None else _cache_folder(Path(cache), sizes, seed, opts)
        splits = {}
        for offset, (name, n) in enumerate(sizes.items()):
            if n:
                examples = (_cached(folder, name, n, seed + offset, opts) if folder is not None
                            else generate_listops(n, seed=seed + offset, **opts))
                splits[name] = [(ex.source, str(ex.target)) for ex in examples]
        # every value 0-9, even if a small sample misses one
        return RawData("classification", splits, label_set=[str(d) for d in range(10)])

    def tokenizer(self) -> Tokenizer:
        return listops_tokenizer()


def _cache_folder(root: Path, sizes: dict[str, int], seed: int, options: dict[str, Any]) -> Path:
    """The folder of one set of options: ``root/listops-<hash of sizes, seed and options>``."""
    key = json.dumps({"sizes": sizes, "seed": seed, "options": options}, sort_keys=True)
    return root / f"listops-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def _cached(folder: Path, split: str, n: int, seed: int, options: dict[str, Any]) -> list[Any]:
    """One split read from ``folder``, or generated and written there first (atomically: a killed write leaves no
    file that a later run would trust)."""
    path = folder / f"basic_{_FILE_SPLITS[split]}.tsv"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        examples = generate_listops(n, seed=seed, **options)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        os.close(fd)
        try:
            write_listops_tsv(examples, tmp)
            os.replace(tmp, path)
        finally:
            Path(tmp).unlink(missing_ok=True)
        return examples
    return read_listops_tsv(path)
