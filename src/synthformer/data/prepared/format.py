"""The prepared-corpus format: file names, the manifest's fixed keys, the token dtype, checksums.

A prepared folder (written by ``synthformer prepare``, read by :class:`~synthformer.data.prepared.PreparedCorpus`)::

    DIR/manifest.json                     what is there (see MANIFEST_KEYS); written last, atomically
    DIR/tokenizer.json                    the tokenizer (Tokenizer.save / load_tokenizer)
    DIR/<split>-<k:05d>.<field>.bin       token ids, little-endian, the manifest's dtype, documents back to back
    DIR/<split>-<k:05d>.<field>.idx.npy   int64 offsets into that .bin: documents + 1 entries, the first 0

Layouts: ``"documents"`` (one field, ``text``; every document ends with the tokenizer's ``eos_id``, T5's packing
convention) and ``"pairs"`` (fields ``source`` and ``target``: the plain token ids of each text, no ``<bos>`` /
``<eos>``: the datasets frame them as the in-memory path does; a dialogue source holds its speaker separators).
Nothing here imports the rest of synthformer's data code: the reader and the writer share these helpers.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from synthformer.common import ConfigError
from synthformer.data.errors import DataError

__all__ = [
    "FORMAT",
    "LAYOUTS",
    "MANIFEST",
    "TOKENIZER",
    "VERSION",
    "bin_name",
    "dtype_for",
    "idx_name",
    "read_manifest",
    "sha256_file",
    "shard_name",
]

#: ``manifest["format"]``.
FORMAT = "synthformer-prepared"
#: ``manifest["version"]``: the only version this code reads and writes.
VERSION = 1
MANIFEST = "manifest.json"
TOKENIZER = "tokenizer.json"
#: Layout -> its fields.
LAYOUTS: dict[str, tuple[str, ...]] = {"documents": ("text",), "pairs": ("source", "target")}
_DTYPES = ("uint16", "uint32")
_REQUIRED = ("layout", "fields", "dtype", "tokenizer", "splits")


def dtype_for(vocab_size: int) -> str:
    """The narrowest unsigned dtype that holds every id of a vocabulary of ``vocab_size``."""
    return "uint16" if vocab_size <= 1 << 16 else "uint32"


def shard_name(split: str, index: int) -> str:
    """``train-00000``: the stem of shard ``index`` of ``split``."""
    return f"{split}-{index:05d}"


def bin_name(shard: str, field: str) -> str:
    """The token file of one field of a shard."""
    return f"{shard}.{field}.bin"


def idx_name(shard: str, field: str) -> str:
    """The offsets file of one field of a shard."""
    return f"{shard}.{field}.idx.npy"


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 22) -> str:
    """The hex sha256 of a file, read in chunks (memory does not grow with the file)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def np_dtype(name: str) -> np.dtype:
    """The little-endian numpy dtype of a manifest dtype name."""
    return np.dtype(name).newbyteorder("<")


def read_manifest(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of a prepared folder, its format, version and required keys checked.

    Raises:
        DataError: no folder, no manifest (an unfinished or never-run prepare), not JSON, or keys missing.
        ConfigError: another format or a version this code does not read.
    """
    folder = Path(folder)
    path = folder / MANIFEST
    if not folder.is_dir():
        raise DataError(folder, None, "no such prepared folder; run 'synthformer prepare CONFIG --out "
                                      f"{folder}' first")
    if not path.is_file():
        raise DataError(path, None, "missing: the folder holds no finished prepare (re-run 'synthformer prepare' "
                                    "with the same command to finish it)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(path, None, f"not a valid manifest ({err}); re-run 'synthformer prepare' with "
                                    "--overwrite") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        got = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise ConfigError(f"{path}: not a synthformer prepared corpus (format {got!r}, expected {FORMAT!r})")
    if manifest.get("version") != VERSION:
        raise ConfigError(f"{path}: prepared-corpus format version {manifest.get('version')!r} is not supported "
                          f"(this synthformer reads version {VERSION}); re-run 'synthformer prepare' with this "
                          "version, or use the synthformer that wrote it")
    missing = [key for key in _REQUIRED if key not in manifest]
    if missing:
        raise DataError(path, None, f"damaged manifest: missing {missing}; re-run 'synthformer prepare' with "
                                    "--overwrite")
    if manifest["dtype"] not in _DTYPES:
        raise DataError(path, None, f"damaged manifest: dtype {manifest['dtype']!r} is not one of {list(_DTYPES)}")
    return manifest
