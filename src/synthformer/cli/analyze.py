"""``synthformer analyze RUN_DIR``: the paper's analysis of a trained run (or of every run of a study): attention
histograms at initialisation and after training, heatmaps on an example, mixture weights, the pattern by relative
distance."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from ._common import CliError, HelpFormatter, add_common_options

__all__ = ["register", "run"]

_EPILOG = """\
examples:
  synthformer analyze runs/lm_tiny_shakespeare              # writes runs/lm_tiny_shakespeare/analysis/
  synthformer analyze runs/lm_tiny_shakespeare --example "ROMEO: But soft" --out figures/lm_R+V
  synthformer analyze runs/mt_multi30k_de_en --example-index 12 --positions 32   # encoder and decoder
  synthformer analyze studies/shakespeare                   # every run of a study (STUDY/<kind>/seed<k>)
  synthformer analyze studies/shakespeare/R/seed0           # one run of it

Written to OUT (default RUN_DIR/analysis; for a study STUDY/analysis/<run>/ and an index STUDY/analysis/
analysis.md): histogram_<stack>.png (paper Figures 2-3), heatmap_<stack>_layer<N>.png (Figures 4-6; for a
mixture such as R+V each part's own softmax and the mixture), alpha_<stack>.png (mixture weights per layer
and head), distance_<stack>.png (mean weight by query - key distance), analysis.json (every number) and
analysis.md (the figures with tables).

The weights after training are those of the run's latest checkpoint. The weights at initialisation are not
stored: they are rebuilt by re-initialising the model with the run's train.seed, in the order 'synthformer
train' builds it, which gives exactly the weights the run started from (a run started with init_from started
from its pretrained weights instead; the report says so). Statistics cover the (query, key) pairs each layer
may attend, on --batches batches of the --split split; layers and heads are numbered from 1.
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``analyze`` verb."""
    p = sub.add_parser(
        "analyze", help="attention histograms, heatmaps and mixture weights of a trained run (paper figures 2-6)",
        formatter_class=HelpFormatter, epilog=_EPILOG,
        description="Analyse the attention of a trained run, or of every run in a study directory, as the paper's "
                    "section 5 does: histograms of the attention weights at initialisation and after training, "
                    "heatmaps of each layer and head on a real example, the mixture weights alpha, and the mean "
                    "weight by relative distance (does a Random Synthesizer LM learn a local window?).",
    )
    p.add_argument("path", metavar="RUN_DIR",
                   help="a run directory written by 'synthformer train', or a study directory of runs")
    p.add_argument("--out", metavar="DIR", default=None, help="output folder (default: RUN_DIR/analysis)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--example", metavar="TEXT", default=None,
                       help="a text to show in the heatmaps (seq2seq: the source; the target is the model's greedy "
                            "output)")
    which.add_argument("--example-index", metavar="N", type=int, default=None,
                       help="show example N of the split in the heatmaps (default: the first, 0)")
    p.add_argument("--positions", metavar="N", type=int, default=64,
                   help="the heatmaps show the example's first N positions")
    p.add_argument("--split", choices=("valid", "test", "train"), default="valid",
                   help="split whose examples the statistics and heatmaps use")
    p.add_argument("--batches", metavar="N", type=int, default=4,
                   help="batches of the split for the histograms and distance profiles (evenly spaced)")
    p.add_argument("--batch-size", metavar="N", type=int, default=8, help="their size")
    add_common_options(p)
    p.set_defaults(handler=run, default_log_level=logging.WARNING)


def run(args: argparse.Namespace) -> int:
    """Analyse and print where each run's report was written."""
    from synthformer.analysis import analyze

    for name in ("batches", "batch_size", "positions"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise CliError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    if args.example_index is not None and args.example_index < 0:
        raise CliError(f"--example-index must be >= 0, got {args.example_index}")
    results = analyze(args.path, args.out, split=args.split, max_batches=args.batches,
                      batch_size=args.batch_size, example=args.example, example_index=args.example_index,
                      positions=args.positions)
    for result in results:
        layers = result.data["layers"].values()
        local = "; ".join(f"{layer['stack'][:3]} L{layer['layer']} {part} {d['local_mass']:.2f}"
                          for layer in layers for part, d in layer["distance"]["trained"].items())
        print(f"{result.run_dir} (step {result.data['step']}): {len(result.figures)} figures in {result.out}")
        print(f"  attention mass within distance {_window(result.data)}: {local}")
    if len(results) > 1:
        base = Path(args.out) if args.out is not None else Path(args.path) / "analysis"
        print(f"index of the study's runs: {base / 'analysis.md'}")
    return 0


def _window(data: dict) -> int:
    layer = next(iter(data["layers"].values()))
    return next(iter(layer["distance"]["trained"].values()))["window"]
