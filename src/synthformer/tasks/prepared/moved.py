"""A finished prepared folder met again by the same prepare after its sources moved, were copied without their
modification times, or were deleted (as one does with 305 GB of C4 once its shards are written).

The corpus does not need its sources: its shards hold the tokens and the manifest their sizes and checksums. So a
re-run recognises it by what the sources hold, not where they are or when they were written:

- the files now named (at the same or at other paths) are the recorded ones by size and, where the path or the
  modification time differs, by sha256: the same prepare. The manifest is brought up to date (where the files are
  now, their times), so later re-runs and runs do not hash them again; damaged shards can still be rewritten.
- the patterns are the recorded ones but match fewer of the files, or none: the prepare of this command, its
  missing sources deleted. Nothing to do unless a shard is damaged, which cannot be rewritten without them.
- any file whose size or content differs, or a file that was not there: another corpus. Refused: ``--overwrite``
  prepares the current files.
"""

from __future__ import annotations

import dataclasses
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synthformer.common import to_dict
from synthformer.data import MANIFEST, sha256_file, write_manifest

from .plan import Plan, same_identity
from .repair import check_tokenizer, damaged_units, repair
from .runner import PrepareError, PrepareResult

__all__ = ["Verdict", "compare_sources", "finished_elsewhere", "finished_without_sources"]

Entries = dict[str, list[dict[str, Any]]]


@dataclass
class Verdict:
    """How the sources named now relate to those a prepare recorded: ``kind`` is ``"same"`` (the same content,
    ``moved`` of the files at another path or time), ``"gone"`` (the recorded patterns match ``gone`` fewer files;
    the rest the same) or ``"changed"``; ``detail`` names the first file concerned; ``sources``: the manifest's
    ``sources`` rewritten to where the files are now (``"same"`` only)."""

    kind: str
    detail: str = ""
    moved: int = 0
    gone: int = 0
    sources: Entries = field(default_factory=dict)


def _hashes(paths: list[str], workers: int) -> list[str]:
    # hashlib releases the GIL on large buffers: threads hash several big files side by side
    with ThreadPoolExecutor(max(1, min(workers, len(paths) or 1))) as pool:
        return list(pool.map(sha256_file, paths))


def compare_sources(recorded: Entries, current: Entries, workers: int = 1) -> Verdict:
    """Compare the ``sources`` a manifest recorded with those a plan found now (see the module docstring): sizes
    first (from ``stat``), then the sha256 of each file whose path or modification time differs (read in
    ``workers`` threads)."""
    if list(recorded) != list(current):
        return Verdict("changed", f"splits {list(recorded)} at the prepare, {list(current)} now")
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    gone: list[str] = []
    for split, entries in recorded.items():
        files = [e for e in entries if e.get("size") is not None]
        now = [e for e in current[split] if e.get("size") is not None]
        others = [e["path"] for e in entries if e.get("size") is None]  # data sets: named, not fingerprinted
        if others != [e["path"] for e in current[split] if e.get("size") is None]:
            return Verdict("changed", f"{split}: data sets {others} at the prepare")
        if len(now) == len(files):
            pairs += zip(files, now, strict=True)
            continue
        by_path = {e["path"]: e for e in files}
        if len(now) > len(files) or any(e["path"] not in by_path for e in now):
            return Verdict("changed", f"{split}: {len(files)} source file(s) at the prepare, {len(now)} now")
        pairs += [(by_path[e["path"]], e) for e in now]
        gone += [e["path"] for e in files if e["path"] not in {n["path"] for n in now}]
    to_hash = []
    for old, new in pairs:
        if old["size"] != new["size"]:
            return Verdict("changed", f"{new['path']}: {old['size']:,} bytes at the prepare, {new['size']:,} now")
        if old["path"] != new["path"] or old.get("mtime") != new["mtime"]:
            if not old.get("sha256"):
                return Verdict("changed", f"{new['path']}: moved or modified, and no checksum was recorded")
            to_hash.append((old, new))
    for (old, new), digest in zip(to_hash, _hashes([n["path"] for _, n in to_hash], workers), strict=True):
        if digest != old["sha256"]:
            where = "" if old["path"] == new["path"] else f" ({old['path']} at the prepare)"
            return Verdict("changed", f"{new['path']}: content changed since the prepare (sha256){where}")
    if gone:
        return Verdict("gone", f"{gone[0]}: gone since the prepare" + (f" (and {len(gone) - 1} more)"
                                                                       if len(gone) > 1 else ""), gone=len(gone))
    sha = {id(new): old.get("sha256") for old, new in pairs}
    sources = {s: [{**e, "sha256": sha.get(id(e), e.get("sha256"))} for e in entries] for s, entries in current.items()}
    return Verdict("same", moved=len(to_hash), sources=sources)


