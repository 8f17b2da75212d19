"""``synthformer prepare CONFIG --out DIR``: tokenize a run config's data once into token shards that training
memory-maps (``task.prepared: DIR``); ``synthformer prepare --check DIR`` checks such a folder."""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from pathlib import Path

from ._common import CliError, HelpFormatter, add_common_options

__all__ = ["register", "run"]

_EPILOG = """\
examples:
  synthformer prepare configs/t5_small_pretrain_c4.yaml --out prepared/c4 --workers 8 task.prepared=null \\
      task.train="c4/en/c4-train.*-of-01024.json.gz" task.valid="c4/en/c4-validation.0000*-of-00008.json.gz"
  synthformer prepare --check prepared/c4                      # every checksum (sources moved or gone: a note)
  synthformer prepare configs/lm_tiny_shakespeare.yaml --out prepared/shakespeare --text-unit line
  synthformer prepare configs/lm_tiny_shakespeare.yaml --out prepared/shakespeare --text-unit line --verify
  synthformer prepare configs/t5_cpu_pretrain_imdb.yaml --out prepared/imdb --tokenizer runs/t5/tokenizer.json

Sources: task.train / valid / test are files or globs (txt, jsonl, json.gz, csv, tsv, parquet; task.text_field
picks the text of JSON / CSV records; C4's {"text", "timestamp", "url"} lines work as they are), or task.hf_name
with hf_splits (read with streaming=True). Without task.valid, task.valid_fraction of the training examples is
held out (chosen by a hash of each example's position: stable across re-runs and --workers).

Re-running the same command continues an interrupted prepare (after a kill, Ctrl-C or a full disk): finished units
are kept once their checksums verify, and the result is the same bytes as an uninterrupted run; with --verify it
also rewrites damaged shards of a finished one. The corpus does not need its sources once prepared: moved, copied
or deleted, they are a note for train, --check and a re-run. The tokenizer is trained on the first
--tokenizer-sample-bytes of text of the training files in a seeded order, unless --tokenizer gives one. See
docs/data.md.
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``prepare`` verb."""
    p = sub.add_parser(
        "prepare", help="tokenize a run config's data into token shards (for large corpora)",
        formatter_class=HelpFormatter, epilog=_EPILOG,
        description="Tokenize the training and validation data of a run config (task types lm, span_corruption, "
                    "seq2seq, summarization, text_to_text) into shards of token ids that 'synthformer train' "
                    "memory-maps with task.prepared=DIR: memory does not grow with the corpus.",
    )
    p.add_argument("config", metavar="CONFIG", nargs="?", help="YAML run config (its task section is prepared)")
    p.add_argument("overrides", metavar="KEY=VALUE", nargs="*", help="dotted config overrides, e.g. task.train=x.txt")
    p.add_argument("--out", metavar="DIR", help="the prepared folder to write (required with CONFIG)")
    p.add_argument("--check", metavar="DIR", help="check the prepared folder DIR instead: file sizes, every sha256 "
                                                  "and the tokenizer (with --tokenizer); sources moved since: a note")
    p.add_argument("--workers", type=int, default=1, metavar="N", help="processes tokenizing side by side")
    p.add_argument("--tokenizer", metavar="FILE", help="use this tokenizer file (e.g. a run's tokenizer.json) "
                                                       "instead of training one on a sample of the data")
    p.add_argument("--tokenizer-sample-bytes", type=int, default=100_000_000, metavar="N",
                   help="bytes of training text the tokenizer is trained on (memory is bounded by it)")
    p.add_argument("--seed", type=int, default=None, metavar="N",
                   help="seed of the tokenizer's sample (default: the config's train.seed)")
    p.add_argument("--shard-tokens", type=int, default=1 << 26, metavar="N", help="tokens per shard (about)")
    p.add_argument("--unit-bytes", type=int, default=1 << 28, metavar="N",
                   help="big plain files (txt, jsonl) are cut into byte ranges of this size, one unit of work each")
    p.add_argument("--text-unit", choices=("line", "paragraph", "file"), default="paragraph",
                   help="what one document of a text file is (paragraph: lines up to an empty line)")
    p.add_argument("--overwrite", action="store_true", help="replace a different prepare found in --out")
    p.add_argument("--accept-smaller-vocab", action="store_true",
                   help="train the tokenizer even if the data gives fewer ids than task.vocab_size asks (refused "
                        "without it); the corpus records the size asked, and 'synthformer train' with the same "
                        "config accepts it")
    p.add_argument("--verify", action="store_true", help="on a finished --out: check every shard's sha256 (reads "
                                                         "them all) and rewrite damaged ones; without it, sizes only")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (default: shown on a terminal)")
    add_common_options(p)
    p.set_defaults(handler=run, default_log_level=logging.INFO)


