"""The types of the catalog: :class:`Source` (where a data set comes from) and :class:`DataSet` (one named data
set: its splits, local layout, source and the function that converts it). The entries are in :mod:`.entries`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DataSet", "Fetcher", "Source"]


@dataclass(frozen=True)
class Source:
    """Where a data set comes from.

    Attributes:
        kind: ``"hub"`` (``datasets.load_dataset(location, config, ...)``) or ``"url"`` (a file or archive that
            ``datasets``' download manager fetches into the Hugging Face cache).
        location: the hub data set id or the URL.
        configs: the hub configurations read (GLUE's ``rte``, ...); empty: the default one.
        options: more arguments for ``datasets.load_dataset`` (``revision``, ``data_dir``, ``streaming``).
    """

    kind: str
    location: str
    configs: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """``hub:ID (configs)`` or the URL: what ``data list`` and the refusal print."""
        if self.kind == "url":
            return self.location
        configs = f" ({', '.join(self.configs)})" if self.configs else ""
        return f"hub:{self.location}{configs}"


#: ``fetch(entry, location, out_dir, loader)``: write the local layout of ``entry`` into ``out_dir`` from
#: ``location`` (the source's, or a local folder given instead) with ``loader`` (:class:`.fetch.Loader`).
Fetcher = Callable[["DataSet", str, Path, Any], None]


@dataclass(frozen=True)
class DataSet:
    """One named data set.

    Attributes:
        name: the name configs use (``task.data``) and the folder of its local copy.
        title: the usual name (``Tiny Shakespeare``).
        task: what it is used for, in a few words.
        splits: split name -> its file (or path prefix, or ``"."`` for the folder itself) in the local layout.
        required: files whose presence makes a folder a copy of this data set (default: those of ``splits``).
        source: where it comes from.
        origin: who made it, as ``SOURCES.md`` / ``README.md`` state it.
        licence: the licence as the source states it (or that none is stated).
        fetcher: writes the local layout from the source.
        note: what a fetched copy holds that the project's copy does not, or what is uncertain.
    """

    name: str
    title: str
    task: str
    splits: dict[str, str]
    source: Source
    origin: str
    licence: str
    fetcher: Fetcher
    required: tuple[str, ...] = ()
    note: str = ""

    @property
    def marker_files(self) -> tuple[str, ...]:
        """The files that must exist in a folder holding this data set."""
        if self.required:
            return self.required
        return tuple(path for path in self.splits.values() if path != ".")
