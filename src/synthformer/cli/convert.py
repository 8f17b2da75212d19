"""``synthformer convert t5 HF_FOLDER CONFIG --run-dir DIR``: a Hugging Face T5 checkpoint as a run directory (the
``hf`` extra)."""

from __future__ import annotations

import argparse
import logging

from ._common import HelpFormatter, add_common_options, import_hf

__all__ = ["register", "run"]

_EPILOG = """\
examples:
  synthformer convert t5 t5-small/ configs/t5_small_glue.yaml --run-dir runs/t5-small --tokenizer tok.json
  synthformer train configs/t5_small_glue.yaml init_from=runs/t5-small model.encoder_kind=R+V \\
      model.decoder_kind=R+V --run-dir runs/t5-small-rv   # grow Syn (R+V) from it, then finetune

HF_FOLDER is a local folder written by T5ForConditionalGeneration.save_pretrained (nothing is downloaded). The
run directory gets CONFIG's task, train and eval sections, the converted model's settings as its model section
(variant t5, position_bias t5, V attention), the tokenizer and a step-0 checkpoint: eval, generate, train
--resume, init_from and export work on it. The tokenizer's ids must be the checkpoint's (vocabulary size, pad,
eos, and bos = T5's decoder start). Needs the hf extra: pip install 'synthformer[hf]'.
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``convert`` verb."""
    p = sub.add_parser(
        "convert", help="convert a Hugging Face T5 checkpoint into a run directory", formatter_class=HelpFormatter,
        epilog=_EPILOG,
        description="Convert a T5ForConditionalGeneration folder (T5 v1.0 or v1.1) into a synthformer run "
                    "directory with the same weights: logits equal to transformers' within 1e-5.",
    )
    p.add_argument("source", choices=["t5"], help="the kind of checkpoint (only t5)")
    p.add_argument("folder", metavar="HF_FOLDER", help="a local save_pretrained folder")
    p.add_argument("config", metavar="CONFIG", help="YAML run config: the task the run is evaluated and finetuned on")
    p.add_argument("overrides", metavar="KEY=VALUE", nargs="*", help="dotted config overrides")
    p.add_argument("--run-dir", metavar="DIR", required=True, help="the run directory to create")
    p.add_argument("--tokenizer", metavar="FILE", help="a synthformer tokenizer file (default: HF_FOLDER's own "
                                                        "synthformer_tokenizer.json)")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier run in --run-dir")
    add_common_options(p)
    p.set_defaults(handler=run, default_log_level=logging.WARNING)


def run(args: argparse.Namespace) -> int:
    """Convert and print where the run directory is."""
    convert_t5 = import_hf("convert", "synthformer.hf.t5_run", "convert_t5")
    out = convert_t5(args.folder, args.run_dir, args.config, overrides=args.overrides, tokenizer=args.tokenizer,
                     overwrite=args.overwrite)
    print(f"converted {args.folder} into the run directory {out}")
    return 0