def _check(args: argparse.Namespace) -> int:
    from synthformer.tasks import check_prepared

    if args.config is not None or args.out is not None:
        raise CliError("--check DIR takes no CONFIG and no --out")
    corpus = check_prepared(args.check, tokenizer=args.tokenizer)
    for name in corpus.splits:
        split = corpus.split(name)
        tokens = ", ".join(f"{split.num_tokens(f):,} {f}" for f in split.fields)
        print(f"{name}: {len(split):,} documents, {tokens} tokens, {len(split.shards)} shard(s)")
    print(f"{args.check}: ok (sizes and checksums)")
    return 0


_OPTIONS = ("workers", "tokenizer", "tokenizer_sample_bytes", "seed", "shard_tokens", "unit_bytes", "text_unit")


def _options(args: argparse.Namespace) -> list[str]:
    """The options given with other than their default values (what a re-run must repeat to continue)."""
    parser = args.verb_parser
    out = []
    for name in _OPTIONS:
        value = getattr(args, name)
        if value != parser.get_default(name):
            out += [f"--{name.replace('_', '-')}", str(value)]
    if args.accept_smaller_vocab:  # a continued prepare checks its tokenizer's size again
        out.append("--accept-smaller-vocab")
    return out


def run(args: argparse.Namespace) -> int:
    """Prepare (or check) a corpus; print what is there."""
    if args.check is not None:
        return _check(args)
    if args.config is None or args.out is None:
        raise CliError("give CONFIG and --out DIR (or --check DIR)")
    from synthformer.tasks import load_run_config, prepare_corpus

    run_config = load_run_config(Path(args.config), list(args.overrides))
    command = shlex.join(["synthformer", "prepare", args.config, *args.overrides, "--out", args.out,
                          *_options(args)])
    args.interrupt_hint = f"finished units are kept; continue with: {command}"
    seed = run_config.train.seed if args.seed is None else args.seed
    result = prepare_corpus(
        run_config.task, args.out, workers=args.workers, tokenizer=args.tokenizer, shard_tokens=args.shard_tokens,
        unit_bytes=args.unit_bytes, text_unit=args.text_unit, sample_bytes=args.tokenizer_sample_bytes, seed=seed,
        overwrite=args.overwrite, verify=args.verify, progress=not args.no_progress and sys.stderr.isatty(),
        command=command, accept_smaller_vocab=args.accept_smaller_vocab)
    manifest = result.manifest
    if result.note:
        print(f"note: {result.note}", file=sys.stderr)  # beside the log's notes, not in the output
    if result.status == "complete":
        print(f"{args.out}: already prepared by this command; nothing to do (--check {args.out} verifies it)")
    elif result.status == "repaired":
        print(f"{args.out}: damaged shards of {result.units - result.units_kept} unit(s) rewritten")
    elif result.units_kept:
        print(f"{args.out}: resumed: {result.units_kept} of {result.units} unit(s) kept, the rest tokenized")
    for name, split in manifest["splits"].items():
        tokens = ", ".join(f"{n:,} {f}" for f, n in split["tokens"].items())
        print(f"{name}: {split['documents']:,} documents, {tokens} tokens, {len(split['shards'])} shard(s)")
    tok = manifest["tokenizer"]
    print(f"tokenizer: {tok['kind']}, vocab {tok['vocab_size']:,} ({manifest['dtype']} ids)")
    # task.prepared excludes the sources it was made from: the hint unsets the ones this config names
    unset = [f"task.{key}=null" for key in ("train", "valid", "test", "hf_name")
             if getattr(run_config.task, key, None) is not None]
    print("next: " + shlex.join(["synthformer", "train", args.config, *args.overrides, *unset,
                                 f"task.prepared={args.out}"]))
    return 0
