"""The token-mixing study (docs/results/mixing.md): MQAR and the MAD tasks for every kind and baseline, each kind at
its own learning rate.

Two stages, both ``synthformer study`` directories under RUNS (default ``runs/mixing``), both resumable (the same
command continues: finished runs are read back, a half-finished one resumes from its checkpoint):

1. ``run --stage lr``: per benchmark family (MQAR; each MAD task), every kind at each learning rate of :data:`LRS`
   on seed 0 of the family's middle setting (``RUNS/lr-<family>``). ``choose`` then picks, per family and kind, the
   rate with the best validation accuracy (ties: the lower validation loss) and writes the choice with the grid's
   numbers to ``benchmarks/results/mixing_lr.jsonl``. The test split is never read for the choice.
2. ``run --stage seeds``: per setting and kind, :data:`SEEDS` seeds at the chosen rate (``RUNS/<setting>/<kind>``),
   seed 0 of every setting first, then the other seeds, so a study stopped early already has a row per kind.

``record`` appends one entry per (setting, kind) with its finished seeds (validation and test accuracy per seed,
steps/s, parameters) to ``benchmarks/results/mixing.jsonl``; ``benchmarks/docs_tables.py`` builds the page's
tables from it.

    python benchmarks/mixing_study.py run --stage lr --lanes 2        # about 40 min per family on 2 cores
    python benchmarks/mixing_study.py choose
    python benchmarks/mixing_study.py run --stage seeds --lanes 2
    python benchmarks/mixing_study.py record --shared-cpu

Linformer is not among the kinds: it has no causal form (its projection along the length mixes future positions
into every key), and every benchmark here is a causal language model.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from records import RESULTS, ROOT, append, latest, load, metadata  # noqa: E402 - the sibling module

KINDS: tuple[str, ...] = ("V", "R", "Fix", "FR", "D", "FD", "R+V", "D+V", "Conv", "LightConv", "DynamicConv")
LRS: tuple[float, ...] = (3e-4, 1e-3, 3e-3)
SEEDS = 3
RECORD = RESULTS / "mixing.jsonl"
LR_RECORD = RESULTS / "mixing_lr.jsonl"
TABLE = "mixing"


@dataclass(frozen=True)
class Setting:
    """One benchmark setting: its family (which learning-rate choice it uses), config and overrides."""

    name: str
    family: str
    config: str
    overrides: tuple[str, ...] = ()


def _mqar(seq_len: int, pairs: int, width: int = 128) -> Setting:
    """An MQAR setting: ``pairs`` pairs in ``seq_len`` tokens, the tail after them full of queries."""
    name = f"mqar-{seq_len}x{pairs}" + (f"-d{width}" if width != 128 else "")
    queries = (seq_len + 1 - 2 * pairs) // 2
    return Setting(name, "mqar", "configs/mixing_mqar.yaml",
                   (f"task.generator_options.seq_len={seq_len}", f"task.generator_options.num_pairs={pairs}",
                    f"task.generator_options.num_queries={queries}", f"task.max_len={seq_len}",
                    f"model.d_model={width}", f"model.d_ff={2 * width}"))


def _mad(task: str, seq_len: int) -> Setting:
    if task == "compression":
        return Setting("compression", "mad", "configs/mixing_compression.yaml")
    return Setting(task, "mad", "configs/mixing_mad.yaml", (f"task.generator=mixing:{task}", f"task.max_len={seq_len}"))


#: Every setting, in training order within a seed. MQAR's middle setting is where its learning rates are chosen;
#: the MAD tasks share one choice per kind, made on in-context recall (MAD sweeps every task setting; this CPU
#: cannot), so a kind's rate is never V's unless its own grid says so.
SETTINGS: tuple[Setting, ...] = (
    _mqar(64, 4), _mqar(64, 8), _mqar(64, 16), _mqar(64, 8, 32), _mqar(64, 8, 64),
    _mad("recall", 128), _mad("noisy_recall", 128), _mad("fuzzy_recall", 128), _mad("selective_copy", 256),
    _mad("memorization", 32), _mad("compression", 32),
)
LR_SETTING: dict[str, str] = {"mqar": "mqar-64x8", "mad": "recall"}


def setting(name: str) -> Setting:
    """The setting called ``name``."""
    for s in SETTINGS:
        if s.name == name:
            return s
    raise KeyError(f"no setting {name!r}; known: {', '.join(s.name for s in SETTINGS)}")


def families() -> list[str]:
    """The benchmark families, in the order of :data:`SETTINGS`."""
    return list(dict.fromkeys(s.family for s in SETTINGS))


def lr_command(family: str, runs: Path, threads: int) -> list[str]:
    """The learning-rate grid's ``synthformer study`` command of ``family`` (without the interpreter)."""
    s = setting(LR_SETTING[family])
    return ["study", s.config, *s.overrides, "--kinds", ",".join(KINDS), "--grid",
            "train.lr=" + ",".join(f"{lr:g}" for lr in LRS), "--seeds", "1", "--out", str(runs / f"lr-{family}"),
            "--threads", str(threads)]


