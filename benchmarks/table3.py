"""The paper's Table 3 on this machine: summarization (SAMSum, DialogSum: ROUGE) and dialogue (DailyDialog,
PersonaChat: BLEU-1, BLEU-4, ROUGE-L, METEOR, CIDEr) for the Transformer (V), Dynamic Convolutions and the
Synthesizers R, D, D+V and R+V (encoder and decoder self-attention of the same kind; cross-attention V).

Resumable: each model trains into ``RUNS/<dataset>_<kind>``; a run already evaluated on its test split is skipped,
one with checkpoints is continued with ``--resume`` (a finished one then only gets evaluated). The final
evaluation is ``synthformer eval`` on the whole test split (written to ``eval_test.json`` and appended to the run's
``metrics.jsonl``); the table shows each metric and its difference to V.

    python benchmarks/table3.py                                   # everything (about 20 minutes per model)
    python benchmarks/table3.py --datasets personachat --kinds V D
    python benchmarks/table3.py --table-only                      # the table of what is finished
    python benchmarks/table3.py --steps 4 --runs /tmp/t3          # a smoke run of the whole grid
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = {"samsum": "configs/table3_samsum.yaml", "dialogsum": "configs/table3_dialogsum.yaml",
           "dailydialog": "configs/table3_dailydialog.yaml", "personachat": "configs/table3_personachat.yaml"}
SUMMARIZATION = ("samsum", "dialogsum")
KINDS = ("V", "DynamicConv", "R", "D", "D+V", "R+V")
LABELS = {"V": "Transformer (V)", "DynamicConv": "Dynamic Conv", "R": "Syn (R)", "D": "Syn (D)", "D+V": "Syn (D+V)",
          "R+V": "Syn (R+V)"}
COLUMNS = {"summarization": (("ROUGE-1", "rouge1"), ("ROUGE-2", "rouge2"), ("ROUGE-L", "rougeL"),
                             ("ROUGE-Lsum", "rougeLsum")),
           "dialogue": (("BLEU-1", "bleu_1"), ("BLEU-4", "bleu_4"), ("ROUGE-L", "rouge_l"), ("METEOR", "meteor"),
                        ("CIDEr", "cider"))}


def run_one(dataset: str, kind: str, runs: Path, extra: list[str]) -> Path:
    """Train (or resume) and evaluate one model unless it is finished; returns its run directory."""
    from synthformer.cli.main import main

    run_dir = runs / f"{dataset}_{kind}"
    if (run_dir / "eval_test.json").is_file():
        print(f"{run_dir}: finished, skipped", flush=True)
        return run_dir
    resume = ["--resume"] if (run_dir / "checkpoints").is_dir() else []
    start = time.perf_counter()
    code = main(["train", str(ROOT / CONFIGS[dataset]), f"model.encoder_kind={kind}", f"model.decoder_kind={kind}",
                 *extra, "--run-dir", str(run_dir), *resume])
    if code != 0:
        raise SystemExit(f"training {run_dir} failed (exit {code})")
    if main(["eval", str(run_dir), "--split", "test"]) != 0:
        raise SystemExit(f"evaluating {run_dir} failed")
    print(f"{run_dir}: trained and evaluated in {time.perf_counter() - start:.0f} s", flush=True)
    return run_dir


def _cell(value: float | None, base: float | None) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    if base is None or math.isnan(base):
        return f"{value:.2f}"
    return f"{value:.2f} ({value - base:+.2f})"


def table(datasets: list[str], kinds: list[str], runs: Path) -> str:
    """Table 3's layout in Markdown: one block per task family, one row per model, each dataset's metrics with
    their difference to V."""
    out = []
    for family in ("summarization", "dialogue"):
        chosen = [d for d in datasets if (d in SUMMARIZATION) == (family == "summarization")]
        if not chosen:
            continue
        header = ["Model"] + [f"{d} {name}" for d in chosen for name, _ in COLUMNS[family]]
        out += [f"**{family}** (test split; in parentheses: difference to V)", "",
                "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        scores = {(d, k): _metrics(runs / f"{d}_{k}") for d in chosen for k in kinds}
        for kind in kinds:
            cells = [_cell(scores[d, kind].get(key), scores.get((d, "V"), {}).get(key) if kind != "V" else None)
                     for d in chosen for _, key in COLUMNS[family]]
            out.append(f"| {LABELS.get(kind, kind)} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def _metrics(run_dir: Path) -> dict[str, float]:
    path = run_dir / "eval_test.json"
    return json.loads(path.read_text(encoding="utf-8"))["metrics"] if path.is_file() else {}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    p.add_argument("--kinds", nargs="+", default=list(KINDS),
                   help="attention kinds / token mixers (default: %(default)s)")
    p.add_argument("--runs", type=Path, default=ROOT / "runs" / "table3", help="where the run directories go")
    p.add_argument("--steps", type=int, default=None, help="override train.steps (smoke runs)")
    p.add_argument("--table-only", action="store_true", help="print the table of the finished runs only")
    args = p.parse_args(argv)
    extra = [] if args.steps is None else [f"train.steps={args.steps}", f"train.save_every={args.steps}",
                                           f"train.eval_every={args.steps}"]
    if not args.table_only:
        for dataset in args.datasets:
            for kind in args.kinds:
                run_one(dataset, kind, args.runs, extra)
    print(table(args.datasets, args.kinds, args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