def _units(manifest: dict[str, Any]) -> int:
    return len({shard.get("unit") for split in manifest["splits"].values() for shard in split["shards"]})


def _intact(out: Path, manifest: dict[str, Any], verify: bool, why: str, note: str) -> PrepareResult:
    """A finished folder whose sources cannot rewrite a shard: nothing to do if none is damaged, else refused."""
    check_tokenizer(out, manifest)
    damaged = damaged_units(out, manifest, verify)
    if damaged:
        first = damaged[min(damaged)]
        raise PrepareError(f"{first}: damaged, and rewriting it needs the sources ({why}); restore them and re-run "
                           "the same command, or prepare again with --overwrite")
    units = _units(manifest)
    return PrepareResult(out, manifest, "complete", units, units, note=note)


def finished_elsewhere(out: Path, plan: Plan, workers: int, verify: bool) -> PrepareResult:
    """``out`` holds a finished prepare that differs from ``plan`` only in where its sources are (or in their
    fingerprints): recognise it, bring its manifest up to date, or refuse (see the module docstring).

    Raises:
        PrepareError: the sources now hold something else, or a damaged shard cannot be rewritten.
    """
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    verdict = compare_sources(manifest.get("sources") or {}, plan.sources, workers)
    same_patterns = json.dumps((manifest.get("prepare") or {}).get("task"), sort_keys=True) == json.dumps(
        plan.identity["task"], sort_keys=True)
    if verdict.kind == "gone" and not same_patterns:  # other patterns that match fewer files: a smaller corpus
        verdict = Verdict("changed", f"{verdict.detail}, and the task's sources are named otherwise")
    if verdict.kind == "changed":
        raise PrepareError(f"--out {out} holds a prepare of other source contents ({verdict.detail}); use another "
                           "--out, or --overwrite to prepare the current files (a run can keep training from the "
                           "corpus as it is)")
    if verdict.kind == "gone":
        return _intact(out, manifest, verify, verdict.detail,
                       f"{verdict.detail}: the corpus does not need its sources (a run reads its shards)")
    # the same files, at other paths or with other times: the manifest says where they are now, so that the next
    # re-run (and `prepare --check`, and every run's start) finds them as recorded without hashing them again
    updated = {**manifest, "sources": verdict.sources, "prepare": plan.identity, "config": to_dict(plan.context.task)}
    write_manifest(out, updated)
    result = repair(out, plan, workers, verify)
    note = (f"{verdict.moved} source file(s) moved or copied since the prepare, with the same content (sha256); the "
            f"manifest now records where they are") if verdict.moved else ""
    return dataclasses.replace(result, note=note)


def finished_without_sources(out: Path, identity: dict[str, Any], verify: bool, error: Exception,
                             ) -> PrepareResult | None:
    """The sources of this prepare cannot be listed (``error``: a glob that matches nothing now, a file gone): if
    ``out`` holds a finished prepare of the same command (``identity`` without the sources' fingerprints: the
    same patterns, tokenizer, sizes), it is done: check its shards and return it with a note; else None (the
    caller raises ``error``)."""
    path = out / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        recorded = {k: v for k, v in (manifest.get("prepare") or {}).items() if k != "sources"}
    except (OSError, ValueError, AttributeError):
        return None
    if not same_identity(recorded, identity):
        return None
    return _intact(out, manifest, verify, f"{error}",
                   f"the sources are gone ({error}); the corpus does not need them (a run reads its shards)")