def seeds_command(s: Setting, kind: str, lr: float, seeds: int, runs: Path, threads: int) -> list[str]:
    """The ``synthformer study`` command of one (setting, kind) at its chosen rate, ``seeds`` seeds. Where the
    setting is its family's grid setting, seed 0 is the grid's run at that rate, so this study trains seeds 1 on."""
    reuse = LR_SETTING[s.family] == s.name
    first = ["train.seed=1"] if reuse else []
    return ["study", s.config, *s.overrides, f"train.lr={lr:g}", *first, "--kinds", kind, "--seeds",
            str(seeds - 1 if reuse else seeds), "--out", str(runs / s.name / kind.replace("+", "_plus_")),
            "--threads", str(threads)]


def _env() -> dict[str, str]:
    """This checkout's ``src`` first on the path, so the study runs the code of this commit."""
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def _run_study(command: list[str], lanes: int) -> bool:
    """Run one study command in ``lanes`` processes that share its runs; True when every process succeeded."""
    argv = ["nice", "-n", "19", sys.executable, "-m", "synthformer.cli.main", *command]
    print(f"# {shlex.join(argv)}", flush=True)
    procs = [subprocess.Popen(argv, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL if i else None)
             for i in range(lanes)]
    codes = [p.wait() for p in procs]
    if any(codes):
        print(f"# failed: exit codes {codes}", file=sys.stderr)
    return not any(codes)


def chosen_rates() -> dict[tuple[str, str], float]:
    """(family, kind) -> the chosen learning rate, from the newest entries of the choice record."""
    return {(e["family"], e["kind"]): float(e["lr"]) for e in latest(LR_RECORD, "mixing_lr").values()}


def run(args: argparse.Namespace) -> int:
    """Train a stage: the learning-rate grids, or the seeds at the chosen rates."""
    threads = args.threads
    if args.stage == "lr":
        return 0 if all(_run_study(lr_command(f, args.runs, threads), args.lanes) for f in args.families) else 1
    rates = chosen_rates()
    for seeds in (1, SEEDS):
        for s in SETTINGS:
            if s.family not in args.families:
                continue
            for kind in KINDS:
                if (s.family, kind) not in rates:
                    print(f"# {s.name} {kind}: no learning rate chosen yet (run --stage lr, then choose)")
                    continue
                if seeds == 1 and LR_SETTING[s.family] == s.name:
                    continue  # its seed 0 is the grid's run
                if not _run_study(seeds_command(s, kind, rates[(s.family, kind)], seeds, args.runs, threads),
                                  args.lanes):
                    return 1
    return 0


def _records(out: Path) -> list[Any]:
    """The records of the finished runs of the study in ``out`` (none when it has not started)."""
    from synthformer.study import StudySpec, run_dir_of
    from synthformer.study.runs import read_record

    if not (out / "study.json").is_file():
        return []
    spec = StudySpec.from_json(json.loads((out / "study.json").read_text(encoding="utf-8")))
    return [r for v in spec.variants for s in spec.seeds if (r := read_record(run_dir_of(out, v, s)))]


def _grid_point(variant: str) -> tuple[str, float]:
    """(kind, learning rate) of a grid study's variant name (``"R+V train.lr=0.001"``)."""
    kind, _, rest = variant.partition(" ")
    return kind, float(rest.split("train.lr=")[-1])


