"""``prepare_corpus``: a task's data into a prepared folder, in parallel processes, resumable, one at a time.

Steps: lock the folder (a second prepare fails at once); plan (sources, units, identity); compare with what the
folder holds (a finished prepare of the same identity: nothing to do; the same but for where its sources are, or
with them deleted: :mod:`.moved`; an unfinished one: continue; what a prepare killed early left: start over;
another: refuse unless ``overwrite``); the tokenizer (given, trained on a sample, or the unfinished prepare's);
every unit not yet done (each in one process, into ``.parts/u<index>/``; a finished unit is kept once its
checksums verify; worker processes die with this one, even by SIGKILL); then the assembly: the parts renamed to
their final names in unit order (a journal makes a cut assembly resumable) and the manifest written last. A re-run
of the same command after a kill or a full disk gives the same bytes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from synthformer.common import TMP_PREFIX, ConfigError, atomic_write_text, fsync_path, to_dict
from synthformer.data import (
    DEFAULT_SHARD_TOKENS,
    MANIFEST,
    TOKENIZER,
    DataError,
    Tokenizer,
    base_manifest,
    dtype_for,
    load_tokenizer,
    manifest_shard,
    shard_name,
    split_entry,
    write_manifest,
)
from synthformer.train import LOCK_FILE, RunError, lock_directory

from ..run.task_config import TaskConfig
from .moved import finished_elsewhere, finished_without_sources
from .plan import Plan, make_plan, prepare_identity, same_identity, without_locations
from .repair import check_prepared, repair
from .runner import PrepareError, PrepareResult, raise_error, run_units
from .tokenizer import (
    ASKED_VOCAB_SIZE,
    DEFAULT_SAMPLE_BYTES,
    check_vocab_size,
    given_tokenizer,
    tokenizer_identity,
    train_tokenizer,
)
from .work import PARTS, load_done, part_dir

__all__ = ["DEFAULT_UNIT_BYTES", "PrepareError", "PrepareResult", "check_prepared", "prepare_corpus"]

#: Default size of the byte ranges a big plain file is cut into (one process each): 256 MiB.
DEFAULT_UNIT_BYTES = 1 << 28
_PLAN = "plan.json"
_JOURNAL = "assemble.json"
_SHARD_FILE = re.compile(r".+-\d{5}\.\w+\.(bin|idx\.npy)(\.tmp)?$")  # train-00000.text.bin, ...


def _differs(old: dict[str, Any], new: dict[str, Any]) -> str:
    keys = [k for k in new if not same_identity(old.get(k), new[k])] or ["format"]
    return ", ".join(keys)


def _state(out: Path, identity: dict[str, Any], overwrite: bool) -> str:
    """``fresh``, ``overwrite`` (fresh once what the folder holds is cleared, which waits until the tokenizer is
    accepted: a refused prepare leaves the old one), ``resume``, ``complete`` or ``moved`` (a finished prepare whose
    sources are elsewhere or have other fingerprints: :func:`~.moved.finished_elsewhere` decides); refuses a folder
    that holds something else."""
    parts = out / PARTS
    if overwrite:
        return "overwrite"
    other = ("use another --out, or --overwrite to replace it")
    if (out / MANIFEST).is_file():
        try:
            manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise PrepareError(f"{out / MANIFEST}: damaged; re-run with --overwrite") from None
        recorded = manifest.get("prepare") or {}
        if same_identity(recorded, identity):
            return "complete"
        if same_identity(without_locations(recorded), without_locations(identity)):
            return "moved"
        raise PrepareError(f"--out {out} holds a different prepare (differs in: {_differs(recorded, identity)}); "
                           f"{other}")
    if (parts / _PLAN).is_file():
        old = json.loads((parts / _PLAN).read_text(encoding="utf-8"))
        if not same_identity(old.get("identity"), identity):
            raise PrepareError(f"--out {out} holds an unfinished different prepare (differs in: "
                               f"{_differs(old.get('identity') or {}, identity)}); {other}")
        return "resume"
    if any(p.name not in (LOCK_FILE, TOKENIZER, PARTS) and not p.name.startswith(TMP_PREFIX)
           for p in out.iterdir()):
        raise PrepareError(f"--out {out} is not empty and holds no prepare; {other}")
    # what a prepare killed before it recorded its plan leaves (its tokenizer, a temporary file, a stale lock):
    # nothing to keep, and no reason to refuse the same command run again
    _clear(out)
    return "fresh"


def _clear(out: Path) -> None:
    """Remove what a prepare writes (nothing else; the lock file stays) from ``out``."""
    shutil.rmtree(out / PARTS, ignore_errors=True)
    for path in out.iterdir():
        if path.name in (MANIFEST, TOKENIZER) or path.name.startswith(TMP_PREFIX) or _SHARD_FILE.match(path.name):
            path.unlink()


# -- assembly -----------------------------------------------------------------------------------------------------


def _assemble(out: Path, plan: Plan, tok: Tokenizer, done: dict[int, dict[str, Any]], created: str,
              command: str, smaller: bool) -> dict[str, Any]:
    """Journal the renames and the manifest, then carry them out (:func:`_finish`); ``smaller``: the tokenizer is
    smaller than ``task.vocab_size`` asks, taken with ``--accept-smaller-vocab`` (recorded for ``train``)."""
    fields = plan.context.fields
    moves: list[list[str]] = []
    splits: dict[str, Any] = {}
    for split in plan.splits:
        entries = []
        for unit in plan.units:
            for part in done[unit.index]["shards"].get(split, []):
                name = shard_name(split, len(entries))
                entry = manifest_shard(part, name)
                entry["unit"] = unit.index
                entries.append(entry)
                for file in part["files"]:
                    moves.append([str(part_dir(out, unit) / file), str(out / (name + file[len(part["stem"]):]))])
        if not entries:
            raise ConfigError(f"task: the {split} split got no example (a held-out fraction too small for the data, "
                              "or empty sources); raise task.valid_fraction or give task.valid")
        splits[split] = split_entry(entries, fields)
        counted = [done[unit.index].get("characters") for unit in plan.units]
        if plan.context.layout == "documents" and all(c is not None for c in counted):
            # the documents' characters (the eos after each is not counted): chars per token for bits per character
            splits[split]["characters"] = sum(c.get(split, 0) for c in counted)
    hashes = {path: digest for record in done.values() for path, digest in record["sha256"].items()}
    task = plan.context.task
    manifest = base_manifest(task.type, plan.context.layout, tok, out / TOKENIZER)
    if smaller:
        manifest["tokenizer"][ASKED_VOCAB_SIZE] = task.vocab_size
    manifest["sources"] = {s: [{**e, "sha256": hashes.get(e["path"], e.get("sha256"))} for e in entries]
                           for s, entries in plan.sources.items()}
    manifest["splits"] = splits
    groups: dict[str, dict[str, str]] = {}
    for split in plan.splits:
        if "." in split:
            head, _, group = split.partition(".")
            groups.setdefault(head, {})[group] = split
    if groups:
        manifest["groups"] = groups  # text_to_text: split -> its tasks' prepared splits
    manifest["config"] = to_dict(task)  # the whole task section (the identity leaves out training-only settings)
    manifest["prepare"] = plan.identity
    manifest["created"] = created
    manifest["command"] = command
    journal = {"moves": moves, "manifest": manifest}
    atomic_write_text(out / PARTS / _JOURNAL, json.dumps(journal) + "\n")
    return _finish(out, journal)


def _finish(out: Path, journal: dict[str, Any]) -> dict[str, Any]:
    for src, dst in journal["moves"]:
        if Path(src).exists():  # else moved before a cut: the journal is replayed from the start
            os.replace(src, dst)
    fsync_path(out)
    write_manifest(out, journal["manifest"])
    shutil.rmtree(out / PARTS, ignore_errors=True)
    return journal["manifest"]


# -- the whole prepare ----------------------------------------------------------------------------------------------


def _check_options(workers: int, shard_tokens: int, unit_bytes: int, sample_bytes: int) -> None:
    for name, value in (("--workers", workers), ("--shard-tokens", shard_tokens), ("--unit-bytes", unit_bytes),
                        ("--tokenizer-sample-bytes", sample_bytes)):
        if value < 1:
            raise ConfigError(f"{name}: expected an integer >= 1, got {value}")


def _lock(out: Path) -> Any:
    if out.exists() and not out.is_dir():
        raise PrepareError(f"--out {out} is a file, expected a folder")
    try:
        return lock_directory(out)
    except RunError as err:
        holder = re.search(r"\(pid [^)]*\)", str(err))
        raise PrepareError(f"--out {out} is in use by another process{' ' + holder.group(0) if holder else ''} (a "
                           "second 'synthformer prepare'?); wait for it to finish, or choose another --out") from None


def prepare_corpus(task: TaskConfig, out: str | os.PathLike[str], *, workers: int = 1, tokenizer: str | None = None,
                   shard_tokens: int = DEFAULT_SHARD_TOKENS, unit_bytes: int = DEFAULT_UNIT_BYTES,
                   text_unit: str = "paragraph", sample_bytes: int = DEFAULT_SAMPLE_BYTES, seed: int = 0,
                   overwrite: bool = False, verify: bool = False, progress: bool = False,
                   command: str = "", accept_smaller_vocab: bool = False) -> PrepareResult:
    """Prepare ``task``'s data into the folder ``out`` (see the module docstring and ``docs/data.md``).

    Args:
        task: the run config's task section (types with a :meth:`~synthformer.tasks.TaskType.preparation`: lm,
            span_corruption, seq2seq, summarization, dialogue, text_to_text).
        out: the prepared folder (created).
        workers: processes tokenizing units side by side.
        tokenizer: a tokenizer file to use; None trains ``task.tokenizer`` on a sample of ``sample_bytes``
            (seeded by ``seed``).
        shard_tokens: tokens per shard (about: a shard closes once it holds this many).
        unit_bytes: big plain files are cut into byte ranges of this size, one unit of work each.
        text_unit: how text files are cut into documents: ``line``, ``paragraph`` or ``file``.
        overwrite: replace a different prepare found in ``out``.
        verify: on a finished folder, check every shard's sha256 (not only its size) and rewrite the damaged ones.
        progress: show a progress bar (bytes and documents).
        command: the command line, recorded in the manifest.
        accept_smaller_vocab: take a trained tokenizer smaller than ``task.vocab_size`` (the data cannot make it
            as big); without it such a prepare is refused before it writes anything (``train`` with the same
            config would refuse the corpus; with it the manifest records the size asked, which ``train`` accepts).

    Raises:
        ConfigError, DataError, PrepareError: one-line messages naming the problem and what to do.
    """
    _check_options(workers, shard_tokens, unit_bytes, sample_bytes)
    out = Path(out)
    lock = _lock(out)
    try:
        if tokenizer is not None and not Path(tokenizer).is_file():
            raise ConfigError(f"--tokenizer: no tokenizer file at {tokenizer}")
        tok_id = tokenizer_identity(task, tokenizer, sample_bytes, seed)
        try:
            plan = make_plan(task, out, tokenizer_id=tok_id, shard_tokens=shard_tokens, unit_bytes=unit_bytes,
                             text_unit=text_unit)
        except DataError as err:  # sources that cannot be listed: deleted after a finished prepare of this command?
            identity = prepare_identity(task, tok_id, shard_tokens, unit_bytes, text_unit, None)
            found = None if overwrite else finished_without_sources(out, identity, verify, err)
            if found is None:
                raise
            return found
        state = _state(out, plan.identity, overwrite)
        if state == "complete":
            return repair(out, plan, workers, verify)
        if state == "moved":
            return finished_elsewhere(out, plan, workers, verify)
        return _prepare(out, plan, state, tokenizer, sample_bytes, seed, workers, progress, command,
                        accept_smaller_vocab)
    finally:
        lock.release()


def _prepare(out: Path, plan: Plan, state: str, tokenizer: str | None, sample_bytes: int, seed: int, workers: int,
             progress: bool, command: str, accept_smaller: bool) -> PrepareResult:
    task = plan.context.task
    parts = out / PARTS
    if state in ("fresh", "overwrite"):
        tok = given_tokenizer(task, tokenizer) if tokenizer else \
            train_tokenizer(task, plan.context, plan.units, sample_bytes, seed)
        # refused before anything is written: no half-made folder, and --overwrite keeps the old prepare
        smaller = check_vocab_size(task, tok, given=tokenizer, accept_smaller=accept_smaller)
        if state == "overwrite":
            _clear(out)
        parts.mkdir(parents=True, exist_ok=True)
        tmp = parts / "tokenizer.json"
        tok.save(tmp)
        os.replace(tmp, out / TOKENIZER)
        created = datetime.now(timezone.utc).isoformat(timespec="seconds")
        atomic_write_text(parts / _PLAN, json.dumps({"identity": plan.identity, "created": created}) + "\n")
    else:
        tok = load_tokenizer(out / TOKENIZER)
        created = json.loads((parts / _PLAN).read_text(encoding="utf-8")).get("created", "")
        if (parts / _JOURNAL).is_file():  # cut during the assembly: finish it (its manifest is decided)
            journal = json.loads((parts / _JOURNAL).read_text(encoding="utf-8"))
            return PrepareResult(out, _finish(out, journal), "resumed", len(plan.units), len(plan.units))
        # the run that trained this tokenizer took it, so only with the flag: the same command continues
        smaller = check_vocab_size(task, tok, given=tokenizer, accept_smaller=accept_smaller)
    ctx = dataclasses.replace(plan.context, dtype=dtype_for(tok.vocab_size))
    done: dict[int, dict[str, Any]] = {}
    for unit in plan.units:
        record = load_done(out, unit) if state == "resume" else None
        if record is not None:
            done[unit.index] = record
    kept = len(done)
    pending = [u for u in plan.units if u.index not in done]
    bar = tqdm(total=plan.total_bytes or None, unit="B", unit_scale=True, unit_divisor=1024, desc="prepare",
               dynamic_ncols=True, disable=not progress)
    bar.docs = sum(r["documents"] for r in done.values())
    bar.update(sum(u.size for u in plan.units if u.index in done))
    read = [0, 0]  # source bytes done, bytes written: the ratio estimates the space a full disk still needs

    def on_done(result: dict[str, Any]) -> None:
        if "error" in result:
            remaining = plan.total_bytes - sum(u.size for u in plan.units if u.index in done)
            ratio = read[1] / read[0] if read[0] else ctx_ratio
            raise_error(result, out, remaining, ratio, len(done))
        done[result["unit"]] = result
        read[0] += plan.units[result["unit"]].size
        read[1] += sum(i["bytes"] for s in result["shards"].values() for p in s for i in p["files"].values())

    ctx_ratio = 8 / 3.0  # before any unit finished: about 3 bytes of text per token, up to 4 bytes a token + index
    try:
        run_units(ctx, pending, workers, bar, on_done)
    finally:
        bar.close()
    manifest = _assemble(out, plan, tok, done, created, command, smaller)
    return PrepareResult(out, manifest, "resumed" if state == "resume" else "prepared", len(plan.units), kept)
