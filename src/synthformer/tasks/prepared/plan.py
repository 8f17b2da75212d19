"""What a prepare will do, decided before any tokenizing: the splits, their sources cut into units of work, the
source files' fingerprints, and the prepare's identity (what must match for a re-run to continue it).

A *unit* is a file, a byte range of a big plain file, a Hugging Face split (read with ``streaming=True``) or one
source of a type's own (text_to_text: a task's split). Each unit is tokenized by one process into its own shards,
so the shards do not depend on the number of processes, and a re-run redoes only the units that did not finish.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synthformer.common import ConfigError, to_dict
from synthformer.data import (
    LAYOUTS,
    DataError,
    expand_glob,
    file_ranges,
    file_stat,
    hf_shards,
    iter_file,
    iter_hf,
    splittable,
)

from ..run.task_config import TaskConfig
from .preparation import Preparation, Sources

__all__ = ["Context", "Plan", "Unit", "make_plan", "prepare_identity", "same_identity", "unit_records",
           "without_locations"]

_SPLITS = ("train", "valid", "test")
#: Task settings that shape training examples, not the prepared tokens: a re-run that changes only these continues
#: (or finds done) the same prepare.
_TRAINING_ONLY = frozenset({"max_len", "max_target_len", "stride", "overflow", "train_limit", "eval_limit",
                            "prepared"})
#: Task settings that say where the sources are, not what they hold (see :func:`without_locations`).
_LOCATIONS = frozenset({"train", "valid", "test"})


@dataclass(frozen=True)
class Unit:
    """One piece of work: the examples of ``source`` (bytes ``[start, stop)`` of it, for a range; for a data set
    split, part ``start`` of ``stop``)."""

    index: int
    split: str
    kind: str  # "file": documents read by prepare; "hf": a data set split; "examples": the task type's reader
    source: str
    start: int = 0
    stop: int | None = None
    size: int = 0  # bytes (progress); 0: unknown
    hash_files: tuple[str, ...] = ()  # files whose sha256 this unit computes (each file by exactly one unit)


@dataclass(frozen=True)
class Context:
    """What every unit needs besides itself (sent to each worker process; everything here pickles)."""

    folder: str
    task: TaskConfig
    layout: str
    record_fields: tuple[str, ...]
    dtype: str
    shard_tokens: int
    text_unit: str
    valid_fraction: float  # held out of the train units' examples (no valid source given); 0: none
    test_fraction: float

    @property
    def preparation(self) -> Preparation:
        # asked of the task type where needed, not carried to the workers: its parts need not pickle (lambdas)
        return self.task.task_type.preparation()

    @property
    def fields(self) -> tuple[str, ...]:
        return LAYOUTS[self.layout]

    def split_of(self, unit: Unit, position: int) -> str:
        """The split an example of ``unit`` goes to: a hash of its source and position decides the held-out ones
        (stable: it does not depend on the units, the workers, or the order of reading)."""
        if unit.split != "train" or not (self.valid_fraction or self.test_fraction):
            return unit.split
        key = f"{Path(unit.source).name}:{position}".encode()
        h = zlib.crc32(key) / 2**32
        if h < self.valid_fraction:
            return "valid"
        if h < self.valid_fraction + self.test_fraction:
            return "test"
        return "train"


@dataclass
class Plan:
    """The splits (in manifest order), the units, the source records and the identity of a prepare."""

    splits: list[str]
    units: list[Unit]
    sources: dict[str, list[dict[str, Any]]]
    identity: dict[str, Any]
    context: Context
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        return sum(u.size for u in self.units)


def _check_type(task: TaskConfig) -> Preparation:
    preparation = task.task_type.preparation()
    if preparation is None:
        from ..registry import get_task_type, list_task_types

        able = [n for n in list_task_types() if get_task_type(n).preparation() is not None]
        raise ConfigError(f"task.type: {task.type!r} data cannot be prepared (yet); prepare supports "
                          f"{', '.join(able)}")
    if task.generator is not None:
        raise ConfigError(f"task.generator: prepare reads files ('train') or a Hugging Face data set ('hf_name'), "
                          f"not the generator {task.generator!r}")
    return preparation


def _holdout(task: TaskConfig, given: list[str]) -> tuple[float, float]:
    valid = 0.0
    if "valid" not in given:
        if task.valid_fraction == 0:
            raise ConfigError("task.valid: prepare needs a validation split: give task.valid (files), "
                              "task.valid_fraction (held out of the training data) or, for HF data, hf_splits.valid")
        valid = task.valid_fraction
    test = task.test_fraction if "test" not in given else 0.0
    return valid, test


def _file_units(task: TaskConfig, preparation: Preparation) -> tuple[Sources, bool]:
    """Split -> sources (key, files) of a file-based task, and whether prepare reads them itself (documents)."""
    own = preparation.sources(task) if preparation.sources is not None else None
    if own is not None:
        return own, False
    out = {}
    for split, pattern in zip(_SPLITS, (task.train, task.valid, task.test), strict=True):
        if pattern is not None:
            out[split] = [(str(p), [str(p)]) for p in expand_glob(pattern)]
    return out, preparation.layout == "documents"


def _local_data_files(task: TaskConfig, split: str) -> list[Path]:
    """The local files behind a Hugging Face split (``hf_options.data_files`` of the generic builders), so that the
    manifest fingerprints them; remote ones and patterns that match nothing are left out."""
    data_files = task.hf_options.get("data_files")
    if isinstance(data_files, dict):
        data_files = data_files.get(split.split("[")[0])
    patterns = [data_files] if isinstance(data_files, str) else list(data_files or [])
    found: list[Path] = []
    for pattern in patterns:
        if isinstance(pattern, str) and "://" not in pattern:
            try:
                found.extend(p for p in expand_glob(pattern) if p not in found)
            except DataError:
                continue  # datasets reports it, as it would without prepare
    return found


def make_plan(task: TaskConfig, folder: Path, *, tokenizer_id: dict[str, Any], shard_tokens: int, unit_bytes: int,
              text_unit: str) -> Plan:
    """The plan of preparing ``task`` into ``folder`` (``tokenizer_id``: what identifies the tokenizer: a file's
    sha256, or how it is trained; the context's dtype is set once the tokenizer is known).

    Raises:
        ConfigError: a type or source that cannot be prepared, no validation split.
        DataError: a pattern that matches no file.
    """
    preparation = _check_type(task)
    task.ensure_data()  # a named data set not on this machine yet: fetched now, or refused in one line
    units: list[Unit] = []
    sources: dict[str, list[dict[str, Any]]] = {}
    if task.hf_name is not None:
        by_split = {ours: theirs for ours, theirs in task.hf_splits.items()}
        hashed: set[str] = set()
        for ours, theirs in by_split.items():
            local = [file_stat(p) for p in _local_data_files(task, theirs)]
            hashes = tuple(e["path"] for e in local if e["path"] not in hashed)
            hashed.update(hashes)
            count = hf_shards(str(task.hf_name), theirs, config=task.hf_config, options=task.hf_options)
            for i in range(count):  # one unit per part of the split (its files): processes share a big split
                units.append(Unit(len(units), ours, "hf", theirs, i, count, hash_files=hashes if i == 0 else ()))
            sources[ours] = [{"path": f"hf:{task.hf_name}" + (f"/{task.hf_config}" if task.hf_config else "")
                              + f"[{theirs}]", "size": None, "mtime": None, "sha256": None}, *local]
        given = list(by_split)
    else:
        by_split, own_reader = _file_units(task, preparation)
        for split, entries in by_split.items():
            sources[split] = []
            for key, files in entries:
                stats = [file_stat(Path(f)) for f in files]
                sources[split].extend(stats)
                hashes = tuple(s["path"] for s in stats)
                if own_reader and splittable(Path(key), text_unit):
                    for i, (a, b) in enumerate(file_ranges(stats[0]["size"], unit_bytes)):
                        units.append(Unit(len(units), split, "file", key, a, b, b - a, hashes if i == 0 else ()))
                else:
                    size = sum(s["size"] for s in stats)
                    units.append(Unit(len(units), split, "file" if own_reader else "examples", key, 0, None, size,
                                      hashes))
        given = list(by_split)  # a list: the manifest's split order must not depend on string hashing
    if "train" not in given and not any(s.startswith("train.") for s in given):
        raise ConfigError("task.train: prepare needs training data")
    own_splits = not set(given) <= set(_SPLITS)
    valid_fraction, test_fraction = (0.0, 0.0) if own_splits else _holdout(task, given)
    splits = list(given) if own_splits else [s for s in _SPLITS if s in given or (s == "valid" and valid_fraction)
                                             or (s == "test" and test_fraction)]
    context = Context(str(folder), task, preparation.layout, tuple(preparation.fields(task)), "uint32",
                      shard_tokens, text_unit, valid_fraction, test_fraction)
    identity = prepare_identity(task, tokenizer_id, shard_tokens, unit_bytes, text_unit, sources)
    return Plan(splits, units, sources, identity, context)


def prepare_identity(task: TaskConfig, tokenizer_id: dict[str, Any], shard_tokens: int, unit_bytes: int,
                     text_unit: str, sources: dict[str, list[dict[str, Any]]] | None) -> dict[str, Any]:
    """What a re-run must match to continue (or find done) a prepare: the task section without its training-only
    settings, the tokenizer, the sources' fingerprints (path, size, modification time; ``None``: left out), the
    shard and unit sizes and the text unit."""
    identity: dict[str, Any] = {
        "task": {k: v for k, v in to_dict(task).items() if k not in _TRAINING_ONLY},
        "tokenizer": tokenizer_id,
        "sources": None if sources is None else {
            s: [[e["path"], e["size"], e["mtime"]] for e in entries] for s, entries in sources.items()},
        "shard_tokens": shard_tokens,
        "unit_bytes": unit_bytes,
        "text_unit": text_unit,
    }
    if sources is None:
        del identity["sources"]
    return identity


def same_identity(a: Any, b: Any) -> bool:
    """Whether two identities (or parts) are equal once both are what JSON holds (a manifest read back)."""
    return json.loads(json.dumps(a)) == json.loads(json.dumps(b))


def without_locations(identity: dict[str, Any]) -> dict[str, Any]:
    """``identity`` without what says where the sources are (their fingerprints, and the task's paths and globs:
    ``train``, ``valid``, ``test``, ``hf_options.data_files``): what stays the same when the files move."""
    out = {k: v for k, v in identity.items() if k != "sources"}
    task = {k: v for k, v in dict(identity.get("task") or {}).items() if k not in _LOCATIONS}
    if isinstance(task.get("hf_options"), dict):
        task["hf_options"] = {k: v for k, v in task["hf_options"].items() if k != "data_files"}
    out["task"] = task
    return out


def unit_records(ctx: Context, unit: Unit, progress: Any = None) -> Iterator[tuple[int, tuple[str, ...]]]:
    """``(position, texts)`` of each example of ``unit``, one text per layout field, empty examples dropped (pairs:
    both sides stripped, as the in-memory readers do)."""
    task = ctx.task
    if unit.kind == "file":
        records = iter_file(Path(unit.source), ctx.record_fields, start=unit.start, stop=unit.stop,
                            text_unit=ctx.text_unit, progress=progress)
    elif unit.kind == "hf":
        records = iter_hf(str(task.hf_name), unit.source, ctx.record_fields, config=task.hf_config,
                          options=task.hf_options, shard=(unit.start, unit.stop or 1))
    elif (examples := ctx.preparation.examples) is not None:
        records = iter(examples(task, unit.source))
    else:
        raise ConfigError(f"task.type: {task.type!r} data cannot be prepared from files (its preparation gives no "
                          "examples)")
    pairs = ctx.layout == "pairs" and unit.kind != "examples"  # the types' readers strip and check themselves
    for position, texts in records:
        if pairs:
            texts = tuple(t.strip() for t in texts)
            if not all(texts) and task.empty_lines == "error":
                raise DataError(f"{task.hf_name}[{unit.source}]", position, "empty source or target (set "
                                "task.empty_lines: skip to skip such rows)")
        if all(t.strip() for t in texts):
            yield position, texts
