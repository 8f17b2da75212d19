"""Parameter counts of T5 (Base), the Synthesizer mixtures and T5 (Base+) at the paper's base size.

T5 (Base+) (the paper's Tables 5 and 6) is T5 widened to the Syn (+V) models' parameter count, "approximately 10M
more parameters" (section 4.2); :func:`synthformer.models.widening.widen_to_parameters` widens ``d_ff`` to the
closest count. The models are built on the ``meta`` device (no memory): the whole table takes seconds.

The base size: d_model 768, 12 + 12 layers, 12 heads, d_ff 3072, vocabulary 32,128 (T5's), max length 512 (the size
of R and of D's output). Every self-attention stack of the architecture gets the Synthesizer kind (``--encoder-only``:
the encoder's alone); cross-attention stays V. The architecture is any registered encoder-decoder (``--arch``),
with ``--set`` changing its fields, so the same command counts T5's own architecture once it is registered.

Usage:
    python benchmarks/studies/t5_base_plus.py               # the table of docs/benchmarks.md
    python benchmarks/studies/t5_base_plus.py --encoder-only --step 128
    python benchmarks/studies/t5_base_plus.py --arch seq2seq --set tie_embeddings=false
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

import yaml

from synthformer.models import ModelConfig
from synthformer.models.widening import WIDENABLE, count_parameters, widen_to_parameters

#: The paper's T5 base size (section 4.2 and T5's own base model).
T5_BASE: dict[str, Any] = dict(d_model=768, n_heads=12, n_layers=12, d_ff=3072, vocab_size=32128, max_len=512)
#: The paper's Table 4 parameter counts (C4 pretraining at this size), for comparison.
PAPER: dict[str, str] = {"T5 (Base)": "223M", "Syn (R+V)": "292M", "Syn (D+V)": "243M",
                         "T5 (Base+)": "Syn (+V)'s, \"about 10M more\""}


def base_config(arch: str, overrides: dict[str, Any]) -> ModelConfig:
    """The base-size config of ``arch`` with ``overrides``."""
    return ModelConfig.from_dict({"arch": arch, **T5_BASE, **overrides})


def with_kind(config: ModelConfig, kind: str, encoder_only: bool) -> ModelConfig:
    """``config`` with ``kind`` in every self-attention stack (the encoder's alone with ``encoder_only``)."""
    stacks = [s for s in config.stacks if s == "encoder" or not encoder_only]
    return dataclasses.replace(config, **{f"{s}_kind": kind for s in stacks})


def rows(base: ModelConfig, encoder_only: bool, dim: str, step: int | None,
         plus: int = 10_000_000) -> list[tuple[str, str, int, int]]:
    """(model, setting, width of ``dim``, parameters) of T5 (Base), Syn (R+V), Syn (D+V), and T5 (Base+) widened to
    ``plus`` more than the base (the paper's "about 10M") and to each mixture's count."""
    counts = {"T5 (Base)": count_parameters(base)}
    for kind in ("R+V", "D+V"):
        counts[f"Syn ({kind})"] = count_parameters(with_kind(base, kind, encoder_only))
    width = getattr(base, dim)
    out = [(name, "" if name == "T5 (Base)" else "self-attention " + name[5:-1], width, n)
           for name, n in counts.items()]
    targets = {f"+{plus / 1e6:g}M": counts["T5 (Base)"] + plus, "= Syn (D+V)": counts["Syn (D+V)"],
               "= Syn (R+V)": counts["Syn (R+V)"]}
    for label, target in targets.items():
        wider, n = widen_to_parameters(base, target, dim=dim, step=step)
        out.append(("T5 (Base+)", f"{dim} widened, {label}", getattr(wider, dim), n))
    return out


def table(base: ModelConfig, encoder_only: bool, dim: str, step: int | None) -> str:
    """The markdown table of :func:`rows`, with the difference to T5 (Base) and the paper's counts."""
    found = rows(base, encoder_only, dim, step)
    reference = found[0][3]
    lines = [f"| model | setting | {dim} | parameters | vs T5 (Base) | paper (Table 4 / section 4.2) |",
             "|---|---|---:|---:|---:|---|"]
    for name, setting, width, n in found:
        lines.append(f"| {name} | {setting} | {width:,} | {n:,} | {n - reference:+,} | {PAPER[name]} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", default="seq2seq", help="a registered encoder-decoder architecture (seq2seq)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="change base-size fields, e.g. --set d_ff=2048 max_len=256")
    parser.add_argument("--encoder-only", action="store_true",
                        help="the Synthesizer kind in the encoder only (the decoder stays V)")
    parser.add_argument("--dim", default="d_ff", choices=WIDENABLE, help="the dimension T5 (Base+) widens")
    parser.add_argument("--step", type=int, default=None, help="widening granularity (default: 1 for d_ff, "
                        "n_heads for d_model)")
    args = parser.parse_args(argv)
    overrides: dict[str, Any] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            parser.error(f"--set expects KEY=VALUE, got {item!r}")
        overrides[key.strip()] = yaml.safe_load(value)
    try:
        base = base_config(args.arch, overrides)
        if not base.encoder_decoder:
            raise ValueError(f"--arch {args.arch!r} is not an encoder-decoder")
        text = table(base, args.encoder_only, args.dim, args.step)
    except (ValueError, TypeError) as err:
        print(f"t5_base_plus: error: {err}", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
