"""``synthformer eval RUN_DIR``: score a trained run on a split, print and save the metrics."""

from __future__ import annotations

import argparse
import logging
import sys

from ._common import CliError, HelpFormatter, add_common_options, add_decoding_options, check_at_least, format_metrics
from ._eval_progress import EvalProgress, misapplied_options

__all__ = ["register", "run"]

_EPILOG = """\
examples:
  synthformer eval runs/lm_tiny_shakespeare                 # loss, perplexity, bits per character
  synthformer eval runs/mt_multi30k_de_en --split test --beam 4
  synthformer eval runs/mt_multi30k_de_en --beam 1 --max-examples 200   # quick greedy check
  synthformer eval runs/cls_sst2 --split valid              # accuracy
  synthformer eval runs/glue_RV --checkpoint best           # the checkpoint train.keep_best kept
  synthformer eval runs/table3/samsum_R+V --min-length 10 --no-repeat-ngram-size 3   # ROUGE-1/2/L/Lsum
  synthformer eval runs/table3/personachat_D                # BLEU-1/4, METEOR, ROUGE-L, CIDEr, distinct-1/2

The metrics are written to RUN_DIR/eval_<split>.json (replacing an earlier evaluation of that split); for
translation the decoded outputs go to RUN_DIR/eval_<split>_hypotheses.txt. BLEU and chrF are computed by
sacrebleu on the detokenized output and printed with their signatures. The decoding options (--beam,
--length-penalty, --min-length, --max-length, --no-repeat-ngram-size) apply to every encoder-decoder task
and default to the run's eval settings. The metrics are also appended to RUN_DIR/metrics.jsonl as one
record whose keys start with the split's name ("test_rouge1", ...).

The decoding options and --max-examples apply only to encoder-decoder tasks; given for a language model or a
classifier they are refused (exit status 2) rather than ignored. Progress: a bar of the batches scored on a
terminal; off one (a log file, a batch job) a line a minute at most (--no-progress: neither).
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``eval`` verb."""
    p = sub.add_parser(
        "eval", help="evaluate a trained run on a split", formatter_class=HelpFormatter, epilog=_EPILOG,
        description="Load the latest checkpoint of a run and report its task metrics on a split: LM loss, "
                    "perplexity and bits per character; translation BLEU and chrF (sacrebleu) of beam-search "
                    "output; classification accuracy.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by 'synthformer train'")
    p.add_argument("--split", choices=("test", "valid"), default=None,
                   help="split to score (default: test if the task has one, else valid)")
    add_decoding_options(p, max_length=True, prefix="seq2seq: ")
    p.add_argument("--max-examples", type=int, default=None, metavar="N",
                   help="seq2seq: decode only the first N (refused for other tasks)")
    p.add_argument("--batch-size", type=int, default=None, metavar="N", help="evaluation batch size")
    p.add_argument("--checkpoint", default=None, metavar="WHICH",
                   help="the checkpoint to score: latest (the default), best (kept by train.keep_best), or a step "
                        "number")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar or lines (default: a bar on a terminal, else a line a minute at most)")
    add_common_options(p)
    p.set_defaults(handler=run, default_log_level=logging.WARNING)


def run(args: argparse.Namespace) -> int:
    """Evaluate and print the metrics (and sacrebleu signatures)."""
    from synthformer.tasks import evaluate_run

    check_at_least(args, ("beam", "max_examples", "batch_size", "max_length"), 1)
    check_at_least(args, ("length_penalty", "min_length", "no_repeat_ngram_size"), 0)
    check_options_apply(args)
    decoding = {"length_penalty": args.length_penalty, "min_length": args.min_length,
                "max_decode_len": args.max_length, "no_repeat_ngram_size": args.no_repeat_ngram_size}
    bar = not args.no_progress and sys.stderr.isatty()
    progress = logging.getLogger("synthformer.cli._eval_progress")
    level = progress.level
    if not bar and not args.no_progress and logging.getLogger().level == logging.WARNING:
        progress.setLevel(logging.INFO)  # off a terminal its lines are the only sign of life (not with -q)
    try:
        with EvalProgress(args.run_dir + (f" ({args.split})" if args.split else ""), bar=bar):
            report = evaluate_run(args.run_dir, args.split, beam=args.beam, max_examples=args.max_examples,
                                  batch_size=args.batch_size, decoding=decoding, checkpoint=args.checkpoint)
    finally:
        progress.setLevel(level)
    print(f"{args.run_dir} (step {report.step}), split {report.split}:")
    for line in format_metrics(report.metrics, prefix="  "):
        print(line)
    print(f"written to {report.path}")
    return 0


def check_options_apply(args: argparse.Namespace) -> None:
    """Refuse the decoding options (and --max-examples) for a run whose task does not decode, naming the option,
    the task type and what applies. A run directory whose config cannot be read is left to the evaluation, which
    names what is wrong with it."""
    from synthformer.models import config_class
    from synthformer.tasks import get_task_type, list_task_types, read_run_config
    from synthformer.train import RunDir

    if all(getattr(args, name) is None for name in ("beam", "length_penalty", "min_length", "max_length",
                                                    "no_repeat_ngram_size", "max_examples")):
        return
    try:
        task = read_run_config(RunDir(args.run_dir)).task
        task_type = task.task_type
    except Exception:  # noqa: BLE001 - any problem is reported by evaluate_run, in its words
        return
    def encoder_decoder(arch: str) -> bool:
        return bool(config_class(arch).encoder_decoder)

    decoding = [name for name in list_task_types() if encoder_decoder(get_task_type(name).arch)]
    refusal = misapplied_options(vars(args), task.type, task_type.arch, encoder_decoder(task_type.arch), decoding)
    if refusal:
        raise CliError(refusal)
