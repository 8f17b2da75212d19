"""Record the runs that chose the benchmarks' settings (docs/results/mixing.md, "Finding a setting where V learns"):
V (and the +V mixtures, which set MQAR's budget), one seed, trained with ``synthformer train CONFIG KEY=VALUE ...
--threads 1`` (or a run of a study's learning-rate grid) while the configs and the generator were being settled.
Each entry holds what the run directory itself says (its saved ``config.yaml``: kind, task, vocabulary, pairs,
queries, width, heads, learning rate, steps, batch; its validation curve from ``metrics.jsonl``), the layout of
the queries of the generator it ran (``once``: every key asked once, Zoology's; ``drawn``: drawn with replacement,
from commit 1ae1c2b on; ``mad``: a MAD task, whose layout is the generator's) and whether it was stopped before its
last step.

    python benchmarks/studies/mixing_calibration.py [NAME=]RUN_DIR:LAYOUT [...] --shared-cpu

appends one entry per run (named NAME, default the run folder's name) to
``benchmarks/results/mixing_calibration.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, append, metadata  # noqa: E402

RECORD = RESULTS / "mixing_calibration.jsonl"
LAYOUTS = ("once", "drawn", "mad")


def entry(run_dir: Path, layout: str, name: str | None = None) -> dict[str, Any]:
    """The record entry of one calibration run (see the module docstring)."""
    config = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))
    from synthformer.tasks.suites.mixing import get_benchmark

    generator = str(config["task"]["generator"])
    # the benchmark's defaults under what the config set (a MAD config leaves them to the generator)
    opts = {**get_benchmark(generator.removeprefix("mixing:")).option_defaults,
            **config["task"]["generator_options"]}
    model, train = config["model"], config["train"]
    evals = [r for line in (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
             if "eval_accuracy" in (r := json.loads(line))]
    settings = {"generator": generator, "vocab_size": opts.get("vocab_size"), "seq_len": opts.get("seq_len"),
                "num_pairs": opts.get("num_pairs"), "num_queries": opts.get("num_queries") or opts.get("num_pairs"),
                "queries": layout, "kind": model.get("decoder_kind", "V"),
                "d_model": model["d_model"], "n_heads": model["n_heads"], "n_layers": model["n_layers"],
                "lr": train["lr"], "batch_size": train["batch_size"], "steps": train["steps"]}
    overrides = [f"task.generator={generator}"]
    overrides += [f"task.generator_options.{k}={opts[k]}" for k in ("vocab_size", "seq_len", "num_pairs") if k in opts]
    overrides += [f"task.generator_options.num_queries={opts['num_queries']}"] if opts.get("num_queries") else []
    overrides += [f"task.max_len={config['task']['max_len']}"]  # the configs' 64 / 128 fit only their defaults
    overrides += [f"model.decoder_kind={model['decoder_kind']}"] if model.get("decoder_kind", "V") != "V" else []
    overrides += [f"model.d_model={model['d_model']}", f"model.n_heads={model['n_heads']}",
                  f"train.lr={train['lr']}", f"train.steps={train['steps']}", f"train.batch_size={train['batch_size']}"]
    config_file = "configs/mixing_mqar.yaml" if generator == "mixing:mqar" else "configs/mixing_mad.yaml"
    command = f"synthformer train {config_file} {' '.join(overrides)} --run-dir RUN --threads 1"
    return {"table": "mixing_calibration", "row": name or run_dir.name, "settings": settings,
            "curve": [[r["step"], r["eval_accuracy"]] for r in evals],
            "last_step": evals[-1]["step"] if evals else 0, "stopped_early": not evals or
            evals[-1]["step"] < train["steps"], "best_accuracy": max((r["eval_accuracy"] for r in evals), default=None),
            **metadata(command, 1, True)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="[NAME=]RUN_DIR:LAYOUT (LAYOUT: once, drawn or mad; NAME: the "
                        "row's name, default the folder's)")
    parser.add_argument("--shared-cpu", action="store_true", help="accepted for symmetry: calibration runs shared it")
    args = parser.parse_args(argv)
    for spec in args.runs:
        name, _, rest = spec.partition("=")
        if "/" in name or not rest:  # no NAME= in front (a folder's name may hold "=", as a study's do)
            name, rest = "", spec
        path, _, layout = rest.rpartition(":")
        if layout not in LAYOUTS:
            parser.error(f"{spec}: expected [NAME=]RUN_DIR:LAYOUT with LAYOUT one of {', '.join(LAYOUTS)}")
        found = entry(Path(path), layout, name or None)
        append(RECORD, found)
        print(f"# {Path(path).name}: best validation accuracy {found['best_accuracy']:.3f} by step "
              f"{found['last_step']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
