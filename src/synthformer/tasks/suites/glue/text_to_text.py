"""Task type ``text_to_text``: T5-style multi-task finetuning on GLUE / SuperGLUE (the paper's Tables 5 and 6).

Every task becomes text to text: the input is the task's prefix and fields (``rte sentence1: ... sentence2:
...``), the target its verbalized label (``entailment``; STS-B scores as text rounded to 0.2); see
:mod:`.reader` for each task's format. One encoder-decoder learns the mixture of ``options.tasks``.

Data (``task``): ``train`` is the folder holding the official layout (``<TASK>/train.tsv`` and ``dev.tsv`` as GLUE
distributes them, e.g. ``../shared/data/glue``; SuperGLUE ``<Task>/train.jsonl`` / ``val.jsonl``), or
``hf_name: glue`` to load each task with Hugging Face ``datasets`` (``glue`` / ``super_glue``, from the local
cache when offline). The dev sets are the ``valid`` split (GLUE test labels are not public, so there is no test
split). ``train_limit`` / ``eval_limit`` cap each task's examples (a seeded subset).

Mixture: examples-proportional with a cap (T5's section 3.5.2): task ``m`` has ``min(n_m, mixing_cap)`` slots in
each epoch of the mixture, so its share of the training stream is ``min(n_m, K) / sum_j min(n_j, K)``. As in T5
the examples are drawn on the fly from the whole task: a task larger than the cap fills its slots with the next
``K`` examples of a seeded permutation of all its examples in each epoch (:mod:`synthformer.data.mixture`), so
every epoch shows new ones. The rates are logged and kept in the run's data info. The tokenizer is still trained
on a bounded seeded sample: the texts of ``K`` examples of each task (:func:`mixture`). From a prepared corpus
(``task.prepared``) the mixture is drawn from its ``train.<task>`` splits (:mod:`.text_to_text_prepared`).

Evaluation: teacher-forced ``loss`` / ``perplexity`` over all dev examples, and ``glue``: greedy decoding of each
task's dev set scored with the official metrics (:mod:`.metrics`: scikit-learn / scipy),
reported as ``<task>_<metric>`` (percent; MNLI as ``mnli_matched_*`` and ``mnli_mismatched_*``), ``<task>_invalid``
(predictions that are no valid label: counted wrong), and ``glue_average`` / ``super_glue_average`` for the tasks of
each benchmark present (T5's averages: two-metric tasks and MNLI's two dev sets averaged first, WNLI left out).
STS-B correlations are computed against the unrounded gold scores (GLUE's official metric; T5 scored against its
rounded targets). During training at most ``eval.train_decode_examples`` examples per dev set are decoded (0: only
the loss).

SuperGLUE: the tasks ``boolq cb copa multirc record super_glue_rte wic wsc`` (``super_glue_rte`` is SuperGLUE's
RTE, from ``RTE/*.jsonl``) and the diagnostics ``axb`` and ``axg``, which have no training split: they are only
evaluated (cast as RTE, so a model trained on ``super_glue_rte`` or ``rte`` answers them) and stay out of the
average. ``super_glue_average`` is the mean over the SuperGLUE tasks present (CB, MultiRC and ReCoRD as the mean of
their two metrics), and ``super_glue_missing`` names the ones of the eight that were not evaluated (``none``).
GLUE and SuperGLUE in one mixture: ``train`` is the GLUE folder and ``options.super_glue_dir`` the SuperGLUE one.

Options (``task.options``): ``tasks`` (default ``[rte, mrpc, cola, stsb, sst2]``: the GLUE tasks with training data
in the shared folder), ``mixing_cap`` (65536, T5's ``K = 2^16``), ``super_glue_dir`` (where the SuperGLUE tasks are
read from when it is not ``train``; default: ``train``).
"""

from __future__ import annotations

import difflib
import logging
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor, nn

from synthformer.common import ConfigError
from synthformer.data import MixtureDataset, MixtureSchedule, Seq2SeqDataset, mixing_rates

