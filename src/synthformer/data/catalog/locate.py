"""Where a named data set's files are: a local copy, the cache of fetched copies, or nowhere yet.

Resolution order (the first folder holding the data set's files wins):

1. ``$SYNTHFORMER_DATA/<name>``: a folder of data set folders the user keeps (``synthformer data get NAME --out
   DIR`` writes one);
2. ``../shared/data/<name>`` from the working directory, then beside the checkout the package was installed
   from (``<checkout>/../shared/data``): where the project's own machines and CI keep their copies;
3. the cache of fetched copies, ``$SYNTHFORMER_CACHE/data/<name>`` (default ``~/.cache/synthformer/data``);
4. else the data set is fetched into that cache through ``datasets`` (:func:`ensure`), or, when it cannot be (no
   network, ``HF_DATASETS_OFFLINE=1``, ``datasets`` missing), refused in one line (:func:`refusal`).

Paths given in a config (``task.train=PATH`` ...) are not looked up here: they replace the data set's split.
"""

from __future__ import annotations

import difflib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from synthformer.common import ConfigError

from .entries import CATALOG, DataSet
from .fetch import FetchError, Loader, fetch, fetch_blocker

__all__ = ["DataUnavailable", "Found", "cache_root", "ensure", "find_local", "get_data_set", "has_split", "holds",
           "refusal", "search_roots"]

logger = logging.getLogger(__name__)


class DataUnavailable(ConfigError):
    """A named data set is neither on this machine nor fetchable now (the message says how to provide it)."""


@dataclass(frozen=True)
class Found:
    """A folder holding a data set: ``where`` says which root it was found under."""

    folder: Path
    where: str


def get_data_set(name: str) -> DataSet:
    """The catalog entry called ``name``.

    Raises:
        ConfigError: an unknown name (the closest one suggested, the valid ones listed).
    """
    if name in CATALOG:
        return CATALOG[name]
    close = difflib.get_close_matches(str(name), list(CATALOG), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    raise ConfigError(f"unknown data set {name!r}{hint}; named data sets: {', '.join(CATALOG)} (synthformer data "
                      "list shows them)")


def cache_root() -> Path:
    """Where fetched copies are written: ``$SYNTHFORMER_CACHE/data``, else ``$XDG_CACHE_HOME/synthformer/data``,
    else ``~/.cache/synthformer/data``."""
    if os.environ.get("SYNTHFORMER_CACHE"):
        return Path(os.environ["SYNTHFORMER_CACHE"]) / "data"
    base = Path(os.environ["XDG_CACHE_HOME"]) if os.environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "synthformer" / "data"


def _checkout_shared() -> Path | None:
    """``<checkout>/../shared/data`` when the package runs from a source checkout (``src/synthformer``)."""
    checkout = Path(__file__).resolve().parents[4]
    return checkout.parent / "shared" / "data" if (checkout / "pyproject.toml").is_file() else None


def search_roots() -> list[tuple[str, Path]]:
    """The folders of data set folders searched, in order, each with its label (see the module docstring)."""
    roots: list[tuple[str, Path]] = []
    if os.environ.get("SYNTHFORMER_DATA"):
        roots.append(("$SYNTHFORMER_DATA", Path(os.environ["SYNTHFORMER_DATA"])))
    roots.append(("../shared/data", Path("..") / "shared" / "data"))
    checkout = _checkout_shared()
    if checkout is not None:
        roots.append(("the checkout's ../shared/data", checkout))
    roots.append(("the fetched-copy cache", cache_root()))
    return roots


def holds(entry: DataSet, folder: Path) -> bool:
    """Whether ``folder`` holds a copy of ``entry`` (every one of its marker files exists)."""
    return folder.is_dir() and all((folder / name).exists() for name in entry.marker_files)


def has_split(entry: DataSet, folder: Path, split: str) -> bool:
    """Whether the copy in ``folder`` has ``split``: its file, or (a path prefix, Multi30k's ``train``) files
    ``PREFIX.*``."""
    path = folder / entry.splits[split]
    return path.exists() or any(path.parent.glob(path.name + ".*"))


def find_local(entry: DataSet) -> Found | None:
    """The first folder of :func:`search_roots` holding ``entry``, or ``None``. Looks at the file system only."""
    for label, root in search_roots():
        if holds(entry, root / entry.name):
            return Found((root / entry.name).resolve(), label)
    return None


def refusal(entry: DataSet, why: str) -> str:
    """The one line a run without ``entry`` stops with: the data set, why, where it comes from, and the two ways
    to provide it."""
    return (f"task.data: the data set {entry.name!r} ({entry.title}) is not on this machine and cannot be fetched "
            f"now ({why}); it comes from {entry.source.describe()}. Fetch it on a machine with the network: "
            f"'synthformer data get {entry.name}' (then copy the folder it writes here, or point $SYNTHFORMER_DATA "
            f"at it), or give your own copy: task.train=PATH (and task.valid, task.test)")


def ensure(entry: DataSet, paths: list[str], loader: Loader | None = None) -> None:
    """Make the files ``paths`` (of ``entry``'s fetched copy) exist: fetch ``entry`` into the cache when one is
    missing. Paths outside the cache (local copies, the user's own files) are left alone.

    Raises:
        DataUnavailable: it cannot be fetched now (the one-line :func:`refusal`).
    """
    folder = cache_root() / entry.name
    missing = [p for p in paths if _inside(Path(p), folder) and not Path(p).exists()]
    if not missing:
        return
    blocker = fetch_blocker()
    if blocker is not None:
        raise DataUnavailable(refusal(entry, blocker))
    logger.warning("%s is not on this machine: fetching it from %s into %s", entry.name, entry.source.describe(),
                   folder)
    try:
        fetch(entry, cache_root(), loader=loader)
    except FetchError as err:
        raise DataUnavailable(refusal(entry, str(err))) from err
    still = [p for p in missing if not Path(p).exists()]
    if still:
        raise DataUnavailable(refusal(entry, f"the fetched copy has no {', '.join(still)}"))


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True
