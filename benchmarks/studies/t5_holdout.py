"""A GLUE folder for tuning without the dev sets: each task's official training split cut into a training part and
a held-out validation part, written in the official layout (``<TASK>/train.tsv`` and ``<TASK>/dev.tsv``).

The GLUE dev sets serve as the test sets of docs/results/t5.md (the test labels are not public), so they are never
used to choose a setting. A run on this folder (``task.train=FOLDER``) scores its ``valid`` split on the held-out
part of the training data instead; what was chosen with it is said in docs/results/t5.md.

    python benchmarks/studies/t5_holdout.py --out runs/glue_holdout         # 10% of each task held out, seed 0
    synthformer train configs/t5arch_cpu_glue.yaml init_from=RUN task.train=runs/glue_holdout --run-dir ...
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

#: The GLUE tasks with a training split in the shared folder, and whether their TSV files start with a header.
TASKS: dict[str, bool] = {"CoLA": False, "MRPC": True, "RTE": True, "SST-2": True, "STS-B": True}


def split_task(source: Path, out: Path, header: bool, fraction: float, seed: int) -> tuple[int, int]:
    """Write ``out/train.tsv`` and ``out/dev.tsv`` from ``source/train.tsv``: a seeded ``fraction`` of its rows
    held out as ``dev``, the rest ``train``, both in file order and with the header when the task has one. Returns
    the rows of each part."""
    lines = (source / "train.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
    head, rows = (lines[:1], lines[1:]) if header else ([], lines)
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    held = set(order[: max(1, round(fraction * len(rows)))])
    out.mkdir(parents=True, exist_ok=True)
    train = [r for i, r in enumerate(rows) if i not in held]
    dev = [r for i, r in enumerate(rows) if i in held]
    (out / "train.tsv").write_text("".join(head + train), encoding="utf-8")
    (out / "dev.tsv").write_text("".join(head + dev), encoding="utf-8")
    return len(train), len(dev)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--glue", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data" / "glue",
                   help="the official GLUE folder (default: ../shared/data/glue)")
    p.add_argument("--out", type=Path, required=True, help="the folder to write")
    p.add_argument("--fraction", type=float, default=0.1, help="share of each training split held out (0.1)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if not 0 < args.fraction < 1:
        p.error(f"--fraction: expected a share between 0 and 1, got {args.fraction}")
    for task, header in TASKS.items():
        if not (args.glue / task / "train.tsv").is_file():
            p.error(f"{args.glue / task / 'train.tsv'}: no such file (--glue names the official GLUE folder)")
        train, dev = split_task(args.glue / task, args.out / task, header, args.fraction, args.seed)
        print(f"{task}: {train:,} training rows, {dev:,} held out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