from ...contract import Generated, GenerateOptions, RawData, TaskType
from ...metrics.likelihood import likelihood_metrics
from ...prepared.preparation import Preparation, Sources
from ...registry import get_task_type, register_task_type
from ...sources import subset
from ...types.seq2seq_decoding import decode_seq2seq
from .metrics import (
    TaskScore,
    glue_average,
    glue_task_from_config,
    majority_prediction,
    missing_tasks,
    score_predictions,
)
from .reader import glue_split_path, load_hf_glue, read_glue_split

if TYPE_CHECKING:
    from synthformer.data import Tokenizer
    from synthformer.models import ModelConfig
    from synthformer.train import EvalShard

    from ...contract import LoadedRun, TaskData
    from ...run.config import RunConfig
    from ...run.task_config import TaskConfig

__all__ = ["TextToText", "majority_scores", "mixture"]

logger = logging.getLogger(__name__)

_HF_NAMES = ("glue", "super_glue")


def _tasks(task: TaskConfig) -> list[str]:
    names = task.task_options["tasks"]
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not isinstance(names, list) or not names:
        raise ConfigError(f"task.options.tasks: expected a non-empty list of task names, got {names!r}")
    names = [str(n) for n in names]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"task.options.tasks: {', '.join(repeated)} listed more than once")
    return names


def _trained(tasks: list[str]) -> list[str]:
    """The tasks with a training split (all but the diagnostics AX-b and AX-g)."""
    return [t for t in tasks if not glue_task_from_config(t).eval_only]


def _benchmarks(tasks: list[str]) -> list[str]:
    """The benchmarks (``glue``, ``super_glue``) the tasks belong to, GLUE first."""
    found = {glue_task_from_config(t).benchmark for t in tasks}
    return [b for b in ("glue", "super_glue") if b in found]


def mixture(by_task: dict[str, list[Any]], cap: int, seed: int = 0) -> tuple[list[Any], dict[str, float]]:
    """Examples-proportional mixing with a cap, as a fixed sample: each task's examples (a seeded sample of
    ``cap`` of them when it has more), interleaved in a seeded order; and each task's mixing rate
    ``min(n, cap) / sum min(n_j, cap)``. Training draws its mixture on the fly (:class:`MixtureDataset`); this
    bounded sample is what the tokenizer is trained on."""
    if cap < 1:
        raise ConfigError(f"task.options.mixing_cap: expected a positive integer, got {cap!r}")
    chosen = {name: subset(examples, cap, seed) for name, examples in by_task.items()}
    total = sum(len(v) for v in chosen.values())
    rates = {name: len(v) / total for name, v in chosen.items()}
    mixed = [e for v in chosen.values() for e in v]
    random.Random(seed).shuffle(mixed)  # the trainer shuffles too; this keeps eval-free previews mixed
    return mixed, rates


def majority_scores(train: list[Any], valid: list[Any], groups: list[str]) -> dict[str, TaskScore]:
    """The scores of the majority-label reference on each dev set (``groups``: each valid example's dev set)."""
    by_group: dict[str, list[Any]] = {}
    for example, group in zip(valid, groups, strict=True):
        by_group.setdefault(group, []).append(example)
    out = {}
    for group, examples in by_group.items():
        task = glue_task_from_config(examples[0].task)
        # a diagnostic answers with the majority label of the training tasks it is cast as (RTE)
        pool = [e for e in train if e.task == task.name or (task.eval_only and
                                                            glue_task_from_config(e.task).prefix == task.prefix)]
        if not pool and task.eval_only:
            continue
        answer = majority_prediction(task, pool)
        out[group] = score_predictions(task, [answer] * len(examples), examples)
    return out


