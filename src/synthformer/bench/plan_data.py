"""The data plan of ``synthformer train --dry-run`` (:mod:`.plan`): what a run would read, without reading it.

A prepared corpus (``task.prepared: DIR``, written by ``synthformer prepare``) is described from its
``manifest.json`` alone: splits, documents, tokens, shards, the tokenizer; the shard files are only looked up
(existence and size), never opened. Otherwise the sources are listed with their sizes on disk (files, the local
files of a Hugging Face ``data_files`` option) or named (a generator, a remote Hugging Face data set).

The manifest is read with the prepared format's own :func:`~synthformer.data.prepared.read_manifest` (the same
checks and messages as training), not through the corpus reader, so that a plan needs nothing but the folder's
listing and the manifest.
"""

from __future__ import annotations

import glob
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synthformer.common import ConfigError
from synthformer.data import MANIFEST, DataError, np_dtype, read_manifest
from synthformer.tasks import RunConfig, get_generator, split_init_from
from synthformer.train import RunDir

__all__ = ["DataPlan", "format_bytes", "manifest_problems", "plan_data", "plan_vocabulary"]

#: More passes over the training data than this is reported (the run repeats its data many times).
MANY_EPOCHS = 10.0


@dataclass
class DataPlan:
    """What a run would read: ``kind`` is ``prepared``, ``files``, ``generator`` or ``huggingface``."""

    kind: str
    sources: list[dict[str, Any]] = field(default_factory=list)
    """``{"split", "path", "bytes"}`` per file (bytes None when missing); a generator or data set by name."""
    prepared: dict[str, Any] | None = None
    """The manifest's summary: ``dir``, ``task_type``, ``layout``, ``dtype``, ``tokenizer``, ``splits``."""
    examples_per_epoch: int | None = None
    epochs: float | None = None
    """Passes over the training split at ``train.steps`` (None when unknown before tokenizing)."""

    def lines(self) -> list[str]:
        """Human-readable lines (the first one says what the source is)."""
        out: list[str] = []
        if self.prepared is not None:
            p = self.prepared
            tok = p.get("tokenizer") or {}
            out.append(f"prepared corpus {p['dir']} (task {p.get('task_type')}, layout {p.get('layout')}, "
                       f"{p.get('dtype')}; tokenizer {tok.get('kind')}, {tok.get('vocab_size')} ids)")
            for name, split in p["splits"].items():
                tokens = ", ".join(f"{n:,} {f}" for f, n in split["tokens"].items())
                out.append(f"{name}: {split['shards']} shard(s), {split['documents']:,} documents, {tokens} tokens")
        else:
            out.append({"files": "files (not read)", "generator": "generated in memory at the start of training",
                        "huggingface": "a Hugging Face data set (not opened)",
                        # task.prepared names a folder without a readable manifest: the problems say why
                        "prepared": "a prepared corpus that cannot be read (see the problems below)"}[self.kind])
            for s in self.sources:
                size = "missing" if s.get("bytes") is None else format_bytes(s["bytes"])
                out.append(f"{s['split']}: {s['path']} ({size})" if "path" in s else f"{s['split']}: {s['name']}")
        if self.epochs is not None:
            out.append(f"about {self.examples_per_epoch:,} training examples per epoch: train.steps covers "
                       f"{self.epochs:,.3g} epoch(s)")
        else:
            out.append("epochs at train.steps: unknown before tokenizing (a prepared corpus gives its token counts: "
                       "synthformer prepare)")
        return out


def manifest_problems(folder: str | Path, manifest: dict[str, Any]) -> list[str]:
    """Shard files of the manifest that are missing or of the wrong size (looked up, not read), and a tokenizer
    file that is missing or differs from the manifest's hash: one line each."""
    folder = Path(folder)
    problems = []
    itemsize = np_dtype(str(manifest["dtype"])).itemsize  # read_manifest checked the key
    for split in manifest.get("splits", {}).values():
        for shard in split.get("shards", []):
            for name in _shard_files(manifest, shard):
                path = folder / name
                if not path.is_file():
                    problems.append(f"{path}: shard file missing; run synthformer prepare again to rebuild it")
                    continue
                field_name = name[len(shard["name"]) + 1: -len(".bin")] if name.endswith(".bin") else None
                expected = shard.get("tokens", {}).get(field_name, 0) * itemsize if field_name else None
                if expected and path.stat().st_size != expected:
                    problems.append(f"{path}: {path.stat().st_size} bytes, the manifest says {expected}; the shard "
                                    "is truncated or foreign: run synthformer prepare again")
    tok = folder / str((manifest.get("tokenizer") or {}).get("file", "tokenizer.json"))
    expected_hash = (manifest.get("tokenizer") or {}).get("sha256")
    if not tok.is_file():
        problems.append(f"{tok}: the prepared corpus's tokenizer is missing; prepare it again")
    elif expected_hash and _sha256(tok) != expected_hash:
        problems.append(f"{tok}: differs from the tokenizer the shards were made with (sha256); prepare it again")
    return problems


