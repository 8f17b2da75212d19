"""The trivial baseline beside every results table of docs/results/, computed from the data and recorded like the
models' rows: one JSON line per (table, baseline) in ``benchmarks/results/baselines.jsonl``.

    python benchmarks/studies/baselines.py               # every baseline not recorded yet (see below)
    python benchmarks/studies/baselines.py --tables lra probe  # some tables' baselines only
    python benchmarks/studies/baselines.py --specs imdb --rerun  # one again; the new entry supersedes the old
    python benchmarks/studies/baselines.py --specs t5arch --from-run t5arch=runs/t5arch_pretrain/V  # a run's tokenizer
    python benchmarks/studies/baselines.py --list        # the specs, their tables and rows

Each baseline reads its data the way the table's models did: the table's config (and the overrides its rows ran
with) through the task pipeline (``load_raw_data``; for span corruption and the character LM, ``prepare_data``, so
the tokens are the models' tokens), then scores the library's baseline
(:mod:`synthformer.tasks.metrics.baselines`) with the metric code the models are scored with:

* majority class (IMDb, LRA, the probes): the training split's most frequent label, on the splits the table shows
  (the periodic validation's sample of the valid split, the scored test subset), with the chance level;
* majority label per task (GLUE, SuperGLUE): the text-to-text task's ``majority_scores`` on every dev example;
* unigram and "predict the sentinels" (the T5 pretraining table): nats per target token on the whole valid split,
  both tokenizers of the table (SentencePiece for T5's architecture, BPE for the earlier setting);
* unigram bits/char (the Shakespeare study); the source copied as its translation (the Multi30k studies);
* lead-3 (SAMSum, DialogSum) and the most frequent training reply (DailyDialog, PersonaChat) on the test split.

Time on the 2-core CPU with one core taken by other work (2026-11-28): about 4 minutes for all of them, most of it
Pathfinder's 24,000 images, the two span-corruption tokenizers and METEOR; the first run also draws LRA ListOps'
100,000 expressions into ``runs/cache/lra_listops`` (7 minutes), which later runs and the LRA rows read back.

Resumable: a spec whose rows are all recorded is skipped unless ``--rerun``; each spec appends its entries the
moment it finishes. Every entry carries the metadata of ``benchmarks/records.py`` (command, date, machine, commit,
threads, shared CPU) and the config and overrides it read.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, append, latest, load, metadata  # noqa: E402 - benchmarks/records.py

RECORD = RESULTS / "baselines.jsonl"
#: The T5 pretraining table's tokenizer is being moved to SentencePiece with byte fallback; until that default
#: lands in the code, the baseline asks for it explicitly (harmless once it is the default: the same tokenizer).
_T5_TOKENIZER = ("task.tokenizer_options.byte_fallback=true",)


@dataclass(frozen=True)
class Spec:
    """One computation: ``kind`` (a key of :data:`KINDS`) on ``config`` with ``overrides``, giving the entries
    ``rows`` of ``table``. ``options``: what the kind needs besides the config, as (name, value) pairs."""

    key: str
    table: str
    rows: tuple[str, ...]
    kind: str
    config: str
    overrides: tuple[str, ...] = ()
    options: tuple[tuple[str, Any], ...] = ()

    def option(self, name: str, default: Any = None) -> Any:
        return dict(self.options).get(name, default)


def _lra_specs() -> list[Spec]:
    from studies.results_runs import (  # the LRA rows' configs and budget, so the data are theirs
        _LRA_CONFIGS,
        LRA_BUDGETS,
    )

    return [Spec(f"lra-{task}", "lra", (f"{task}-majority",), "majority", config,
                 tuple(o for o in LRA_BUDGETS[task].overrides() if o.startswith(("task.", "train.batch_size",
                                                                                 "train.eval_steps"))))
            for task, config in _LRA_CONFIGS.items()]


def _lra_cpu_specs() -> list[Spec]:
    from studies.results_runs import LRA_CPU_CONFIGS  # the CPU-size rows' configs: their budget is in the config

    return [Spec(f"lra-cpu-{task}", "lra_cpu", (f"{task}-majority",), "majority", config)
            for task, config in LRA_CPU_CONFIGS.items()]


def _probe_specs() -> list[Spec]:
    from studies.probe_study import LENGTHS, STUDIES  # the studies' configs and lengths

    return [Spec(f"probe-{task}-{length}", "probe", (f"{task}-{length}-majority",), "majority", config,
                 (*overrides, f"task.max_len={length}"))
            for task, (config, overrides) in STUDIES.items() for length in LENGTHS]


def specs() -> list[Spec]:
    """Every baseline of the docs' results tables, in the docs' order."""
    t3 = "configs/table3_{}.yaml"
    return [
        Spec("imdb", "imdb", ("majority",), "majority", "configs/cls_imdb.yaml"),
        Spec("t5arch", "t5arch_pretrain", ("unigram", "sentinels"), "span_corruption",
             "configs/t5arch_cpu_pretrain_imdb.yaml", _T5_TOKENIZER),
        Spec("t5-transformer", "t5arch_pretrain", ("transformer-V-unigram", "transformer-V-sentinels"),
             "span_corruption", "configs/t5_cpu_pretrain_imdb.yaml"),
        Spec("glue", "t5arch_glue", ("majority",), "glue_majority", "configs/t5arch_cpu_glue.yaml"),
        Spec("superglue", "t5arch_superglue", ("majority",), "glue_majority", "configs/t5arch_cpu_superglue.yaml"),
        *_lra_specs(),
        *_lra_cpu_specs(),
        Spec("shakespeare", "study_shk", ("unigram",), "lm_unigram", "configs/lm_tiny_shakespeare.yaml"),
        # the studies of Tables 8 and 9 validate on the first eval.train_decode_examples validation sentences
        Spec("multi30k", "multi30k", ("copy-source",), "copy_source", "configs/mt_multi30k_de_en.yaml",
             ("eval.train_decode_examples=200",)),
        # the paper's Table 2 translation column runs the other way, English to German (seed_studies.py t2-mt)
        Spec("multi30k-en-de", "multi30k", ("copy-source-en-de",), "copy_source", "configs/mt_multi30k_de_en.yaml",
             ("eval.train_decode_examples=200", "task.source_lang=en", "task.target_lang=de")),
        *(Spec(d, "table3", (f"{d}-lead3",), "lead", t3.format(d), options=(("n", 3),))
          for d in ("samsum", "dialogsum")),
        *(Spec(d, "table3", (f"{d}-frequent-reply",), "frequent_reply", t3.format(d))
          for d in ("dailydialog", "personachat")),
        *_probe_specs(),
    ]


# --------------------------------------------------------------------------- the computations


def _run_config(spec: Spec) -> Any:
    from synthformer.tasks.run.config import load_run_config

    return load_run_config(ROOT / spec.config, list(spec.overrides))


def _labels(examples: list[Any], index: int) -> list[str]:
    return [str(ex[index]) for ex in examples]


def majority(spec: Spec, run_dir: Path | None) -> dict[str, dict[str, Any]]:
    """A classifier's majority class, on the valid split's periodic-validation sample (``train.eval_steps``
    batches, evenly spaced, as the trainer scores it; all of it when 0) and on the test split ``synthformer eval``
    scores (``task.eval_limit``'s seeded subset where set). Tied labels' accuracies are kept beside."""
    from synthformer.tasks.metrics.baselines import majority_class
    from synthformer.tasks.metrics.likelihood import sample_indices
    from synthformer.tasks.sources import load_raw_data
    from synthformer.tasks.types.classification import majority_baseline

    run = _run_config(spec)
    raw = load_raw_data(run.task)
    index = getattr(run.task.task_type, "label_index", 1)
    valid = raw.splits["valid"]
    sample = sample_indices(len(valid), run.eval.batch_size or run.train.batch_size, run.train.eval_steps)
    splits = {"valid": _labels([valid[i] for i in sample] if sample is not None else valid, index)}
    if "test" in raw.splits:
        splits["test"] = _labels(raw.splits["test"], index)
    found = majority_class(_labels(raw.splits["train"], index), splits, len(raw.label_set or []) or None)
    numbers: dict[str, Any] = {"label": found.label, "tied": list(found.tied), "chance": found.chance,
                               "train_examples": len(raw.splits["train"])}
    for name, labels in splits.items():
        numbers[name] = {"accuracy": found.accuracy[name], "examples": found.examples[name]}
        if len(found.tied) > 1:  # the choice among tied labels is arbitrary: every one's score is kept
            numbers[name]["tied_accuracy"] = {t: majority_baseline([t], labels) for t in found.tied}
    return {spec.rows[0]: numbers}


def glue_majority(spec: Spec, run_dir: Path | None) -> dict[str, dict[str, Any]]:
    """Each dev set answered with its task's most frequent training label (the text-to-text task's own
    ``majority_scores``; diagnostics with the label of the task they are cast as), scored like the models:
    ``valid`` holds ``<task>_<metric>`` in percent and the benchmark's average, as a model row's ``valid`` does."""
    from synthformer.tasks.sources import load_raw_data
    from synthformer.tasks.suites.glue.metrics import glue_average
    from synthformer.tasks.suites.glue.text_to_text import majority_scores

    run = _run_config(spec)
    raw = load_raw_data(run.task)
    scores = majority_scores(raw.splits["train"], raw.splits["valid"], raw.info["valid_groups"])
    benchmark = run.task.task_type.comparison_metric(run.task).removesuffix("_average")  # glue or super_glue
    valid: dict[str, Any] = {f"{task}_{metric}": value for task, score in scores.items()
                             for metric, value in score.metrics.items()}
    valid[f"{benchmark}_average"] = glue_average(scores, benchmark)
    return {spec.rows[0]: {"valid": valid, "tasks": list(scores), "examples": len(raw.splits["valid"])}}


def span_corruption(spec: Spec, run_dir: Path | None) -> dict[str, dict[str, Any]]:
    """Unigram and "predict the sentinels" losses (nats per target token) on the whole valid split, with the
    tokens the models saw: the tokenizer of ``run_dir`` (its ``synthformer_tokenizer.json`` and config) when
    given, else one built from the config as ``synthformer train`` builds it. Training targets: epoch 0's."""
    from synthformer.data.tokenization import load_tokenizer
    from synthformer.tasks.metrics.baselines import span_corruption_baselines, target_tokens
    from synthformer.tasks.run.data import prepare_data
    from synthformer.tasks.run.loading import read_run_config
    from synthformer.train import RunDir

    if run_dir is not None:
        rd = RunDir(run_dir)
        run, tokenizer, source = read_run_config(rd), load_tokenizer(rd.tokenizer_path), str(rd.tokenizer_path)
    else:
        run, tokenizer, source = _run_config(spec), None, "built from the config"
    data = prepare_data(run, tokenizer=tokenizer, splits=("train", "valid"))
    tok = data.tokenizer
    found = span_corruption_baselines(target_tokens(data.datasets["train"]), target_tokens(data.datasets["valid"]),
                                      tok.vocab_size, tok.sentinel_ids, tok.eos_id)
    shared = {"tokenizer": source, "tokenizer_kind": run.task.tokenizer_kind, "vocab_size": tok.vocab_size,
              "sentinel_share": found.sentinel_share}
    unigram, sentinels = spec.rows
    return {unigram: {"valid": {"log_perplexity": found.unigram, "tokens": found.tokens}, **shared},
            sentinels: {"valid": {"log_perplexity": found.sentinels, "tokens": found.tokens}, **shared}}


