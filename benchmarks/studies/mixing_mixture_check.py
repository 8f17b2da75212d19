"""Rule out the pipeline before reading a mixture's failure on MQAR (docs/results/mixing.md, "Finding a setting where
V learns"): does one part swamp the other, at the start or after training?

* ``init``: the spread of each part's logits over the keys (their standard deviation along the key axis, averaged
  over queries, samples and seeds) of a freshly built mixture at MQAR's width, on layer-normalized Gaussian inputs
  (what a pre-norm block hands its mixer at the start, up to the embeddings' structure), and the mixture weights
  ``alpha`` (equal at the start by construction).
* ``trained``: the mixture weights ``alpha`` of each layer of trained runs, read from their latest checkpoint.

    python benchmarks/studies/mixing_mixture_check.py init --kind D+V --width 128 --seq-len 64
    python benchmarks/studies/mixing_mixture_check.py trained NAME=RUN_DIR [NAME=RUN_DIR ...]

append one entry each to ``benchmarks/results/mixing_mixture.jsonl``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, append, metadata  # noqa: E402 - benchmarks/records.py

RECORD = RESULTS / "mixing_mixture.jsonl"
TABLE = "mixing_mixture"


def init_spread(kind: str, width: int, seq_len: int, seeds: int = 5, batch: int = 8) -> dict[str, Any]:
    """Each part's mean logit spread over the keys at initialization (causal, one head), and alpha."""
    import torch

    from synthformer.attention.factory import build_mixer

    spreads: dict[str, list[float]] = {}
    for seed in range(seeds):
        torch.manual_seed(seed)
        synth = build_mixer(kind, width, 1, seq_len, causal=True).synth
        x = torch.nn.functional.layer_norm(torch.randn(batch, seq_len, width), (width,))  # (B, L, d)
        with torch.no_grad():
            for part in synth.parts:
                # (B, H, L, L) logits before the causal mask; the spread along the keys of each query row
                spreads.setdefault(part.name, []).append(float(part.logits(x).std(dim=-1).mean()))
        alpha = [float(a) for a in synth.alpha().detach()[0]]
    return {"parts": {name: sum(v) / len(v) for name, v in spreads.items()}, "alpha": alpha, "seeds": seeds}


def trained_alpha(run_dir: Path) -> dict[str, Any]:
    """Per layer, the mixture weights of the run's latest checkpoint, and the parts' names."""
    import torch
    from safetensors.torch import load_file

    checkpoints = sorted((run_dir / "checkpoints").glob("step_*/model.safetensors"))
    if not checkpoints:
        raise SystemExit(f"error: {run_dir}: no checkpoints/step_*/model.safetensors")
    weights = load_file(str(checkpoints[-1]))
    layers = {key.removesuffix(".alpha_logits"): [round(float(a), 4) for a in torch.softmax(v.float(), -1)[0]]
              for key, v in sorted(weights.items()) if key.endswith("alpha_logits")}
    if not layers:
        raise SystemExit(f"error: {run_dir}: the checkpoint holds no mixture weights (not a mixture run)")
    import yaml

    config = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))
    return {"kind": config["model"]["decoder_kind"], "layers": layers, "checkpoint": checkpoints[-1].parent.name}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="action", required=True)
    init = sub.add_parser("init", help="the parts' logit spread at initialization")
    init.add_argument("--kind", default="D+V")
    init.add_argument("--width", type=int, default=128)
    init.add_argument("--seq-len", type=int, default=64)
    trained = sub.add_parser("trained", help="the mixture weights of trained runs")
    trained.add_argument("runs", nargs="+", help="NAME=RUN_DIR")
    args = parser.parse_args(argv)
    command = "python benchmarks/studies/mixing_mixture_check.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    if args.action == "init":
        found = init_spread(args.kind, args.width, args.seq_len)
        row = f"init-{args.kind}-d{args.width}"
        append(RECORD, {"table": TABLE, "row": row, "what": "init", "kind": args.kind, "width": args.width,
                        "seq_len": args.seq_len, **found, **metadata(command, None, True)})
        print(f"# {row}: {found}")
        return 0
    for spec in args.runs:
        name, sep, path = spec.partition("=")
        if not sep:
            parser.error(f"{spec}: expected NAME=RUN_DIR")
        found = trained_alpha(Path(path))
        append(RECORD, {"table": TABLE, "row": f"trained-{name}", "what": "trained", "run": name, **found,
                        **metadata(command, None, True)})
        print(f"# {name}: {found['layers']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