def _shard_files(manifest: dict[str, Any], shard: dict[str, Any]) -> list[str]:
    """The files of a shard: those its checksums name, else ``<name>.<field>.bin`` / ``.idx.npy`` per field."""
    if isinstance(shard.get("sha256"), dict) and shard["sha256"]:
        return sorted(shard["sha256"])
    return [f"{shard['name']}.{f}.{ext}" for f in manifest.get("fields", ["text"]) for ext in ("bin", "idx.npy")]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def plan_data(run: RunConfig, *, processes: int, run_dir: str | Path | None, warnings: list[str],
              errors: list[str]) -> DataPlan:
    """The data plan of ``run``; problems are appended to ``warnings`` and (fatal: training would stop on them)
    ``errors``, one line each."""
    task = run.task
    prepared = getattr(task, "prepared", None)  # the prepared-corpus setting, where present
    if prepared:
        return _prepared_plan(run, Path(prepared), processes, run_dir, warnings, errors)
    if task.generator is not None:
        options = f" {task.generator_options}" if task.generator_options else ""
        return DataPlan("generator", [{"split": "all", "name": f"{task.generator}{options}"}])
    if task.hf_name is not None:
        return _hf_plan(run, warnings, errors)
    sources = []
    to_fetch = set(task.missing_data())
    if to_fetch:
        _named_data_plan(task.data, warnings, errors)
    for split in ("train", "valid", "test"):
        path = getattr(task, split)
        if path is None:
            continue
        if path in to_fetch:  # a named data set's file, fetched when the run starts: said once above
            sources.append({"split": split, "path": path, "bytes": None})
            continue
        files = _files(path)
        if not files:
            (errors if split == "train" else warnings).append(f"task.{split}: no file at {path}")
            sources.append({"split": split, "path": path, "bytes": None})
        sources += [{"split": split, "path": str(f), "bytes": f.stat().st_size} for f in files]
    return DataPlan("files", sources)


def _named_data_plan(name: str, warnings: list[str], errors: list[str]) -> None:
    """A named data set (``task.data``) not on this machine: the run fetches it first (a warning), or, when it
    cannot be fetched now, stops with the one-line refusal (an error). The plan itself fetches nothing."""
    from synthformer.data import cache_root, fetch_blocker, get_data_set, refusal

    entry = get_data_set(name)
    blocker = fetch_blocker()
    if blocker is not None:
        errors.append(refusal(entry, blocker))
        return
    warnings.append(f"task.data: {name} is not on this machine: the run fetches it first from "
                    f"{entry.source.describe()} into {cache_root() / name} (or run: synthformer data get {name})")


def _files(path: str) -> list[Path]:
    """The files a data path names: itself, the files under a folder, its glob matches, or (a ``parallel`` path
    prefix) ``PATH.*``. Only listed and sized, never opened."""
    if Path(path).is_file():
        return [Path(path)]
    if Path(path).is_dir():
        return sorted(p for p in Path(path).rglob("*") if p.is_file())
    matches = glob.glob(path) if glob.has_magic(path) else glob.glob(glob.escape(path) + ".*")
    return [Path(m) for m in sorted(matches) if Path(m).is_file()]