def lm_unigram(spec: Spec, run_dir: Path | None) -> dict[str, dict[str, Any]]:
    """The language-model task's own baseline (the training split's add-one unigram, on the whole valid split)."""
    from synthformer.tasks.run.data import prepare_data

    run = _run_config(spec)
    data = prepare_data(run, splits=("train", "valid"))
    name, value = run.task.task_type.baseline(run, data)
    return {spec.rows[0]: {"baseline": name, "valid": {"bits_per_character": value,
                                                       "tokens": len(data.datasets["valid"].tokens) - 1}}}


def copy_source(spec: Spec, run_dir: Path | None) -> dict[str, dict[str, Any]]:
    """Each source sentence as its own translation: BLEU on the first ``eval.train_decode_examples`` validation
    pairs (what the periodic validation decodes) and on the whole test split."""
    from synthformer.tasks.metrics.baselines import copy_source_bleu
    from synthformer.tasks.sources import load_raw_data

    run = _run_config(spec)
    raw = load_raw_data(run.task)
    valid = raw.splits["valid"][: run.eval.train_decode_examples]
    out = {}
    for name, pairs in (("valid", valid), ("test", raw.splits["test"])):
        out[name] = {"bleu": copy_source_bleu([p.source for p in pairs], [p.target for p in pairs]),
                     "examples": len(pairs)}
    return {spec.rows[0]: out}


