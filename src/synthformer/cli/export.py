"""``synthformer export RUN_DIR OUT_DIR``: a trained run as a Hugging Face model folder (the ``hf`` extra)."""

from __future__ import annotations

import argparse
import logging

from ._common import HelpFormatter, add_common_options, import_hf

__all__ = ["register", "run"]

_EPILOG = """\
examples:
  synthformer export runs/shk-R exported/shk-R               # then AutoModelForCausalLM.from_pretrained(...)
  synthformer export runs/mt_multi30k_de_en exported/mt --overwrite

The folder holds config.json (model_type "synthesizer", every model setting and kind), model.safetensors (no
pickle), generation_config.json, the tokenizer in transformers' form (tokenizer.json) and a model card README.md
with the kinds, the data and the run's metrics (eval_*.json, metrics.jsonl). Load it with
'import synthformer.hf' and the Auto classes (AutoModelForCausalLM, AutoModelForSeq2SeqLM,
AutoModelForSequenceClassification, AutoTokenizer); it loads offline. Needs the hf extra:
pip install 'synthformer[hf]'.
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``export`` verb."""
    p = sub.add_parser(
        "export", help="export a trained run as a Hugging Face model folder", formatter_class=HelpFormatter,
        epilog=_EPILOG,
        description="Write the latest checkpoint of a run as a folder that transformers' Auto classes load "
                    "(safetensors weights, config, tokenizer, model card).",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by 'synthformer train'")
    p.add_argument("out_dir", metavar="OUT_DIR", help="the folder to write (created; must be empty)")
    p.add_argument("--overwrite", action="store_true", help="write into a folder that already holds files")
    add_common_options(p)
    p.set_defaults(handler=run, default_log_level=logging.WARNING)


def run(args: argparse.Namespace) -> int:
    """Export and print where the folder is."""
    export_run = import_hf("export", "synthformer.hf.export", "export_run")
    out = export_run(args.run_dir, args.out_dir, overwrite=args.overwrite)
    print(f"exported {args.run_dir} to {out}")
    return 0
