"""``synthformer generate RUN_DIR``: continue a prompt (LM), translate / transduce inputs (seq2seq) or label
texts (classification) with a trained run."""

from __future__ import annotations

import argparse
import logging
import sys

from ._common import CliError, HelpFormatter, add_common_options, add_decoding_options, check_at_least

__all__ = ["register", "run"]

_EPILOG = """\
examples:
  synthformer generate runs/lm_tiny_shakespeare --prompt "ROMEO:" --max-new-tokens 100 --temperature 0.8
  synthformer generate runs/compare-pystdlib/R --prompt "def " --top-k 10
  synthformer generate runs/mt_multi30k_de_en --prompt "Ein Mann fährt Fahrrad." --beam 4
  synthformer generate runs/mt_multi30k_de_en --input sentences.de > sentences.en
  synthformer generate runs/cls_sst2 --input reviews.txt              # one label per line
  synthformer generate runs/table3/samsum_R+V --input dialogues.txt --min-length 8 --no-repeat-ngram-size 3
  synthformer generate runs/table3/personachat_D --prompt '{"persona": ["i like to ski."], "turns": ["hi !"]}'
  synthformer generate runs/table3/dailydialog_V --prompt "Hello , how are you ? __eou__ Fine , thanks . And you ?"

Language models sample (temperature 0 = greedy); translation uses beam search with the run's length
penalty (beam 1 = greedy), --min-length and --no-repeat-ngram-size (defaults: the run's eval settings);
dialogue runs read a JSON object {"persona": [...], "turns": [...]} or turns separated by __eou__ and
answer the last turn; classifiers print "label<TAB>probability". With --input, every line of the file is
one input and (seq2seq, classification) gives one output line.
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``generate`` verb."""
    p = sub.add_parser(
        "generate", help="generate text with a trained run", formatter_class=HelpFormatter, epilog=_EPILOG,
        description="Generate with the latest checkpoint of a run: sample continuations from a language model, "
                    "beam-search outputs of an encoder-decoder, or predict the labels of a classifier.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by 'synthformer train'")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--prompt", metavar="TEXT", help="one input text")
    source.add_argument("--input", metavar="FILE", help="a UTF-8 file with one input per line ('-': stdin)")
    p.add_argument("--max-new-tokens", type=int, default=None, metavar="N",
                   help="most tokens to generate (default: LM half its context; seq2seq the run's target length)")
    p.add_argument("--temperature", type=float, default=1.0, help="LM sampling temperature (0 = greedy)")
    p.add_argument("--top-k", type=int, default=None, metavar="K", help="LM: sample among the K most likely tokens")
    p.add_argument("--top-p", type=float, default=None, metavar="P", help="LM: nucleus sampling with mass P")
    add_decoding_options(p, max_length=False, prefix="seq2seq: ")
    p.add_argument("--seed", type=int, default=0, help="LM: seed of the sampling draws")
    add_common_options(p)
    p.set_defaults(handler=run, default_log_level=logging.WARNING)


def _inputs(args: argparse.Namespace) -> list[str]:
    if args.prompt is not None:
        return [args.prompt]
    if args.input == "-":
        return sys.stdin.read().splitlines()
    from synthformer.tasks import read_input_lines

    lines = read_input_lines(args.input)
    if not lines:
        raise CliError(f"{args.input}: the input file is empty")
    return lines


def _check(args: argparse.Namespace) -> None:
    check_at_least(args, ("max_new_tokens", "top_k", "beam"), 1)
    check_at_least(args, ("temperature", "length_penalty", "min_length", "no_repeat_ngram_size"), 0)
    if args.top_p is not None and not 0 < args.top_p <= 1:
        raise CliError(f"--top-p must be in (0, 1], got {args.top_p}")


def run(args: argparse.Namespace) -> int:
    """Generate and print one output per input."""
    from synthformer.tasks import generate_texts, load_run

    _check(args)
    loaded = load_run(args.run_dir)
    inputs = _inputs(args)
    outputs = generate_texts(loaded, inputs, max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                             top_k=args.top_k, top_p=args.top_p, beam=args.beam, seed=args.seed,
                             length_penalty=args.length_penalty, min_length=args.min_length,
                             no_repeat_ngram_size=args.no_repeat_ngram_size)
    task_type = loaded.config.task.task_type
    for i, out in enumerate(outputs):
        print(task_type.format_generated(out, i))
    return 0
