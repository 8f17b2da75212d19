"""The data plan of ``synthformer train --dry-run`` (:mod:`.plan`): what a run would read, without reading it, and
the vocabulary its model is sized for.

The tokenizer a run keeps is the run's own step (:mod:`synthformer.tasks.run.setup`): a resumed run's (its
directory's), ``init_from``'s, a prepared corpus's; the plan loads it as the run does (a small file, no corpus)
and sizes the model for it exactly. Until a tokenizer exists (it is trained on the data) the size comes from the
tokenizer settings (:func:`plan_vocabulary`: an upper bound, or a guess).

A prepared corpus (``task.prepared: DIR``, written by ``synthformer prepare``) is opened and checked by the run's
own :func:`~synthformer.tasks.prepared.reading.open_prepared` (the manifest, every listed file's size, its task type,
its tokenizer against the one the run keeps), without the scan of its token ids, and described from its
``manifest.json``: splits, documents, tokens, shards. Its examples per epoch are the length of the run's own
training dataset over the shards (:func:`~synthformer.tasks.prepared.reading.prepared_dataset`), which reads no
token (a ``pairs`` corpus's offsets, to count what its lengths cut or skip). Otherwise the sources are listed with
their sizes on disk (files, the local files of a Hugging Face ``data_files`` option) or named (a generator, a
remote Hugging Face data set).

Inputs that are not there yet (a data file, a prepared folder, a named data set that cannot be fetched now, a
SentencePiece model file) are *missing*: the plan names each and what makes it, and plans on; problems the run
would stop on otherwise are errors.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synthformer.common import ConfigError
from synthformer.data import MANIFEST, DataError, Tokenizer, read_manifest
from synthformer.tasks import (
    ResumedInputs,
    RunConfig,
    get_generator,
    init_from_missing,
    kept_tokenizer,
    open_prepared,
    prepared_dataset,
    read_model_config,
    saved_tokenizer,
    split_init_from,
)
from synthformer.train import RunDir

__all__ = ["DataPlan", "Problems", "Vocabulary", "format_bytes", "plan_data", "plan_inputs", "plan_vocabulary"]

#: More passes over the training data than this is reported (the run repeats its data many times).
MANY_EPOCHS = 10.0


@dataclass
class Problems:
    """What a plan sees besides its numbers, one line each."""

    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """The run would stop on these (the dry run ends with status 2)."""
    missing: list[str] = field(default_factory=list)
    """Inputs not there yet, each with what makes it (the dry run plans on and ends with status 0)."""


@dataclass(frozen=True)
class Vocabulary:
    """What the model is sized for: the vocabulary ``size`` and where it comes from, the number of classes
    (None where the run has none to give), the special ids ``(pad, bos, eos)``."""

    size: int
    source: str
    classes: int | None = 2
    special_ids: tuple[int, int, int] = (0, 2, 3)


@dataclass(frozen=True)
class Inputs:
    """What a planned run reads besides its data: the tokenizer it keeps (``kept``: tokenizer and class names, with
    ``source``, where from) and whether it starts from ``init_from``'s weights (``init_weights``)."""

    kept: ResumedInputs | None = None
    source: str = ""
    classes: int | None = None
    init_weights: bool = False


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


def plan_inputs(run: RunConfig, run_dir: str | Path | None, problems: Problems) -> Inputs:
    """The tokenizer the run keeps and whether it starts from ``init_from`` (the run's steps,
    :func:`~synthformer.tasks.run.setup.kept_tokenizer`); a resumed run is planned where ``run_dir`` holds one. An
    ``init_from`` run that is not there yet is missing (and the plan sizes the model from the settings).

    Raises:
        ConfigError: ``task.tokenizer`` / ``task.vocab_size`` not ``init_from``'s tokenizer's (as the run would).
    """
    saved = saved_tokenizer(run_dir)
    own_checkpoint = run_dir is not None and RunDir(run_dir).latest_checkpoint() is not None
    pretrained = run.init_from is not None and (saved is None or not own_checkpoint)  # its tokenizer or weights
    if pretrained and (missing := init_from_missing(str(run.init_from))) is not None:
        problems.missing.append(f"{missing}; the pretrained run is made by: synthformer train ITS_CONFIG "
                                f"--run-dir {split_init_from(str(run.init_from))[0]}")
        pretrained = False
    if saved is None and not pretrained:
        return Inputs()
    kept = kept_tokenizer(run, saved)
    if saved is not None:
        labels = kept.label_set
        return Inputs(kept, str(RunDir(run_dir).tokenizer_path), len(labels) if labels else None,
                      init_weights=pretrained)  # a resumed run before its first checkpoint starts from init_from
    rd = RunDir(split_init_from(str(run.init_from))[0])  # the pretrained model's classes: the run must match them
    classes = getattr(read_model_config(rd), "num_classes", None)
    return Inputs(kept, str(rd.tokenizer_path), classes, init_weights=True)


