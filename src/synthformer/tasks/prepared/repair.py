"""A finished prepared folder: find damaged shards and rewrite them (``synthformer prepare`` run again on it), or
check it (``synthformer prepare --check``)."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from synthformer.common import fsync_path
from synthformer.data import MANIFEST, DataError, PreparedCorpus, manifest_shard, sha256_file

from .plan import Plan
from .runner import PrepareError, PrepareResult, raise_error, run_units
from .work import PARTS, part_dir

__all__ = ["check_prepared", "check_tokenizer", "damaged_units", "repair"]

logger = logging.getLogger(__name__)


def damaged_units(out: Path, manifest: dict[str, Any], verify: bool) -> dict[int, Path]:
    """The units whose shards are missing, of the wrong size or (``verify``) of the wrong sha256, each with its
    first damaged file."""
    damaged: dict[int, Path] = {}
    for split in manifest["splits"].values():
        for shard in split["shards"]:
            for file, size in shard["bytes"].items():
                path = out / file
                if not path.is_file() or path.stat().st_size != size or (
                        verify and sha256_file(path) != shard["sha256"][file]):
                    damaged.setdefault(int(shard["unit"]), path)
    return damaged


def check_tokenizer(out: Path, manifest: dict[str, Any]) -> None:
    """Raise :class:`PrepareError` unless the folder's tokenizer is the one its shards were tokenized with."""
    try:
        PreparedCorpus(out, manifest).tokenizer()  # its checksum
    except (DataError, ValueError, FileNotFoundError) as err:
        # a damaged tokenizer cannot be rewritten without changing every shard
        raise PrepareError(f"{err}; prepare again with --overwrite") from None


def repair(out: Path, plan: Plan, workers: int, verify: bool) -> PrepareResult:
    """A finished folder: nothing to do, or its damaged shards tokenized again (their units) and put in place once
    their checksums match the manifest's."""
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    check_tokenizer(out, manifest)
    damaged = damaged_units(out, manifest, verify)
    if not damaged:
        shutil.rmtree(out / PARTS, ignore_errors=True)  # left by a prepare cut after its manifest was written
        return PrepareResult(out, manifest, "complete", len(plan.units), len(plan.units))
    ctx = dataclasses.replace(plan.context, dtype=manifest["dtype"])
    units = [u for u in plan.units if u.index in damaged]
    if len(units) < len(damaged):  # the sources no longer give those units (fewer files, other ranges)
        lost = damaged[min(set(damaged) - {u.index for u in units})]
        raise PrepareError(f"{lost}: damaged, and the sources no longer give the unit that wrote it; restore "
                           "them as they were at the prepare, or prepare again with --overwrite")
    redone: dict[int, dict[str, Any]] = {}
    bar = tqdm(disable=True)
    bar.docs = 0
    run_units(ctx, units, workers, bar, lambda r: redone.update({r["unit"]: r}) if "error" not in r
               else raise_error(r, out, 0, 0.0, 0))
    for unit in units:
        for split, entry in manifest["splits"].items():
            old = [s for s in entry["shards"] if s["unit"] == unit.index]
            new = redone[unit.index]["shards"].get(split, [])
            again = [manifest_shard(n, o["name"])["sha256"] for n, o in zip(new, old, strict=False)]
            if len(old) != len(new) or [s["sha256"] for s in old] != again:
                raise PrepareError(f"{unit.source}: tokenized again, it no longer gives the shards the manifest "
                                   "lists (the source changed since the prepare); prepare again with --overwrite")
            for n, o in zip(new, old, strict=True):
                for file in n["files"]:
                    os.replace(part_dir(out, unit) / file, out / (o["name"] + file[len(n["stem"]):]))
    fsync_path(out)
    shutil.rmtree(out / PARTS, ignore_errors=True)
    return PrepareResult(out, manifest, "repaired", len(plan.units), len(plan.units) - len(units))


def check_prepared(folder: str | os.PathLike[str], tokenizer: str | None = None, full: bool = True) -> PreparedCorpus:
    """Open a prepared folder and check it: sizes, the tokenizer (when given) and every checksum (``full``). Raises
    the first problem (``DataError`` / ``ConfigError``, naming the file). Sources gone or changed since the prepare
    are no problem of the corpus: they are logged as a note (:meth:`PreparedCorpus.sources_note`)."""
    corpus = PreparedCorpus.open(folder, tokenizer=tokenizer)
    if full:
        corpus.verify()
    note = corpus.sources_note()
    if note:
        logger.info("note: %s", note)
    return corpus
