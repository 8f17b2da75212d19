"""``synthformer``: the command line. One thin module per verb (``train``, ``prepare``, ``eval``, ``generate``,
``compare``, ``study``, ``analyze``, ``bench``, ``export``, ``convert``, ``synthesize``, ``data``) over the
importable functions of :mod:`synthformer.tasks`, :mod:`synthformer.study`, :mod:`synthformer.analysis` and
:mod:`synthformer.hf`.

User errors (a bad config key or value, a missing file or run directory, a run directory that would be
overwritten) print one line naming the problem and exit with status 2, never a traceback (``--debug`` shows it).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from . import analyze, bench, compare, convert, data, evaluate, export, generate, prepare, study, synthesize, train
from ._common import EXIT_INTERRUPTED, EXIT_USER_ERROR, CliError, apply_threads, configure_logging, is_user_error

__all__ = ["build_parser", "main"]

_EPILOG = """\
examples:
  synthformer compare                                   # the main job: V, R, D, R+V on a built-in task (~8 min)
  synthformer train configs/algorithmic_reverse.yaml train.steps=300 --run-dir runs/reverse
  synthformer eval runs/reverse --beam 4
  synthformer generate runs/reverse --prompt 12345
  synthformer study configs/lm_tiny_shakespeare.yaml --kinds V,R,D --seeds 3   # seeds, mean ± std, curves, report
  synthformer analyze runs/reverse                      # attention histograms, heatmaps, alpha (paper Figs. 2-6)
  synthformer export runs/reverse exported/reverse      # a Hugging Face folder (the hf extra)
  synthformer bench --preset lm-base                    # the paper's Table 4 on this machine
  synthformer prepare configs/lm_tiny_shakespeare.yaml --out prepared/shk   # token shards, once (large corpora)
  synthformer convert t5 t5-small/ configs/t5_small_glue.yaml --run-dir runs/t5-small --tokenizer tok.json
  synthformer synthesize my-llama/ --kind R+V --out my-llama-rv/ --max-len 256   # a transformers model's attention
  synthformer data list                                 # the named data sets configs read, and where they are

'synthformer VERB --help' explains each verb.
"""

_VERBS = (train, prepare, evaluate, generate, compare, study, analyze, bench, export, convert, synthesize, data)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one sub-command per verb."""
    parser = argparse.ArgumentParser(
        prog="synthformer",
        description="Synthesizer Transformers (Tay et al.): train, evaluate, generate and compare attention variants.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    try:
        from importlib.metadata import version

        parser.add_argument("--version", action="version", version=f"%(prog)s {version('synthformer')}")
    except Exception:  # pragma: no cover - not installed as a distribution
        pass
    sub = parser.add_subparsers(dest="command", metavar="VERB")
    sub.required = True
    for verb in _VERBS:
        verb.register(sub)
    for verb_parser in sub.choices.values():
        if verb_parser.get_default("verb_parser") is None:  # a verb with actions (data) sets its own
            verb_parser.set_defaults(verb_parser=verb_parser)
    return parser


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parser.parse_args``, except that an unknown option is reported by the verb's own parser: argparse would
    report it as the top-level program's ("synthformer: error: ...", with the top-level usage), unlike every other
    error of the verb."""
    args, unknown = parser.parse_known_args(argv)
    # Config overrides given after an option ("train CONFIG --run-dir R train.lr=3e-4"): argparse stops
    # collecting a positional list at the first option, so they come back as unknown. They are still overrides.
    late = [a for a in unknown if "=" in a and not a.startswith("-")]
    if late and hasattr(args, "overrides"):
        args.overrides = [*args.overrides, *late]
        unknown = [a for a in unknown if a not in late]
    if unknown:
        args.verb_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 user error, 130 interrupted)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == [bench.NAME]:
        # the benchmark parses its own options (argparse cannot forward leading options to a sub-parser)
        return bench.run_argv(argv[1:])
    parser = build_parser()
    args = _parse(parser, argv)
    configure_logging(args.verbose - args.quiet, default=getattr(args, "default_log_level", logging.WARNING))
    try:
        if hasattr(args, "threads"):
            apply_threads(args.threads)
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        print(f"synthformer {args.command}: interrupted", file=sys.stderr)
        hint = getattr(args, "interrupt_hint", None)
        if hint:
            print(hint, file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:
        if args.debug or not (isinstance(err, CliError) or is_user_error(err)):
            raise
        print(f"synthformer {args.command}: error: {err}", file=sys.stderr)
        return EXIT_USER_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
