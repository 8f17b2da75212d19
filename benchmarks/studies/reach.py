"""The compute the out-of-reach tables would need: each at its published recipe, counted by ``train --dry-run``'s
plan (:func:`synthformer.bench.plan.plan_run`: FlopCounterMode over a forward and backward on the meta device), and
the CPU time that is at the rate this CPU reached on the task's recorded CPU-size run.

A table is out of reach here when no model, the dot product included, beats its trivial baseline at the compute
this project has (LRA's Pathfinder, GLUE's CoLA / MRPC / RTE and SuperGLUE on the T5 setting). Its page then says
what learning it would take: the published recipe's training FLOPs (forward + backward; evaluation and data
preparation left out) and the days on this machine, at the FLOP/s its recorded run of the same task reached (the
recorded run's FLOPs per step, by the same counter, times its steps, over its training seconds). That rate is an
estimate: larger matrices usually run at a higher rate than the CPU-size models, so the days are an upper bound of
the order, not a schedule.

    python benchmarks/studies/reach.py    # one entry per row into benchmarks/results/reach.jsonl
    python benchmarks/studies/reach.py --rows pathfinder
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, append, latest, metadata  # noqa: E402 - benchmarks/records.py

RECORD = RESULTS / "reach.jsonl"
TABLE = "reach"


@dataclass(frozen=True)
class Reach:
    """One out-of-reach row: the published recipe (``config`` with ``recipe`` overrides) and the recorded CPU-size
    run whose measured rate prices it (``record``'s ``row``; its config and overrides are read from its command)."""

    name: str
    label: str
    stages: tuple[tuple[str, tuple[str, ...]], ...]
    record: str
    row: str
    source: str


REACHES: tuple[Reach, ...] = (
    Reach("pathfinder", "LRA Pathfinder-32 (Transformer)",
          (("configs/lra_pathfinder.yaml", ("train.batch_size=512", "train.steps=62500")),),
          "lra", "pathfinder-V", "google-research/long-range-arena image/configs/pathfinder32: 62,500 steps of 512"),
    Reach("listops", "LRA ListOps (Transformer)", (("configs/lra_listops.yaml", ()),), "lra", "listops-V",
          "google-research/long-range-arena listops/configs: 5,000 steps of 32"),
    Reach("text", "LRA Text (Transformer)", (("configs/lra_text.yaml", ()),), "lra", "text-V",
          "google-research/long-range-arena text_classification/configs: 20,000 steps of 32"),
    Reach("t5-base", "T5 base: C4 pretraining + GLUE / SuperGLUE co-training (V)",
          (("configs/t5_base_pretrain_c4.yaml", ()), ("configs/t5_base_glue.yaml", ())), "t5arch_pretrain", "V",
          "the paper (section 4.4): 524,288 pretraining steps, then 100k steps of the en_mix mixture, batch 128"),
)


def _plan(config: str, overrides: list[str]) -> Any:
    from synthformer.bench.plan import plan_run
    from synthformer.tasks import load_run_config

    return plan_run(load_run_config(ROOT / config, overrides), config=config)


def _train_command(command: str) -> tuple[str, list[str]]:
    """(config, overrides) of a recorded ``synthformer train CONFIG KEY=VALUE ...`` command."""
    words = shlex.split(command.split("&&")[0])  # the train command, not the eval after it
    words = words[words.index("train") + 1:]
    config = words[0]
    return config, [w for w in words[1:] if "=" in w and not w.startswith("-")]


def measure(r: Reach) -> dict[str, Any]:
    """The row's entry: the recipe's FLOPs per stage and in all, the recorded run's rate and the days."""
    stages = []
    for config, overrides in r.stages:
        plan = _plan(config, list(overrides))
        stages.append({"config": config, "overrides": list(overrides), "steps": plan.steps,
                       "examples_per_step": plan.examples_per_step, "flops_per_step": plan.flops_per_step,
                       "flops": plan.flops_per_step * plan.steps, "parameters": plan.parameters})
    recorded = latest(RESULTS / f"{r.record}.jsonl", r.record)[r.row]
    config, overrides = _train_command(recorded["command"])
    run_plan = _plan(config, overrides)
    train_s = float(recorded.get("train_s") or recorded["elapsed_s"])
    rate = run_plan.flops_per_step * recorded["steps"] / train_s
    total = sum(s["flops"] for s in stages)
    return {"table": TABLE, "row": r.name, "label": r.label, "stages": stages, "flops": total,
            "measured_on": {"record": f"benchmarks/results/{r.record}.jsonl", "row": r.row,
                            "steps": recorded["steps"], "train_s": train_s, "flops_per_step": run_plan.flops_per_step,
                            "machine": recorded.get("machine"), "threads": recorded.get("threads")},
            "flops_per_second": rate, "days": total / rate / 86400, "source": r.source}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", nargs="+", default=[r.name for r in REACHES])
    args = parser.parse_args(argv)
    command = "python benchmarks/studies/reach.py" + ("" if args.rows == [r.name for r in REACHES]
                                              else " --rows " + " ".join(args.rows))
    for r in (r for r in REACHES if r.name in args.rows):
        entry = measure(r)
        append(RECORD, {**entry, **metadata(command, None, False)})
        print(f"{r.name}: {entry['flops']:.3g} FLOP, {entry['days']:.3g} days at "
              f"{entry['flops_per_second'] / 1e9:.3g} GFLOP/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