def _hf_plan(run: RunConfig, warnings: list[str], errors: list[str]) -> DataPlan:
    """A Hugging Face data set: its local ``data_files`` with their sizes, else its name (never opened)."""
    task = run.task
    data_files = task.hf_options.get("data_files")
    if data_files is None:
        name = f"{task.hf_name}" + (f" ({task.hf_config})" if task.hf_config else "")
        return DataPlan("huggingface", [{"split": s, "name": f"{name} split {e!r}"} for s, e in task.hf_splits.items()])
    groups = data_files if isinstance(data_files, dict) else {"train": data_files}
    sources = []
    to_fetch = set(task.missing_data())
    if to_fetch:
        _named_data_plan(task.data, warnings, errors)
    for split, patterns in groups.items():
        for pattern in [patterns] if isinstance(patterns, str) else list(patterns):
            if str(pattern) in to_fetch:  # a named data set's file, fetched when the run starts
                sources.append({"split": split, "path": str(pattern), "bytes": None})
                continue
            files = _files(str(pattern))
            if not files:
                errors.append(f"task.hf_options.data_files: no file at {pattern}")
            sources += [{"split": split, "path": str(f), "bytes": f.stat().st_size} for f in files]
    return DataPlan("files", sources)


def _prepared_plan(run: RunConfig, folder: Path, processes: int, run_dir: str | Path | None,
                   warnings: list[str], errors: list[str]) -> DataPlan:
    try:
        manifest = read_manifest(folder)
    except (DataError, ConfigError) as err:
        errors.append(str(err))
        return DataPlan("prepared", [{"split": "all", "path": str(folder), "bytes": None}])
    errors.extend(manifest_problems(folder, manifest))
    task, tcfg = run.task, run.train
    if manifest.get("task_type") not in (task.type, task.task_type.raw_type):
        errors.append(f"{folder / MANIFEST}: prepared for task type {manifest.get('task_type')!r}, the run is "
                      f"{task.type!r}; prepare it with this config")
    theirs = (manifest.get("tokenizer") or {}).get("sha256")
    for own in _run_tokenizers(run, run_dir):
        if theirs and _sha256(own) != theirs:
            errors.append(f"{own}: the run's tokenizer differs from the prepared corpus's ({folder}); prepare the "
                          "corpus with this tokenizer or train into a new run directory")
    splits = {name: {"documents": int(s.get("documents", 0)), "tokens": dict(s.get("tokens", {})),
                     "shards": len(s.get("shards", []))} for name, s in manifest.get("splits", {}).items()}
    summary = {"dir": str(folder), "task_type": manifest.get("task_type"), "layout": manifest.get("layout"),
               "dtype": manifest.get("dtype"), "tokenizer": manifest.get("tokenizer"), "splits": splits}
    plan = DataPlan("prepared", prepared=summary)
    train = manifest.get("splits", {}).get("train")
    if train is None:
        errors.append(f"{folder / MANIFEST}: no train split")
        return plan
    _check_lengths(run, manifest, warnings)
    if manifest.get("layout") == "pairs":
        per_epoch = int(train.get("documents", 0))
    else:  # documents packed into examples: raw tokens per example (span corruption: more than max_len)
        extras = task.task_type.report_extras(run, 1)
        per_example = int(extras.get("raw_tokens_per_input") or task.stride or task.max_len)
        per_epoch = int(train.get("tokens", {}).get("text", 0)) // per_example
    plan.examples_per_epoch = per_epoch
    if per_epoch > 0:
        plan.epochs = tcfg.steps * tcfg.batch_size * tcfg.grad_accum * processes / per_epoch
        if plan.epochs < 1:
            warnings.append(f"train.steps {tcfg.steps:,} sees {plan.epochs:.1%} of one epoch of the training data "
                            f"({per_epoch:,} examples): the rest is never used")
        elif plan.epochs > MANY_EPOCHS:
            warnings.append(f"train.steps {tcfg.steps:,} repeats the training data {plan.epochs:,.1f} times "
                            f"({per_epoch:,} examples per epoch)")
    else:
        errors.append(f"{folder / MANIFEST}: the train split holds no example of this run's length")
    return plan


def _init_from_dir(run: RunConfig) -> str | None:
    """The run directory of ``init_from`` (``RUN@best`` / ``RUN@STEP`` name a checkpoint inside RUN)."""
    return split_init_from(str(run.init_from))[0] if run.init_from is not None else None


def _run_tokenizers(run: RunConfig, run_dir: str | Path | None) -> list[Path]:
    """Tokenizer files the run would use instead of training one: its own run directory's (a resumed run) and
    its ``init_from`` run's."""
    found = []
    for folder in (run_dir, _init_from_dir(run)):
        if folder is not None and RunDir(folder).tokenizer_path.is_file():
            found.append(RunDir(folder).tokenizer_path)
    return found