def lead(spec: Spec, run_dir: Path | None) -> dict[str, dict[str, Any]]:
    """The document's first ``n`` sentences (a dialogue's first ``n`` turns) as its summary, ROUGE on the test
    split against the references ``synthformer eval`` scores the models with."""
    from synthformer.tasks.sources import load_raw_data
    from synthformer.tasks.suites.summarization import lead_scores

    run = _run_config(spec)
    pairs = load_raw_data(run.task).splits["test"]
    n = int(spec.option("n", 3))
    scores = lead_scores([p.source for p in pairs], [p.target for p in pairs], n)
    return {spec.rows[0]: {"n": n, "test": {**scores, "examples": len(pairs)}}}


def frequent_reply(spec: Spec, run_dir: Path | None) -> dict[str, dict[str, Any]]:
    """The training split's most frequent reply to every test context, with the config's dialogue metrics."""
    from synthformer.tasks.metrics.baselines import most_frequent
    from synthformer.tasks.sources import load_raw_data
    from synthformer.tasks.suites.dialogue import DIALOGUE_METRICS, dialogue_exchanges, frequent_reply_scores

    run = _run_config(spec)
    raw = load_raw_data(run.task)
    history = run.task.task_options["history"]
    train = [e.response for e in dialogue_exchanges(raw.splits["train"], history)]
    test = [e.response for e in dialogue_exchanges(raw.splits["test"], history)]
    reply, scores = frequent_reply_scores(train, test, [n for n in run.metrics if n in DIALOGUE_METRICS])
    return {spec.rows[0]: {"reply": reply, "reply_count": most_frequent(train)[1], "train_replies": len(train),
                           "test": {**scores, "examples": len(test)}}}


