"""Fetching a named data set through ``datasets`` (into the Hugging Face cache) and writing its local layout.

:class:`Loader` is the one place that calls ``datasets``: :meth:`Loader.rows` (``datasets.load_dataset``, a hub
id, a generic builder or a local folder in the hub's layout) and :meth:`Loader.download` (``datasets``' download
manager: a URL or a local archive, extracted). Anything the source side raises (no network, an unknown id, a
missing file) becomes one :class:`FetchError` naming the source; errors of the conversion itself are bugs and
propagate. :func:`fetch` writes the layout into a temporary folder beside the target and renames it into place
when complete, so an interrupted fetch never leaves a copy that looks whole.
"""

from __future__ import annotations

import logging
import os
import shutil
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import DataSet

__all__ = ["FetchError", "Loader", "fetch", "fetch_blocker"]

logger = logging.getLogger(__name__)

_TRUE = ("1", "on", "yes", "true")


class FetchError(OSError):
    """The source could not be read (its message names the source and why, in one line)."""


def _import_datasets() -> Any:
    try:
        import datasets
    except ImportError:
        return None
    return datasets


def fetch_blocker() -> str | None:
    """Why a remote source cannot be fetched from this process (``None``: it can be tried): ``datasets`` missing,
    or the Hugging Face offline switches set. The environment is read at each call, not when ``datasets`` was
    imported, so a switch set later is obeyed too."""
    for name in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"):
        if os.environ.get(name, "").strip().lower() in _TRUE:
            return f"{name}={os.environ[name]}"
    if _import_datasets() is None:
        return "the 'datasets' package is not installed (pip install datasets)"
    return None


def _reason(err: BaseException) -> str:
    """An exception as a short phrase: its type and the first line of its message."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    text = text if len(text) <= 200 else text[:197] + "..."
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


class Loader:
    """Reads sources through ``datasets``; ``cache_dir`` overrides the Hugging Face cache (tests)."""

    def __init__(self, cache_dir: str | Path | None = None) -> None:
        self.cache_dir = None if cache_dir is None else str(cache_dir)
        self._loaded: dict[tuple[str, str | None, str], Any] = {}

    def _datasets(self) -> Any:
        datasets = _import_datasets()
        if datasets is None:
            raise FetchError("the 'datasets' package is not installed (pip install datasets)")
        return datasets

    def _splits(self, path: str, config: str | None, options: dict[str, Any]) -> Any:
        key = (path, config, repr(sorted(options.items())))
        if key not in self._loaded:
            datasets = self._datasets()
            kwargs = dict(options)
            if Path(path).is_dir():  # a local copy of the hub data set: a hub revision means nothing there
                kwargs.pop("revision", None)
            if self.cache_dir is not None and not kwargs.get("streaming"):
                kwargs["cache_dir"] = self.cache_dir
            logger.info("loading %s%s through datasets", path, f" ({config})" if config else "")
            try:
                self._loaded[key] = datasets.load_dataset(path, config, **kwargs)
            except Exception as err:  # any failure of the source side: reported in one line, with its reason
                logger.debug("loading %s failed", path, exc_info=True)
                raise FetchError(f"{path}{f' ({config})' if config else ''}: {_reason(err)}") from err
        return self._loaded[key]

    def rows(self, path: str, config: str | None, split: str, *, required: bool = True, limit: int | None = None,
             **options: Any) -> list[dict[str, Any]] | None:
        """The rows of ``split`` of ``datasets.load_dataset(path, config, **options)`` as plain dicts (at most
        ``limit``); ``None`` when the data set has no such split and it is not ``required``.

        Raises:
            FetchError: the source cannot be read, or a required split is missing.
        """
        splits = self._splits(path, config, options)
        if split not in splits:
            if not required:
                return None
            raise FetchError(f"{path}{f' ({config})' if config else ''}: no split {split!r} (it has: "
                             f"{', '.join(splits)})")
        data = splits[split]
        try:
            return [dict(r) for r in (islice(data, limit) if limit is not None else data)]
        except Exception as err:  # streamed rows are read here: the network can fail now too
            raise FetchError(f"{path}: reading split {split!r}: {_reason(err)}") from err

    def download(self, location: str) -> Path:
        """A local file or folder for ``location``: a URL downloaded into the Hugging Face cache, an archive
        (``.zip``, ``.tar.gz``, ...) extracted there, a local folder as it is.

        Raises:
            FetchError: the download or the extraction failed.
        """
        if Path(location).is_dir():
            return Path(location)
        datasets = self._datasets()
        config = datasets.DownloadConfig(cache_dir=self.cache_dir) if self.cache_dir else None
        manager = datasets.DownloadManager(download_config=config)
        try:
            if Path(location).is_file():
                return Path(manager.extract(location))
            logger.info("downloading %s through datasets", location)
            return Path(manager.download_and_extract(location))
        except Exception as err:  # the network, a missing URL, a damaged archive
            logger.debug("downloading %s failed", location, exc_info=True)
            raise FetchError(f"{location}: {_reason(err)}") from err


def fetch(entry: DataSet, root: str | Path, *, location: str | None = None, loader: Loader | None = None) -> Path:
    """Write the local layout of ``entry`` to ``root/<name>`` from its source (or from ``location``: a local
    folder in the hub's layout, a local file or archive); returns that folder. An earlier copy there is replaced.

    Raises:
        FetchError: the source cannot be read, or it gave no file the layout needs.
    """
    root = Path(root)
    target = root / entry.name
    partial = root / f".{entry.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    where = location or entry.source.location
    try:
        entry.fetcher(entry, where, partial, loader or Loader())
        missing = [name for name in entry.marker_files if not (partial / name).exists()]
        if missing:
            raise FetchError(f"{where}: gave no {', '.join(missing)} for {entry.name}")
        if target.exists():
            shutil.rmtree(target)
        partial.rename(target)
    except FileNotFoundError as err:  # a file the layout needs is not in the archive or folder
        raise FetchError(str(err)) from err
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    logger.info("%s: written to %s", entry.name, target)
    return target