def plan_data(run: RunConfig, *, processes: int, inputs: Inputs, problems: Problems) -> tuple[DataPlan, Vocabulary]:
    """The data plan of ``run`` and the vocabulary of its model; problems go to ``problems``."""
    task = run.task
    kept = inputs.kept
    if task.prepared is not None:
        plan, corpus_tokenizer = _prepared_plan(run, Path(task.prepared), processes, kept, problems)
        if corpus_tokenizer is not None:  # the run's tokenizer: the corpus's (open_prepared checked the kept one)
            return plan, _vocabulary(corpus_tokenizer, "the prepared corpus's tokenizer", None)
    elif task.generator is not None:
        options = f" {task.generator_options}" if task.generator_options else ""
        plan = DataPlan("generator", [{"split": "all", "name": f"{task.generator}{options}"}])
    elif task.hf_name is not None and task.hf_options.get("data_files") is None:
        name = f"{task.hf_name}" + (f" ({task.hf_config})" if task.hf_config else "")
        plan = DataPlan("huggingface", [{"split": s, "name": f"{name} split {e!r}"} for s, e in task.hf_splits.items()])
    else:
        plan = DataPlan("files", _file_sources(run, problems))
    if kept is not None:
        return plan, _vocabulary(kept.tokenizer, inputs.source, inputs.classes)
    return plan, plan_vocabulary(run, problems)


def _vocabulary(tokenizer: Tokenizer, source: str, classes: int | None) -> Vocabulary:
    return Vocabulary(tokenizer.vocab_size, source, classes, (tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id))


def _file_sources(run: RunConfig, problems: Problems) -> list[dict[str, Any]]:
    """``{"split", "path", "bytes"}`` per file of the task's splits (or of a Hugging Face ``data_files`` option);
    a path without a file is missing, a named data set's file to fetch is said once."""
    task = run.task
    data_files = task.hf_options.get("data_files") if task.hf_name is not None else None
    if data_files is None:
        groups = {s: getattr(task, s) for s in ("train", "valid", "test") if getattr(task, s) is not None}
        key = "task.{split}"
    else:
        groups = data_files if isinstance(data_files, dict) else {"train": data_files}
        key = "task.hf_options.data_files"
    to_fetch = set(task.missing_data())
    if to_fetch:
        _named_data_plan(task.data, problems)
    sources = []
    for split, patterns in groups.items():
        for pattern in [patterns] if isinstance(patterns, str) else list(patterns):
            files = [] if str(pattern) in to_fetch else _files(str(pattern))
            if not files:
                sources.append({"split": split, "path": str(pattern), "bytes": None})
                if str(pattern) not in to_fetch:  # a named data set's file, fetched when the run starts: said above
                    problems.missing.append(f"{key.format(split=split)}: no file at {pattern} (put the data there, "
                                            f"or name where it is: {key.format(split=split)}=PATH)")
            sources += [{"split": split, "path": str(f), "bytes": f.stat().st_size} for f in files]
    return sources


def _named_data_plan(name: str, problems: Problems) -> None:
    """A named data set (``task.data``) not on this machine: the run fetches it first (a warning), or, when it
    cannot be fetched now, stops with the one-line refusal, which names the command that fetches it (missing).
    The plan itself fetches nothing."""
    from synthformer.data import cache_root, fetch_blocker, get_data_set, refusal

    entry = get_data_set(name)
    blocker = fetch_blocker()
    if blocker is not None:
        problems.missing.append(refusal(entry, blocker))
        return
    problems.warnings.append(f"task.data: {name} is not on this machine: the run fetches it first from "
                             f"{entry.source.describe()} into {cache_root() / name} (or run: synthformer data get "
                             f"{name})")


def _files(path: str) -> list[Path]:
    """The files a data path names: itself, the files under a folder, its glob matches, or (a ``parallel`` path
    prefix) ``PATH.*``. Only listed and sized, never opened."""
    if Path(path).is_file():
        return [Path(path)]
    if Path(path).is_dir():
        return sorted(p for p in Path(path).rglob("*") if p.is_file())
    matches = glob.glob(path) if glob.has_magic(path) else glob.glob(glob.escape(path) + ".*")
    return [Path(m) for m in sorted(matches) if Path(m).is_file()]


