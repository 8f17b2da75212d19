"""``synthformer eval RUN_DIR``: score a trained run on a split, print and save the metrics."""

from __future__ import annotations

import argparse
import logging

from ._common import HelpFormatter, add_common_options, add_decoding_options, check_at_least, format_metrics

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
    p.add_argument("--max-examples", type=int, default=None, metavar="N", help="seq2seq: decode only the first N")
    p.add_argument("--batch-size", type=int, default=None, metavar="N", help="evaluation batch size")
    p.add_argument("--checkpoint", default=None, metavar="WHICH",
                   help="the checkpoint to score: latest (the default), best (kept by train.keep_best), or a step "
                        "number")
    add_common_options(p)
    p.set_defaults(handler=run, default_log_level=logging.WARNING)


def run(args: argparse.Namespace) -> int:
    """Evaluate and print the metrics (and sacrebleu signatures)."""
    from synthformer.tasks import evaluate_run

    check_at_least(args, ("beam", "max_examples", "batch_size", "max_length"), 1)
    check_at_least(args, ("length_penalty", "min_length", "no_repeat_ngram_size"), 0)
    decoding = {"length_penalty": args.length_penalty, "min_length": args.min_length,
                "max_decode_len": args.max_length, "no_repeat_ngram_size": args.no_repeat_ngram_size}
    report = evaluate_run(args.run_dir, args.split, beam=args.beam, max_examples=args.max_examples,
                          batch_size=args.batch_size, decoding=decoding, checkpoint=args.checkpoint)
    print(f"{args.run_dir} (step {report.step}), split {report.split}:")
    for line in format_metrics(report.metrics, prefix="  "):
        print(line)
    print(f"written to {report.path}")
    return 0
