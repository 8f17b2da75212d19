"""``synthformer synthesize MODEL_DIR --kind R+V --out DIR``: a Hugging Face model folder (Llama, Mistral, Qwen2,
GPT-2, BERT, T5, BART) with its self-attention computed by synthetic attention kinds (the ``hf`` extra)."""

from __future__ import annotations

import argparse
import logging

from ._common import CliError, HelpFormatter, add_common_options, import_hf

__all__ = ["register", "run"]

_EPILOG = """\
examples:
  synthformer synthesize my-llama/ --kind R+V --out my-llama-rv/ --max-len 256   # starts at my-llama's logits
  synthformer synthesize my-gpt2/ --kind R --layers 0,1 --out my-gpt2-r/ --data shakespeare.txt --distill-steps 200
  synthformer synthesize my-llama/ --kind D --dry-run                             # the plan; nothing written

MODEL_DIR is a local save_pretrained folder; it is only read. A kind holding V (R+V, D+V, ...) starts at the
pretrained function (its new parts' logits zero): the written model gives MODEL_DIR's logits until it is trained.
With --data, a kind with R but without V starts from the pretrained mean attention on that text (per layer and
head), and --distill-steps fits the synthesized layers to the pretrained layers' outputs on it. Load the result
with synthformer.hf.synthesize.from_pretrained(DIR), or by path with the Auto class and trust_remote_code=True
(without it, transformers loads the original attention). Needs the hf extra: pip install 'synthformer[hf]'.
"""


def _layers(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected layer indices such as 0,1,5") from None


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``synthesize`` verb."""
    p = sub.add_parser(
        "synthesize", help="give a Hugging Face model's self-attention synthetic attention kinds",
        formatter_class=HelpFormatter, epilog=_EPILOG,
        description="Replace the self-attention of a transformers model folder by synthetic attention kinds "
                    "(R, D, R+V, ...) and write the result as a new folder.",
    )
    p.add_argument("model_dir", metavar="MODEL_DIR", help="a local save_pretrained folder (never modified)")
    p.add_argument("--kind", required=True, help="the attention kind of the synthesized layers (R, D, R+V, D+V, ...)")
    p.add_argument("--out", metavar="DIR", help="the folder to write (must be empty; not needed with --dry-run)")
    p.add_argument("--layers", type=_layers, metavar="I,J,...",
                   help="self-attention layers to synthesize (default all; an encoder-decoder's encoder first)")
    p.add_argument("--max-len", type=int, metavar="N", help="positions R and D are sized for (default the model's)")
    p.add_argument("--no-grow", dest="grow", action="store_false",
                   help="start a +V mixture's new parts at their own initialisation, not at the pretrained function")
    p.add_argument("--data", metavar="TEXT", help="a text file: R's start from the mean attention, and distillation")
    p.add_argument("--distill-steps", type=int, default=0, metavar="N",
                   help="fit the synthesized layers to the pretrained layers' outputs for N steps (needs --data)")
    p.add_argument("--seq-len", type=int, default=64, metavar="N", help="sequence length of the --data samples")
    p.add_argument("--lr", type=float, default=1e-2, help="learning rate of the distillation")
    p.add_argument("--dry-run", action="store_true", help="check everything and print the plan; write nothing")
    p.add_argument("--overwrite", action="store_true", help="replace the files of a non-empty --out")
    add_common_options(p)
    p.set_defaults(handler=run, default_log_level=logging.WARNING)


def run(args: argparse.Namespace) -> int:
    """Synthesize and print what was done."""
    if args.max_len is not None and args.max_len < 1:
        raise CliError(f"--max-len {args.max_len}: expected a positive number of positions")
    synthesize_folder = import_hf("synthesize", "synthformer.hf.synthesize.folder", "synthesize_folder")
    if args.verbose <= 0:  # transformers' loading bars would come before the one line of an error
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    report = synthesize_folder(args.model_dir, args.out, args.kind, layers=args.layers, max_len=args.max_len,
                               grow=args.grow, dry_run=args.dry_run, distill_steps=args.distill_steps,
                               data=args.data, seq_len=args.seq_len, lr=args.lr, overwrite=args.overwrite)
    for line in report.lines():
        print(line)
    print("dry run: nothing written" if args.dry_run else f"wrote {report.out}")
    return 0