@register_task_type
class TextToText(TaskType):
    """``task.type: text_to_text`` (see the module docstring)."""

    name = "text_to_text"
    arch = "seq2seq"
    metrics = ("loss", "perplexity", "glue")
    formats = ("glue",)
    default_tokenizer = "bpe"
    reads = frozenset({"max_target_len"})
    derived_model_fields = {"tgt_vocab_size": "source and target share one tokenizer"}
    option_defaults = {"tasks": ["rte", "mrpc", "cola", "stsb", "sst2"], "mixing_cap": 65536, "super_glue_dir": None}

    def check_config(self, task: TaskConfig) -> None:
        names = _tasks(task)
        for name in names:
            glue_task_from_config(name)  # unknown names: a ConfigError naming the valid ones
        if not _trained(names):
            raise ConfigError(f"task.options.tasks: {', '.join(names)} have no training split (diagnostics); add "
                              "a task to train on, e.g. super_glue_rte")
        if len(_trained(names)) < len(names) and not any(glue_task_from_config(n).prefix == "rte" for n in
                                                         _trained(names)):
            logger.warning("task.options.tasks: axb / axg are cast as RTE, but no RTE task (rte, super_glue_rte) is "
                           "trained: their answers will be guesses")
        super_dir = task.task_options["super_glue_dir"]
        if super_dir is not None and (not isinstance(super_dir, str) or task.hf_name is not None):
            raise ConfigError(f"task.options.super_glue_dir: expected the path of the SuperGLUE folder (with 'train' "
                              f"files, not hf_name), got {super_dir!r}")
        cap = task.task_options["mixing_cap"]
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise ConfigError(f"task.options.mixing_cap: expected a positive integer, got {cap!r}")
        if task.hf_name is not None and task.hf_name not in _HF_NAMES:
            close = difflib.get_close_matches(task.hf_name, _HF_NAMES, n=1)
            raise ConfigError(f"task.hf_name: text_to_text loads 'glue' or 'super_glue' (each task from its own "
                              f"benchmark), got {task.hf_name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        if task.valid is not None or task.test is not None:
            raise ConfigError("task.valid: text_to_text reads each task's dev set from the data folder ('train'); "
                              "leave valid and test unset")

    def default_metrics(self, task: TaskConfig) -> list[str]:
        return ["loss", "glue"]

    def max_positions(self, task: TaskConfig) -> int:
        return max(task.max_len, task.target_len)

    def model_fields(self, num_classes: int | None) -> dict[str, Any]:
        return {"tgt_vocab_size": None}

    def has_test_split(self, task: TaskConfig) -> bool:
        return False

    # -- data -------------------------------------------------------------------------------------------
    @staticmethod
    def _data_dir(task: TaskConfig, name: str) -> str:
        """The folder a task is read from: ``train``, or ``options.super_glue_dir`` for a SuperGLUE task."""
        super_dir = task.task_options["super_glue_dir"]
        if super_dir is not None and glue_task_from_config(name).benchmark == "super_glue":
            return str(super_dir)
        assert task.train is not None
        return task.train

    @classmethod
    def _load(cls, task: TaskConfig, name: str, split: str) -> list[Any]:
        if task.hf_name is not None:
            return load_hf_glue(name, split, **task.hf_options)
        return read_glue_split(name, cls._data_dir(task, name), split)

    @staticmethod
    def _dev_sets(name: str) -> list[tuple[str, str]]:
        """``(group, split)`` of each dev set of a task: MNLI has two, scored separately (mnli_matched, ...)."""
        dev_splits = glue_task_from_config(name).dev_splits
        if len(dev_splits) == 1:
            return [(name, "dev")]
        return [(f"{name}_{split.removeprefix('dev_')}", split) for split in dev_splits]

    def read(self, task: TaskConfig) -> RawData:
        train: dict[str, list[Any]] = {}
        valid: dict[str, list[Any]] = {}  # by dev set
        for name in _tasks(task):
            if not glue_task_from_config(name).eval_only:
                train[name] = self._load(task, name, "train")
            for group, split in self._dev_sets(name):
                valid[group] = self._load(task, name, split)
        return RawData(self.name, {"train": train, "valid": valid})

    # -- prepared corpora (:mod:`.text_to_text_prepared`) --------------------------------------------------
    def preparation(self) -> Preparation:
        # one prepared split per task and dev set ("train.rte", "valid.mnli_matched"): the mixture is drawn from
        # them at training time
        return Preparation("pairs", self._stored_splits, sources=self._prepared_sources,
                           examples=self._prepared_examples)

    def _prepared_sources(self, task: TaskConfig) -> Sources:
        def files(name: str, split: str) -> list[str]:  # the files read (fingerprinted in the manifest)
            if task.hf_name is not None or task.train is None:
                return []
            return [str(glue_split_path(glue_task_from_config(name), self._data_dir(task, name), split))]

        out: dict[str, list[tuple[str, list[str]]]] = {}
        for name in _trained(_tasks(task)):
            out[f"train.{name}"] = [(f"{name}:train", files(name, "train"))]
        for name in _tasks(task):
            for group, split in self._dev_sets(name):
                out[f"valid.{group}"] = [(f"{name}:{split}", files(name, split))]
        return out

    def _prepared_examples(self, task: TaskConfig, source: str) -> Iterator[tuple[int, tuple[str, str]]]:
        name, _, split = source.partition(":")
        for i, example in enumerate(self._load(task, name, split), start=1):
            yield i, (example.source, example.target)

    def _stored_splits(self, run: RunConfig, corpus: Any, split: str, tokenizer: Tokenizer) -> Any:
        from .text_to_text_prepared import prepared_dev_sets, prepared_mixture

        names = _tasks(run.task)
        if split == "train":
            return prepared_mixture(run, corpus, _trained(names), tokenizer)
        groups = [(group, name) for name in names for group, _ in self._dev_sets(name)]

        def records(group: str, name: str) -> list[Any]:
            # the gold records MultiRC, ReCoRD, WSC and AX-g are scored on, read again from the file the corpus was
            # prepared from (the manifest names it; the corpus check refuses a file modified since)
            files = [s.get("path") for s in corpus.manifest.get("sources", {}).get(f"{split}.{group}", [])]
            if not files or not files[0]:
                raise ConfigError(f"task.prepared: {split}.{group} was not prepared from files (Hugging Face?): "
                                  f"scoring {name} needs its dev records; train on the files or in memory instead")
            path = Path(files[0])
            return read_glue_split(name, path.parent.parent, dict(self._dev_sets(name))[group])

        return prepared_dev_sets(run, corpus, split, groups, tokenizer, records)

    def finish(self, task: TaskConfig, raw: RawData) -> RawData:
        # the splits arrive per task; limits apply per task; the training split keeps every example of every task,
        # task after task (the mixture is drawn from it per epoch: build_dataset)
        train = {n: subset(v, task.train_limit) for n, v in raw.splits["train"].items()}
        valid = {n: subset(v, task.eval_limit) for n, v in raw.splits["valid"].items()}
        cap = int(task.task_options["mixing_cap"])
        if cap < 1:
            raise ConfigError(f"task.options.mixing_cap: expected a positive integer, got {cap!r}")
        rates = dict(zip(train, mixing_rates([len(v) for v in train.values()], cap), strict=True))
        raw.splits = {"train": [e for v in train.values() for e in v], "valid": [e for v in valid.values() for e in v]}
        raw.info["valid_groups"] = [group for group, v in valid.items() for _ in v]  # aligned with splits["valid"]
        raw.info["mixing_rates"] = rates
        raw.info["mixing_cap"] = cap
        raw.info["train_sizes"] = {n: len(v) for n, v in train.items()}  # aligned with splits["train"]
        logger.info("text-to-text mixture (cap %d, drawn from the whole of each task): %s", cap, ", ".join(
            f"{n} {len(train[n]):,}{f' -> {cap:,} an epoch' if len(train[n]) > cap else ''} ({rates[n]:.1%})"
            for n in rates))
        return raw

    def _train_by_task(self, raw: RawData) -> dict[str, list[Any]]:
        train, out, start = raw.splits["train"], {}, 0
        for name, size in raw.info["train_sizes"].items():
            out[name], start = train[start:start + size], start + size
        return out

    def spelled_strings(self, task: TaskConfig, raw: RawData | None) -> dict[str, list[str]]:
        # each task's declared targets and its prefix; targets that are text of the data (WSC, ReCoRD): every
        # distinct one loaded
        out: dict[str, list[str]] = {}
        for name in _tasks(task):
            spec = glue_task_from_config(name)
            declared = spec.target_strings
            if declared is None and raw is not None:
                declared = tuple(dict.fromkeys(e.target for split in raw.splits.values() for e in split
                                               if e.task == spec.name))
            out[f"{name} target"] = list(declared or ())
            out[f"{name} prefix"] = [spec.prefix]
        return out

    def training_texts(self, raw: RawData) -> list[str]:
        # a bounded seeded sample: the examples of the fixed mixture (the texts every earlier version trained on)
        train, _ = mixture(self._train_by_task(raw), int(raw.info["mixing_cap"]))
        return [e.source for e in train] + [e.target for e in train]

    def build_dataset(self, run: RunConfig, raw: RawData, split: str, tokenizer: Tokenizer,
                      model_config: ModelConfig | None) -> tuple[Any, float | None]:
        task = run.task
        pairs = [(e.source, e.target) for e in raw.splits[split]]
        # (the dataset logs how many examples were truncated or skipped for length)
        examples = Seq2SeqDataset(pairs, tokenizer, max_src_len=task.max_len, max_tgt_len=task.target_len,
                                  overflow=task.overflow)
        if split != "train":
            return examples, None
        sizes = raw.info["train_sizes"]
        task_of_kept = np.repeat(np.arange(len(sizes)), list(sizes.values()))[examples.indices]
        members = [np.flatnonzero(task_of_kept == m) for m in range(len(sizes))]
        empty = [name for name, m in zip(sizes, members, strict=True) if len(m) == 0]
        if empty:
            raise ConfigError(f"task.max_len: no training example of {', '.join(empty)} is left after the length "
                              "limits (task.overflow: skip); raise the limits or drop the task")
        schedule = MixtureSchedule([len(m) for m in members], int(raw.info["mixing_cap"]), seed=run.train.seed)
        return MixtureDataset(examples, members, schedule), None

    # -- evaluation -------------------------------------------------------------------------------------
    def evaluate(self, run: RunConfig, data: TaskData, model: nn.Module, split: str, names: list[str], *,
                 batch_size: int, max_batches: int, beam: int | None,
                 max_examples: int | None, shard: EvalShard | None = None) -> tuple[dict[str, Any], list[str]]:
        out = likelihood_metrics(model, data.datasets[split], names, batch_size, max_batches, shard)
        hypotheses: list[str] = []
        if "glue" in names and max_examples != 0:
            glue, hypotheses = self._glue_scores(run, data, model, split, batch_size, beam or 1, max_examples, shard)
            out.update(glue)
        return out, hypotheses

    def _glue_scores(self, run: RunConfig, data: TaskData, model: nn.Module, split: str, batch_size: int,
                     beam: int, max_examples: int | None,
                     shard: EvalShard | None) -> tuple[dict[str, Any], list[str]]:
        dataset = data.datasets[split]
        # a prepared corpus's dev sets carry their examples (read back from the shards)
        raw = getattr(dataset, "raw_examples", None) or data.raw.splits[split]
        examples = [raw[i] for i in dataset.indices]  # skipped-for-length ones excluded
        groups = getattr(dataset, "groups", None) or data.raw.info.get("valid_groups") or [e.task for e in raw]
        # by dev set (a task, or MNLI's matched / mismatched); at most max_examples each, evenly spaced (dev files
        # may be sorted)
        by_task: dict[str, list[int]] = {}
        for position, index in enumerate(dataset.indices):
            by_task.setdefault(groups[index], []).append(position)
        if max_examples is not None:
            by_task = {t: [p[i * len(p) // min(len(p), max_examples)] for i in range(min(len(p), max_examples))]
                       for t, p in by_task.items()}
        positions = [p for ps in by_task.values() for p in ps]
        tok = data.tokenizer
        # each process decodes its part of the positions; the decoded texts are gathered in order
        mine = positions if shard is None else shard.part(positions)
        src = [dataset[p]["src_ids"] for p in mine]
        limit = min(run.eval.max_decode_len or run.task.target_len, model.config.max_len)
        ids = decode_seq2seq(model, src, beam=beam, length_penalty=run.eval.length_penalty, max_new_tokens=limit,
                             batch_size=batch_size, pad_id=tok.pad_id, eos_id=tok.eos_id)
        texts = [tok.decode(seq).strip() for seq in ids]
        if shard is not None:
            texts = shard.concat(texts)
        predicted = dict(zip(positions, texts, strict=True))
        out: dict[str, Any] = {}
        scores = {}
        for name, ps in by_task.items():
            score = score_predictions(examples[ps[0]].task, [predicted[p] for p in ps], [examples[p] for p in ps])
            scores[name] = score
            out.update({f"{name}_{metric}": value for metric, value in score.metrics.items()})
            out[f"{name}_invalid"] = score.invalid
        for benchmark in _benchmarks([s.task for s in scores.values()]):
            out[f"{benchmark}_average"] = glue_average(scores, benchmark)
            if benchmark == "super_glue":  # the average is over the tasks present: say which of the eight are not
                missing = missing_tasks(scores, benchmark)
                out["super_glue_missing"] = ", ".join(missing) or "none"
                if missing:
                    logger.info("super_glue_average over %d of 8 tasks; missing: %s", 8 - len(missing),
                                ", ".join(missing))
        invalid = Counter({name: s.invalid for name, s in scores.items() if s.invalid})
        if invalid:
            logger.info("predictions that are no valid label (counted wrong): %s",
                        ", ".join(f"{n} {c}" for n, c in invalid.items()))
        return out, [predicted[p] for p in sorted(predicted)]

    def training_evaluation(self, run: RunConfig) -> tuple[list[str], int | None, int | None]:
        names = run.metrics
        if run.eval.train_decode_examples == 0:
            names = [n for n in names if n != "glue"]
        return names, 1, run.eval.train_decode_examples

    def training_metric_keys(self, run: RunConfig) -> list[str] | None:
        # the decoded scores are named by the configured tasks: <dev set>_<metric> and _invalid for each, then each
        # benchmark's average (train.keep_best is checked against them when the config is read)
        keys: list[str] = []
        names, _, _ = self.training_evaluation(run)
        for name in names:
            if name != "glue":
                keys.extend(self.metric_keys.get(name) or (name,))
                continue
            tasks = _tasks(run.task)
            for task in tasks:
                for group, _split in self._dev_sets(task):
                    keys += [f"{group}_{m}" for m in glue_task_from_config(task).metrics] + [f"{group}_invalid"]
            keys += [f"{b}_average" for b in _benchmarks(tasks)]
        return keys

    def report_extras(self, run: RunConfig, beam: int) -> dict[str, Any]:
        return {"beam": beam, "tasks": _tasks(run.task), "mixing_cap": run.task.task_options["mixing_cap"]}

    def baseline(self, run: RunConfig, data: TaskData) -> tuple[str, float]:
        """Every dev example answered with its task's majority training label (STS-B: the mean score)."""
        if run.task.prepared is not None:  # the training labels are in the shards, not in memory
            return "none", float("nan")
        scores = majority_scores(data.raw.splits["train"], data.raw.splits["valid"], data.raw.info["valid_groups"])
        benchmark = self.comparison_metric(run.task).removesuffix("_average")
        return "majority label per task", glue_average(scores, benchmark)

    def comparison_metric(self, task: TaskConfig) -> str:
        return f"{_benchmarks(_tasks(task))[0]}_average"

    # -- generation -------------------------------------------------------------------------------------
    def generate(self, loaded: LoadedRun, inputs: list[str], options: GenerateOptions) -> list[Generated]:
        """The verbalized answer to each input, written as the tasks' inputs are (``"sst2 sentence: ..."``)."""
        return get_task_type("seq2seq").generate(loaded, inputs, options)

    def random_batch(self, config: ModelConfig, batch_size: int, seq_len: int,
                     generator: torch.Generator) -> dict[str, Tensor]:
        return get_task_type("seq2seq").random_batch(config, batch_size, seq_len, generator)