def _check_lengths(run: RunConfig, manifest: dict[str, Any], warnings: list[str]) -> None:
    """Examples longer than the run's lengths would be truncated: reported when the manifest records the longest
    document of a split (``"longest": {field: tokens}``) for examples read whole (the ``pairs`` layout)."""
    if manifest.get("layout") != "pairs":
        return  # documents are packed into examples of the run's length: nothing is cut
    limits = {"source": run.task.max_len, "target": run.task.target_len}
    for name, split in manifest.get("splits", {}).items():
        longest = split.get("longest") or {}
        for field_name, limit in limits.items():
            n = longest.get(field_name) if isinstance(longest, dict) else None
            if isinstance(n, int) and n > limit:
                key = "task.max_len" if field_name == "source" else "task.max_target_len"
                warnings.append(f"{name}: its longest {field_name} has {n:,} tokens, {key} is {limit:,}: longer "
                                "examples would be truncated")


def plan_vocabulary(run: RunConfig, data: DataPlan, run_dir: str | Path | None = None) -> tuple[int, str, int]:
    """(vocabulary size, where it comes from, classes) for sizing the model without building the tokenizer: a
    prepared corpus's tokenizer, the model config of the run directory (a resumed run) or of ``init_from``, a
    generator's fixed vocabulary, else the tokenizer settings (an upper bound, or a guess for ``char``)."""
    task = run.task
    classes = 2  # from the training labels in a real run: the output layer only
    note = "; classes: from the training labels (2 assumed)" if "num_classes" in task.task_type.model_fields(2) else ""
    tok = (data.prepared or {}).get("tokenizer") or {}
    if tok.get("vocab_size"):
        return int(tok["vocab_size"]), "the prepared corpus's tokenizer" + note, classes
    for folder in (run_dir, _init_from_dir(run)):
        path = RunDir(folder).model_config_path if folder is not None else None
        if path is not None and path.is_file():
            saved = json.loads(path.read_text(encoding="utf-8"))
            return int(saved["vocab_size"]), f"{path}", int(saved.get("num_classes") or classes)
    if task.generator is not None and (generator := get_generator(task.generator)[0]).fixed_vocabulary:
        return generator.task_tokenizer(task).vocab_size, "the generator's vocabulary" + note, classes
    kind = task.tokenizer_kind
    if kind == "byte":
        return 260, "byte tokenizer" + note, classes
    if kind == "sentencepiece":
        size, where = _sentencepiece_vocabulary(task)
        return size, where + note, classes
    sentinels = int(task.task_options.get("num_sentinels", 0))
    extra = f" + {sentinels} sentinels" if sentinels else ""
    if task.vocab_size is not None or kind == "bpe":
        size = task.vocab_size or 8000
        return size + sentinels, f"{kind} of at most {size:,}{extra}: an upper bound until trained" + note, classes
    return 260 + sentinels, f"{kind}: unknown until built on the data, 260{extra} assumed" + note, classes


def _sentencepiece_vocabulary(task: Any) -> tuple[int, str]:
    """The ``sentencepiece`` kind's size: its ``vocab_size`` counts its own sentinels (T5's 100 unless
    ``tokenizer_options.num_sentinels`` says otherwise); a ``model_file`` is read (its pieces are known)."""
    from synthformer.data import DEFAULT_NUM_SENTINELS, SentencePieceTokenizer

    options = task.tokenizer_options
    own = int(options.get("num_sentinels", DEFAULT_NUM_SENTINELS))
    added = int(task.task_options.get("num_sentinels", 0)) if own == 0 else 0  # a task adds its own if it has none
    extra = f" + {added} sentinels" if added else ""
    if options.get("model_file") is not None:
        pieces = SentencePieceTokenizer.from_file(options["model_file"]).vocab_size
        return pieces + own + added, f"{options['model_file']}: {pieces:,} pieces + {own} sentinels{extra}"
    size = task.vocab_size or SentencePieceTokenizer.default_vocab_size
    return size + added, f"sentencepiece of at most {size:,} ids ({own} sentinels){extra}: an upper bound until trained"


def format_bytes(n: float) -> str:
    """``n`` bytes in GiB, MiB or KiB (two decimals), or in bytes."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{int(n)} B"
