"""``TaskConfig``: the ``task`` section of a run config: what is learned and from which data.

The checks that depend on the task type (its formats, options, the fields only it reads, its own checks) ask the
registered :class:`~synthformer.tasks.contract.TaskType` (looked up in :mod:`synthformer.tasks.registry`);
nothing here names a task type.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NewType

from synthformer.common import ConfigError
from synthformer.data import MAX_VOCAB_SIZE, OVERFLOW_POLICIES, TOKENIZER_KINDS

from ..registry import get_generator, get_task_type, list_generators, list_task_types

__all__ = ["TaskConfig", "VocabSize"]

#: ``task.vocab_size``'s annotation: an int once checked. The config loader passes a value of a type it does not
#: know as it is, so ``__post_init__`` sees what was written (``1e12``, which YAML reads as text; ``1.0e12``, a
#: float) and names it in the one message that also gives the range, instead of the loader's bare "expected int".
VocabSize = NewType("VocabSize", int)
#: The generic ``datasets`` builders that read local files (``hf_options.data_files``).
_GENERIC_BUILDERS = frozenset({"json", "csv", "text", "parquet"})
_VOCAB_SIZE_RANGE = f"an integer from 1 to {MAX_VOCAB_SIZE:,} (2**24, the most the tokenizer trainers handle)"


@dataclass
class TaskConfig:
    """What is learned and from which data.

    Data source: exactly one of ``train`` (files), ``generator`` (built-in, no download), ``hf_name``
    (Hugging Face ``datasets``; needs the optional package and, for remote sets, the network) or ``prepared`` (a
    folder of token shards written by ``synthformer prepare``: memory-mapped, never tokenized again; see
    ``docs/streaming.md``).

    File paths are relative to the working directory (the shipped configs assume the repository root); the run
    directory's saved ``config.yaml`` holds them made absolute, so ``eval`` and ``generate`` work from anywhere.

    Files, by task type and ``format`` (``None`` infers it):

    * ``lm``: ``text``: one UTF-8 file per split (read as raw bytes for ``tokenizer: byte``). Without a
      ``valid`` file the training file is cut contiguously: the last ``valid_fraction`` (+ ``test_fraction``)
      of it become the valid (and test) split (tiny_shakespeare: 0.1; enwik8: 0.05 + 0.05).
    * ``seq2seq``: ``parallel``: ``train`` etc. are path prefixes read as ``PREFIX.source_lang`` and
      ``PREFIX.target_lang`` (line-aligned, e.g. Multi30k's ``train.de`` / ``train.en``); ``tsv``: two tab-separated
      columns (source, target); ``jsonl`` / ``csv``: ``source_field`` and ``target_field`` of each record (e.g.
      CNN/DailyMail's ``article`` / ``highlights``). Inferred from the suffix, else ``parallel``.
    * ``classification``: ``jsonl``, ``csv``, ``tsv`` (``text_field`` / ``label_field``), ``label_text``
      (``label text`` lines, SST-2), ``listops_tsv`` (the LRA ListOps files) or ``cifar10`` (CIFAR-10's python
      batches: a batch file or a ``cifar-10-batches-py`` folder). Inferred from the suffix.
    * ``retrieval``: ``lra_tsv`` (LRA's Retrieval pairs: ``label id1 id2 text1 text2``).

    Without a ``valid`` file (seq2seq, classification) a seeded random ``valid_fraction`` of the training
    examples is held out.

    Generators (``generator_options`` in brackets, all optional):

    * ``pystdlib``: character LM over the ``.py`` files of the running Python's standard library, a file-level
      deterministic split (``valid_fraction`` / ``test_fraction`` of the files, valid 0.05 when left at 0;
      ``max_train_chars``, ``max_eval_chars``).
    * ``listops``: Long Range Arena ListOps, 10 classes (``num_train``, ``num_valid``, ``num_test``, ``seed``,
      and :func:`~synthformer.tasks.suites.lra.generate_listops`'s ``min_length``, ``max_length``, ``max_depth``,
      ``max_args``, ...; ``cache_dir`` writes the splits once and reads them back).
    * ``algorithmic:<copy|reverse|sort|add>``: digit-string seq2seq (``num_train``, ``num_valid``, ``num_test``,
      ``min_len``, ``max_len``, ``seed``).
    * ``pathfinder``: LRA's Pathfinder images, one token per pixel, 2 classes (``size`` 32 or 128 for Path-X,
      ``num_train``, ``num_valid``, ``num_test``, ``seed``).
    """

    type: str = "lm"
    """The task type: a name registered in :mod:`synthformer.tasks.registry` (``lm``, ``seq2seq``,
    ``classification``, ...)."""
    # -- data: a named data set
    data: str | None = None
    """A named data set of :mod:`synthformer.data.catalog` (``tiny_shakespeare``, ``sst2``, ``glue``, ...): its
    split files fill ``train`` / ``valid`` / ``test`` where those are unset, from a local copy
    (``$SYNTHFORMER_DATA``, ``../shared/data``), the cache of fetched copies, or fetched through ``datasets`` when
    the data is read (``synthformer data list`` / ``data get``). ``train`` etc. given too replace that split."""
    data_splits: dict[str, str] | None = None
    """With ``data``: our split (train, valid, test) -> the data set's split (``{train: train, valid: test}``: LRA
    validates on IMDb's test set). ``None``: each split the data set has, under its own name."""
    # -- data: files
    train: str | None = None
    """Training file (or path prefix for ``parallel`` seq2seq data)."""
    valid: str | None = None
    test: str | None = None
    format: str | None = None
    source_lang: str | None = None
    """``parallel`` seq2seq files: the source suffix (``de`` for ``train.de``)."""
    target_lang: str | None = None
    text_field: str | int = "text"
    label_field: str | int = "label"
    source_field: str = "source"
    target_field: str = "target"
    valid_fraction: float = 0.0
    """Hold this fraction of the training data out as the valid split when no ``valid`` file is given."""
    test_fraction: float = 0.0
    """LM and pystdlib only: hold this fraction out as the test split when no ``test`` file is given."""
    empty_lines: Literal["error", "skip"] = "error"
    train_limit: int | None = None
    """Use at most this many training examples (seq2seq, classification: a seeded random subset) or
    characters (LM: the beginning)."""
    eval_limit: int | None = None
    """The same for the valid and test splits."""
    # -- data: a prepared corpus
    prepared: str | None = None
    """A folder written by ``synthformer prepare`` (token shards, its tokenizer, its splits): the run trains on
    it without reading or tokenizing the sources, in memory that does not grow with the corpus."""
    # -- data: built-in generators
    generator: str | None = None
    generator_options: dict[str, Any] = field(default_factory=dict)
    # -- data: Hugging Face datasets
    hf_name: str | None = None
    hf_config: str | None = None
    hf_splits: dict[str, str] = field(default_factory=lambda: {"train": "train", "valid": "validation"})
    """Our split name (train, valid, test) -> the data set's split expression."""
    hf_options: dict[str, Any] = field(default_factory=dict)
    """Passed to ``datasets.load_dataset`` (``data_files``, ``cache_dir``, ...)."""
    # -- tokenizer
    tokenizer: str | None = None
    """``char``, ``byte``, ``word``, ``bpe`` or ``sentencepiece`` (T5's: trained, or read from
    ``tokenizer_options.model_file``), trained on the training split and saved in the run directory.
    ``None``: the generator's own vocabulary, else ``char`` (lm), ``bpe`` (seq2seq), ``word`` (classification)."""
    vocab_size: VocabSize | None = None
    """Tokenizer size cap (specials included); ``None``: the kind's default. An integer from 1 to 16,777,216
    (2**24, :data:`~synthformer.data.MAX_VOCAB_SIZE`): the ``tokenizers`` BPE trainer reserves memory for the whole
    cap up front and aborts the process beyond what it can allocate, so a larger value is refused when the config
    is read. ``synthformer prepare`` refuses a cap the training data cannot reach (``--accept-smaller-vocab``
    takes the smaller vocabulary)."""
    tokenizer_options: dict[str, Any] = field(default_factory=dict)
    """Passed to the tokenizer's training (``split``, ``lowercase``, ``min_frequency``; sentencepiece:
    ``model_file``, ``num_sentinels``, ``character_coverage``, ``byte_fallback``, ``num_threads``)."""
    # -- lengths
    max_len: int = 128
    """LM: the context (block) length; seq2seq: the longest source; classification: the longest input."""
    max_target_len: int | None = None
    """seq2seq: the longest decoder sequence (target tokens + 1); ``None``: ``max_len``."""
    overflow: str | None = None
    """What to do with longer examples: ``truncate``, ``skip`` or ``error``. ``None`` (the default) truncates
    too, but refuses to start when more than half of the training examples would be cut (a model trained on
    them can learn nothing; set ``truncate`` explicitly to train on them anyway)."""
    stride: int | None = None
    """LM: step between training blocks (``None``: ``max_len``, no overlap)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Settings of the task type itself (``TaskType.option_defaults``: ``span_corruption``'s noise density, span
    length and sentinel count; ``text_to_text``'s tasks and mixing cap)."""

    def __post_init__(self) -> None:
        task_type = self.task_type  # an unknown type fails here, naming the valid ones
        self._resolve_data()  # a named data set's files, before anything looks at train / valid / test
        if (task_type.default_generator is not None and self.train is None and self.hf_name is None
                and self.prepared is None):
            self.generator = self.generator or task_type.default_generator
        sources = [name for name, value in (("train", self.train), ("generator", self.generator),
                                            ("hf_name", self.hf_name), ("prepared", self.prepared))
                   if value is not None]
        if self.prepared is not None and len(sources) > 1:
            others = [s for s in sources if s != "prepared"]
            others += [key for key in ("valid", "test") if getattr(self, key) is not None]
            raise ConfigError(
                f"prepared: a prepared corpus is the run's whole data source (it was made from the files), so "
                f"{' and '.join(others)} must be unset: add {' '.join(f'task.{o}=null' for o in others)} to the "
                "command, or drop them from the config"
            )
        if len(sources) != 1:
            given = ", ".join(sources) if sources else "none"
            raise ConfigError(
                "train: give exactly one data source: 'data' (a named data set: synthformer data list), "
                f"'train' (files), 'generator' ({', '.join(list_generators())}), "
                f"'hf_name' (a Hugging Face data set) or 'prepared' (a folder written by synthformer prepare); "
                f"given: {given}"
            )
        for name in ("valid_fraction", "test_fraction"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ConfigError(f"{name}: expected a value in [0, 1), got {value!r}")
        if self.valid_fraction + self.test_fraction >= 1.0:
            raise ConfigError(f"valid_fraction: valid_fraction + test_fraction must be < 1, got "
                              f"{self.valid_fraction} + {self.test_fraction}")
        if self.overflow is not None and self.overflow not in OVERFLOW_POLICIES:
            raise ConfigError(f"overflow: expected one of {list(OVERFLOW_POLICIES)}, got {self.overflow!r}")
        for name in ("max_len", "max_target_len", "stride", "train_limit", "eval_limit"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name}: expected an integer >= 1, got {value!r}")
        self._check_vocab_size()
        self._check_generator()
        self._check_reads(task_type)
        self._check_files(task_type)
        self._check_tokenizer()
        unknown = sorted(set(self.options) - set(task_type.option_defaults))
        if unknown:
            raise ConfigError(f"options: unknown option(s) {unknown} for task type {self.type!r}; valid: "
                              f"{', '.join(sorted(task_type.option_defaults)) or 'none'}")
        task_type.check_config(self)

    # -- the registered parts -------------------------------------------------------------------------------
    @property
    def task_type(self) -> Any:
        """The registered :class:`~synthformer.tasks.contract.TaskType` of ``type`` (typed loosely: see
        :mod:`synthformer.tasks.registry`)."""
        try:
            return get_task_type(self.type)
        except ConfigError as err:
            raise ConfigError(f"type: {err}") from None

    @property
    def generator_name(self) -> str | None:
        """The generator without its argument (``algorithmic:reverse`` -> ``algorithmic``)."""
        return None if self.generator is None else self.generator.split(":", 1)[0]

    @property
    def generator_arg(self) -> str | None:
        """The generator's argument (``algorithmic:reverse`` -> ``reverse``), if any."""
        if self.generator is None or ":" not in self.generator:
            return None
        return self.generator.split(":", 1)[1]

    @property
    def task_options(self) -> dict[str, Any]:
        """``options`` over the task type's defaults."""
        return {**self.task_type.option_defaults, **self.options}

    # -- checks ---------------------------------------------------------------------------------------------
    def _resolve_data(self) -> None:
        """``data``: fill the unset splits with the files of the named data set's copy (found locally, else where
        the fetched copy goes; :meth:`ensure_data` fetches it). Looks at the file system only: no network."""
        if self.data is None:
            if self.data_splits is not None:
                raise ConfigError("data_splits: set only together with 'data' (a named data set)")
            return
        from synthformer.data import cache_root, find_local, get_data_set, has_split

        try:
            entry = get_data_set(self.data)
        except ConfigError as err:
            raise ConfigError(f"data: {err}") from None
        # a generic builder (hf_name: json, ...) reads the data set's files through datasets: they become its
        # data_files (the T5 pretraining configs cut IMDb's train file into train and valid with hf_splits)
        generic = self.hf_name in _GENERIC_BUILDERS
        others = [name for name in ("generator", "hf_name", "prepared") if getattr(self, name) is not None
                  and not (name == "hf_name" and generic)]
        if others:
            raise ConfigError(f"data: the named data set {self.data!r} is the run's data source, so "
                              f"{' and '.join(others)} must be unset (or drop data: task.data=null)")
        found = find_local(entry)
        folder = found.folder if found is not None else cache_root() / entry.name
        splits = self.data_splits
        if splits is None:  # a local copy may lack a split the source has (PersonaChat's train)
            splits = {s: s for s in entry.splits if s in ("train", "valid", "test")
                      and (found is None or has_split(entry, folder, s))}
        files: dict[str, str] = {}
        for ours, theirs in splits.items():
            if ours not in ("train", "valid", "test") or theirs not in entry.splits:
                raise ConfigError(f"data_splits: expected train / valid / test -> a split of {self.data!r} "
                                  f"({', '.join(entry.splits)}); got {ours!r}: {theirs!r}")
            rel = entry.splits[theirs]
            files[ours] = str(folder if rel == "." else folder / rel)
        if generic:
            if "data_files" not in self.hf_options:
                self.hf_options = {**self.hf_options, "data_files": files}
            return
        for ours, path in files.items():
            if getattr(self, ours) is None:
                setattr(self, ours, path)

    def _data_paths(self) -> list[str]:
        """The files this config reads: the split files and a generic builder's local ``data_files``."""
        paths = [p for p in (self.train, self.valid, self.test) if p is not None]
        data_files = self.hf_options.get("data_files") if self.hf_name in _GENERIC_BUILDERS else None
        groups = data_files.values() if isinstance(data_files, dict) else [data_files] if data_files else []
        for group in groups:
            paths.extend([group] if isinstance(group, str) else [str(p) for p in group])
        return paths

    def missing_data(self) -> list[str]:
        """The files of the named data set (``data``) this config reads that are not on this machine yet: a
        fetch (:meth:`ensure_data`) would write them. Empty without ``data``."""
        if self.data is None:
            return []
        from synthformer.data import cache_root

        folder = (cache_root() / self.data).resolve()
        paths = [Path(p) for p in self._data_paths()]
        return [str(p) for p in paths if not p.exists() and (p.resolve() == folder or folder in p.resolve().parents)]

    def ensure_data(self) -> None:
        """Fetch the named data set (``data``) into the cache of fetched copies when files this config reads are
        not on this machine yet.

        Raises:
            ConfigError: it cannot be fetched now; one line naming the data set, its source and how to provide it.
        """
        if self.data is None:
            return
        from synthformer.data import ensure, get_data_set

        ensure(get_data_set(self.data), self._data_paths())

    def _check_generator(self) -> None:
        if self.generator is None:
            if self.generator_options:
                raise ConfigError("generator_options: set only together with 'generator'")
            return
        try:
            gen, _ = get_generator(self.generator)
        except ConfigError as err:
            raise ConfigError(f"generator: {err}") from None
        if gen.task_type not in (self.type, self.task_type.raw_type):
            raise ConfigError(f"generator: {self.generator!r} makes a {gen.task_type!r} task, but type is "
                              f"{self.type!r}")

    def _check_reads(self, task_type: Any) -> None:
        """A field only some task types (or generators) read, set where nothing reads it, is an error."""
        types = [get_task_type(n) for n in list_task_types()]
        readers = {name: [t.name for t in types if name in t.reads] for t in types for name in t.reads}
        gen_reads = get_generator(self.generator)[0].reads if self.generator is not None else frozenset()
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        for name, owners in readers.items():
            if getattr(self, name) == defaults[name] or name in task_type.reads or name in gen_reads:
                continue
            raise ConfigError(f"{name}: only used by type {' or '.join(repr(t) for t in owners)}, got type "
                              f"{self.type!r}")

    def _check_files(self, task_type: Any) -> None:
        if self.format is not None:
            valid = task_type.formats
            if self.format not in valid:
                raise ConfigError(f"format: expected one of {list(valid)} for type {self.type!r}, got {self.format!r}")
            if self.train is None:
                raise ConfigError("format: only used with files ('train'); generators, HF sets and prepared "
                                  "corpora have no format")
        if self.train is None and (self.valid is not None or self.test is not None):
            key = "valid" if self.valid is not None else "test"
            if self.prepared is not None:
                raise ConfigError(f"{key}: a prepared corpus holds its own splits (prepared: {self.prepared}); "
                                  f"leave {key} unset")
            raise ConfigError(f"{key}: split files need a 'train' file too (the data source is "
                              f"{'generator' if self.generator else 'hf_name'})")
        if self.hf_name is not None:
            unknown = sorted(set(self.hf_splits) - {"train", "valid", "test"})
            if unknown or "train" not in self.hf_splits:
                raise ConfigError(f"hf_splits: keys must be train (required), valid, test; got "
                                  f"{sorted(self.hf_splits)}")

    def _check_vocab_size(self) -> None:
        value = self.vocab_size
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_VOCAB_SIZE:
            raise ConfigError(f"vocab_size: expected {_VOCAB_SIZE_RANGE}, or null for the tokenizer kind's default; "
                              f"got {value!r}")

    def _check_tokenizer(self) -> None:
        if self.tokenizer is None:
            return
        if self.generator is not None and get_generator(self.generator)[0].fixed_vocabulary:
            raise ConfigError(f"tokenizer: the generator {self.generator!r} has its own fixed vocabulary; "
                              f"leave tokenizer unset (null), got {self.tokenizer!r}")
        if self.tokenizer not in TOKENIZER_KINDS:
            raise ConfigError(f"tokenizer: expected one of {list(TOKENIZER_KINDS)}, got {self.tokenizer!r}")
        if self.tokenizer == "byte" and self.vocab_size not in (None, 260):
            raise ConfigError(f"vocab_size: the byte tokenizer has exactly 260 ids, got {self.vocab_size!r}")

    # -- derived --------------------------------------------------------------------------------------------
    @property
    def file_format(self) -> str | None:
        """``format``, or the one the task type infers from the training file's name (``None`` without files)."""
        if self.train is None:
            return None
        if self.format is not None:
            return self.format
        return self.task_type.infer_format(self.train)

    @property
    def tokenizer_kind(self) -> str:
        """The tokenizer actually used: ``tokenizer``, else the generator's, else the task type's default."""
        if self.tokenizer is not None:
            return self.tokenizer
        if self.generator is not None:
            kind = get_generator(self.generator)[0].tokenizer_kind
            if kind is not None:
                return kind
        return self.task_type.default_tokenizer

    @property
    def target_len(self) -> int:
        """seq2seq: the longest decoder sequence (``max_target_len`` or ``max_len``)."""
        return self.max_target_len if self.max_target_len is not None else self.max_len

    @property
    def has_test_split(self) -> bool:
        """Whether the data source gives a test split."""
        if self.prepared is not None:
            from synthformer.data import read_manifest

            try:
                return "test" in read_manifest(self.prepared)["splits"]
            except (OSError, ValueError):  # DataError, ConfigError: reported when the data is opened
                return False
        if self.generator is not None:
            return get_generator(self.generator)[0].has_test_split(self)
        return self.task_type.has_test_split(self)