def _prepared_plan(run: RunConfig, folder: Path, processes: int, kept: ResumedInputs | None,
                   problems: Problems) -> tuple[DataPlan, Tokenizer | None]:
    """The plan of a prepared corpus and its tokenizer (None where it cannot be opened): opened by the run's own
    :func:`open_prepared` (``kept``: the tokenizer the run keeps, which must be the corpus's), its ids not scanned."""
    unreadable = DataPlan("prepared", [{"split": "all", "path": str(folder), "bytes": None}])
    try:
        if not (folder / MANIFEST).is_file():  # not there yet: no folder, or a prepare not finished
            read_manifest(folder)
        corpus = open_prepared(run, kept.tokenizer if kept is not None else None, scan_ids=False)
        tokenizer = corpus.tokenizer()
    except (DataError, ConfigError) as err:
        (problems.missing if not (folder / MANIFEST).is_file() else problems.errors).append(str(err))
        return unreadable, None
    manifest, tcfg = corpus.manifest, run.train
    splits = {name: {"documents": int(s.get("documents", 0)), "tokens": dict(s.get("tokens", {})),
                     "shards": len(s.get("shards", []))} for name, s in manifest.get("splits", {}).items()}
    summary = {"dir": str(folder), "task_type": manifest.get("task_type"), "layout": manifest.get("layout"),
               "dtype": manifest.get("dtype"), "tokenizer": manifest.get("tokenizer"), "splits": splits}
    plan = DataPlan("prepared", prepared=summary)
    if "train" not in {name.split(".", 1)[0] for name in corpus.splits}:  # "train.rte": a split stored per task
        problems.errors.append(f"{folder / MANIFEST}: no train split")
        return plan, tokenizer
    _check_lengths(run, manifest, problems.warnings)
    try:  # the run's own training dataset over the shards: its examples at the run's lengths (no token read)
        per_epoch = len(prepared_dataset(run, corpus, "train", tokenizer))
    except (DataError, ConfigError) as err:
        problems.errors.append(str(err))
        return plan, tokenizer
    plan.examples_per_epoch = per_epoch
    if per_epoch > 0:
        plan.epochs = tcfg.steps * tcfg.batch_size * tcfg.grad_accum * processes / per_epoch
        if plan.epochs < 1:
            problems.warnings.append(f"train.steps {tcfg.steps:,} sees {plan.epochs:.1%} of one epoch of the "
                                     f"training data ({per_epoch:,} examples): the rest is never used")
        elif plan.epochs > MANY_EPOCHS:
            problems.warnings.append(f"train.steps {tcfg.steps:,} repeats the training data {plan.epochs:,.1f} "
                                     f"times ({per_epoch:,} examples per epoch)")
    else:
        problems.errors.append(f"{folder / MANIFEST}: the train split holds no example of this run's length")
    return plan, tokenizer


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




def plan_vocabulary(run: RunConfig, problems: Problems | None = None) -> Vocabulary:
    """The vocabulary of a run whose tokenizer is not built yet (it is trained on the data): a generator's fixed
    vocabulary, else the tokenizer settings (an upper bound, or a guess for ``char`` and ``word``); classes from the
    training labels in a real run (2 assumed: the output layer only). A SentencePiece ``model_file`` that is not
    there yet goes to ``problems.missing``."""
    task = run.task
    classes = 2
    note = "; classes: from the training labels (2 assumed)" if "num_classes" in task.task_type.model_fields(2) else ""
    if task.generator is not None and (generator := get_generator(task.generator)[0]).fixed_vocabulary:
        return Vocabulary(generator.task_tokenizer(task).vocab_size, "the generator's vocabulary" + note, classes)
    kind = task.tokenizer_kind
    if kind == "byte":
        return Vocabulary(260, "byte tokenizer" + note, classes)
    if kind == "sentencepiece":
        size, where = _sentencepiece_vocabulary(task, problems if problems is not None else Problems())
        return Vocabulary(size, where + note, classes)
    sentinels = int(task.task_options.get("num_sentinels", 0))
    extra = f" + {sentinels} sentinels" if sentinels else ""
    if task.vocab_size is not None or kind == "bpe":
        size = task.vocab_size or 8000
        return Vocabulary(size + sentinels, f"{kind} of at most {size:,}{extra}: an upper bound until trained" + note,
                          classes)
    return Vocabulary(260 + sentinels, f"{kind}: unknown until built on the data, 260{extra} assumed" + note, classes)


def _sentencepiece_vocabulary(task: Any, problems: Problems) -> tuple[int, str]:
    """The ``sentencepiece`` kind's size: its ``vocab_size`` counts its own sentinels (T5's 100 unless
    ``tokenizer_options.num_sentinels`` says otherwise); a ``model_file`` is read (its pieces are known)."""
    from synthformer.data import DEFAULT_NUM_SENTINELS, SentencePieceTokenizer

    options = task.tokenizer_options
    own = int(options.get("num_sentinels", DEFAULT_NUM_SENTINELS))
    added = int(task.task_options.get("num_sentinels", 0)) if own == 0 else 0  # a task adds its own if it has none
    extra = f" + {added} sentinels" if added else ""
    model_file = options.get("model_file")
    if model_file is not None and Path(model_file).is_file():
        pieces = SentencePieceTokenizer.from_file(model_file).vocab_size
        return pieces + own + added, f"{model_file}: {pieces:,} pieces + {own} sentinels{extra}"
    if model_file is not None:
        problems.missing.append(f"task.tokenizer_options.model_file: no file at {model_file} (name a trained "
                                "SentencePiece model there, or leave model_file unset to train one on the data)")
    size = task.vocab_size or SentencePieceTokenizer.default_vocab_size
    return size + added, f"sentencepiece of at most {size:,} ids ({own} sentinels){extra}: an upper bound until trained"


def format_bytes(n: float) -> str:
    """``n`` bytes in GiB, MiB or KiB (two decimals), or in bytes."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{int(n)} B"