KINDS: dict[str, Callable[[Spec, Path | None], dict[str, dict[str, Any]]]] = {
    "majority": majority, "glue_majority": glue_majority, "span_corruption": span_corruption,
    "lm_unigram": lm_unigram, "copy_source": copy_source, "lead": lead, "frequent_reply": frequent_reply}


# --------------------------------------------------------------------------- recording


def _command(spec: Spec, run_dir: Path | None) -> str:
    extra = ["--from-run", f"{spec.key}={run_dir}"] if run_dir is not None else []
    return "python " + shlex.join(["benchmarks/studies/baselines.py", "--specs", spec.key, *extra])


@contextlib.contextmanager
def _in_checkout() -> Any:
    """Work in the checkout (contextlib.chdir is Python 3.11+; the project supports 3.10)."""
    before = Path.cwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(before)


def record_spec(spec: Spec, record: Path, *, run_dir: Path | None = None, rerun: bool = False,
                shared_cpu: bool = False) -> bool:
    """Compute ``spec`` unless every one of its rows is recorded (or ``rerun``) and append one entry per row, with
    the metadata of ``records.metadata``; whether it ran."""
    import torch

    recorded = latest(record, spec.table)
    if not rerun and all(row in recorded for row in spec.rows):
        print(f"{spec.key}: {', '.join(f'{spec.table}/{r}' for r in spec.rows)} recorded in {record}, skipped",
              flush=True)
        return False
    load_start, start = load(), time.perf_counter()
    # config paths (../shared/data, runs/cache) are relative to the checkout, as for the models' commands
    with _in_checkout():
        rows = KINDS[spec.kind](spec, run_dir)
    wall = round(time.perf_counter() - start, 1)
    for row in spec.rows:
        # a run directory's own config holds its overrides
        read = ({"config": spec.config, "overrides": list(spec.overrides)} if run_dir is None else
                {"config": str(run_dir / "config.yaml"), "overrides": [], "run_dir": str(run_dir)})
        entry = {"table": spec.table, "row": row, "kind": spec.kind, **read, **rows[row],
                 "wall_s": wall, **metadata(_command(spec, run_dir), torch.get_num_threads(), shared_cpu),
                 "load_1min": [load_start, load()]}
        append(record, entry)
    print(f"{spec.key}: recorded {', '.join(spec.rows)} of {spec.table} in {wall:.0f} s", flush=True)
    return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", nargs="+", default=None, help="only the baselines of these record tables")
    p.add_argument("--specs", nargs="+", default=None, help="only these specs (--list shows them)")
    p.add_argument("--record", type=Path, default=RECORD, help="default: %(default)s")
    p.add_argument("--rerun", action="store_true", help="compute recorded ones again (the new entry supersedes)")
    p.add_argument("--from-run", nargs="+", default=[], metavar="SPEC=RUN_DIR",
                   help="span corruption: take the tokenizer and config of this run directory")
    p.add_argument("--threads", type=int, default=None, help="torch threads")
    p.add_argument("--shared-cpu", action="store_true", help="record that other work shared the CPU meanwhile")
    p.add_argument("--list", action="store_true", help="list the specs and exit")
    args = p.parse_args(argv)
    every = specs()
    if args.list:
        for s in every:
            print(f"{s.key}: {s.table} {', '.join(s.rows)} ({s.kind}, {s.config} {' '.join(s.overrides)})".rstrip())
        return 0
    known = {s.key for s in every}
    runs = dict(item.split("=", 1) for item in args.from_run)
    unknown = sorted((set(args.specs or []) | set(runs)) - known)
    if unknown:
        p.error(f"unknown specs {unknown}; known: {', '.join(sorted(known))}")
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    chosen = [s for s in every if (args.tables is None or s.table in args.tables)
              and (args.specs is None or s.key in args.specs)]
    for spec in chosen:
        run_dir = Path(runs[spec.key]).resolve() if spec.key in runs else None
        record_spec(spec, args.record, run_dir=run_dir, rerun=args.rerun, shared_cpu=args.shared_cpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