def choose(args: argparse.Namespace) -> int:
    """Pick each kind's rate per family from its grid (validation only) and append the choices."""
    for family in args.families:
        found = _records(args.runs / f"lr-{family}")
        for kind in KINDS:
            grid = {r.variant: r for r in found if _grid_point(r.variant)[0] == kind}
            if len(grid) < len(LRS):
                print(f"# {family} {kind}: {len(grid)} of {len(LRS)} rates finished; not chosen yet")
                continue
            rows = sorted(grid.values(), key=lambda r: (-r.valid_metric, r.valid_loss))
            best = rows[0]
            lr = _grid_point(best.variant)[1]
            command = "python -m synthformer.cli.main " + shlex.join(lr_command(family, Path("runs/mixing"), 1))
            append(LR_RECORD, {"table": "mixing_lr", "row": f"{family}-{kind}", "family": family, "kind": kind,
                               "lr": lr, "grid": {r.variant: [r.valid_metric, r.valid_loss] for r in rows},
                               **metadata(command, 1, bool(args.shared_cpu))})
            print(f"# {family} {kind}: lr {lr:g} (validation accuracy {best.valid_metric:.3f})")
    return 0


def baselines(s: Setting) -> dict[str, float]:
    """The setting's trivial baselines on its test split: the best context-free guess, and (MQAR) a value of the
    context at random, ``1 / num_pairs``."""
    from synthformer.tasks import load_raw_data
    from synthformer.tasks.run.config import load_run_config
    from synthformer.tasks.suites.mixing import get_benchmark

    run = load_run_config(ROOT / s.config, list(s.overrides))
    if run.task.type == "compression":  # not a benchmark of the table: its task type's baseline (validation)
        from synthformer.tasks.run.data import prepare_data

        return {"context_free": run.task.task_type.baseline(run, prepare_data(run))[1]}
    raw = load_raw_data(run.task)
    benchmark = get_benchmark(raw.info["benchmark"])
    out = {"context_free": benchmark.context_free(raw.splits["train"], raw.splits["test"], raw.info["options"])}
    if benchmark.name == "mqar":
        out["context_guess"] = 1.0 / int(raw.info["options"]["num_pairs"])
    return out


def record(args: argparse.Namespace) -> int:
    """Append one entry per (setting, kind) with its finished seeds."""
    rates = chosen_rates()
    trivial_of: dict[str, dict[str, float]] = {}
    for s in SETTINGS:
        if s.family not in args.families:
            continue
        for kind in KINDS:
            if (s.family, kind) not in rates:
                continue
            lr = rates[(s.family, kind)]
            found = _records(args.runs / s.name / kind.replace("+", "_plus_"))
            if LR_SETTING[s.family] == s.name:  # seed 0: the grid's run at the chosen rate
                found += [r for r in _records(args.runs / f"lr-{s.family}") if _grid_point(r.variant) == (kind, lr)]
            found.sort(key=lambda r: r.seed)
            if not found:
                continue
            trivial = trivial_of.setdefault(s.name, baselines(s))
            command = "python -m synthformer.cli.main " + shlex.join(
                seeds_command(s, kind, lr, SEEDS, Path("runs/mixing"), 1))
            append(RECORD, {"table": TABLE, "row": f"{s.name}-{kind}", "setting": s.name, "family": s.family,
                            "kind": kind, "lr": lr, "metric": found[0].metric, "seeds": [r.seed for r in found],
                            "valid": [r.valid_metric for r in found], "test": [r.test_metric for r in found],
                            "valid_loss": [r.valid_loss for r in found], "parameters": found[0].parameters,
                            "steps": found[0].steps, "steps_per_second": [r.steps_per_second for r in found],
                            "baselines": trivial,
                            "driver": "python benchmarks/mixing_study.py run --stage seeds --lanes 2",
                            **metadata(command, 1, bool(args.shared_cpu)), "load_1min": [load()]})
            print(f"# {s.name} {kind}: {len(found)} seed(s) recorded")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("run", "choose", "record"))
    parser.add_argument("--stage", choices=("lr", "seeds"), default="seeds")
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "mixing", help="where the studies train")
    parser.add_argument("--families", nargs="+", choices=families(), default=families())
    parser.add_argument("--lanes", type=int, default=2, help="processes per study (one thread each when > 1)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process (default 1)")
    parser.add_argument("--shared-cpu", action="store_true", help="record that other work shared the CPU")
    args = parser.parse_args(argv)
    if args.lanes < 1:
        parser.error(f"--lanes must be >= 1, got {args.lanes}")
    return {"run": run, "choose": choose, "record": record}[args.action](args)


if __name__ == "__main__":
    sys.exit(main())
