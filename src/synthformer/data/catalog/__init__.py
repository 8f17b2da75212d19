"""Named data sets: a config says ``task.data: tiny_shakespeare`` and the files are found or fetched.

* :mod:`.entries`: the catalog (:data:`CATALOG`): each data set's source (a Hugging Face hub id or an official
  URL), its splits and the local layout of the project's copies;
* :mod:`.locate`: where a copy is (``$SYNTHFORMER_DATA``, ``../shared/data``, the cache of fetched copies), and
  the one-line refusal when there is none and none can be fetched;
* :mod:`.fetch`: reading a source through ``datasets`` and writing the layout (:mod:`.convert`).

``synthformer data list`` and ``synthformer data get NAME`` are the command line of this package; ``docs/data.md``
("Where the data comes from") has the table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .entries import CATALOG, DataSet, Source
from .fetch import FetchError, Loader, fetch, fetch_blocker
from .locate import (
    DataUnavailable,
    Found,
    cache_root,
    ensure,
    find_local,
    get_data_set,
    has_split,
    holds,
    refusal,
    search_roots,
)

__all__ = [
    "CATALOG", "DataSet", "DataUnavailable", "FetchError", "Found", "Loader", "Source", "cache_root", "ensure",
    "fetch", "fetch_blocker", "find_local", "get_data_set", "has_split", "hf_cache_folder", "holds", "refusal",
    "search_roots", "status",
]


def hf_cache_folder(entry: DataSet) -> Path | None:
    """The Hugging Face hub cache folder of ``entry``'s hub source when it is there (``None``: not downloaded
    yet, or a URL source, whose downloads ``datasets`` keeps under hashed names)."""
    if entry.source.kind != "hub":
        return None
    try:
        from huggingface_hub import constants
    except ImportError:
        return None
    folder = Path(constants.HF_HUB_CACHE) / f"datasets--{entry.source.location.replace('/', '--')}"
    return folder if folder.is_dir() else None


def status(entry: DataSet) -> dict[str, Any]:
    """What ``data list`` shows of ``entry``: its source, the local copy found (folder and which root), and its
    Hugging Face cache folder."""
    found = find_local(entry)
    hf = hf_cache_folder(entry)
    return {"name": entry.name, "title": entry.title, "task": entry.task, "source": entry.source.describe(),
            "licence": entry.licence, "local": None if found is None else str(found.folder),
            "found_in": None if found is None else found.where, "hf_cache": None if hf is None else str(hf)}
