"""The probe study: the cross-segment matching probes (``matching:pair``, its control ``matching:control``;
``mqar:recall`` only when asked for, see :data:`DEFAULT_TASKS`) over the paper's kinds, Linformer and the
convolutions, 3 seeds, at two lengths.

One ``synthformer study`` directory per task and length under RUNS (default ``runs/probe``:
``study-probe-<task>-<length>``), trained in the order of :data:`PLAN`: seed 0 of every task at length 16, then
at 32, then the other seeds, so that a study stopped early already has a complete row per kind. Resumable: the
same ``run`` command continues (finished runs are read back, a half-finished one resumes from its checkpoint).
``--lanes 2`` starts two processes of each study command, one thread each, which share its runs (the way
``synthformer study`` shares a study between terminals).

    python benchmarks/studies/probe_study.py run --lanes 2          # ~40-45 min of the 2-core machine alone
    python benchmarks/studies/probe_study.py record --shared-cpu    # tables, curves and the JSONL record
    python benchmarks/studies/probe_study.py analyze                # V and D heatmaps on a matching example

``record`` summarizes whatever runs are finished (a partial study gives the rows it has) with the study module's
own table (mean ± std, Welch's t-test against V at the same length) and curves, copies them to
``docs/figures/study-probe-<task>-<length>/`` and appends one entry per study to ``benchmarks/results/probe.jsonl`` (its
rows, the study command, date, machine, commit, runs done); ``benchmarks/docs_tables.py`` builds the tables of
``docs/results/probes.md`` from that record.

Time: 132 runs (2 tasks x 11 kinds x 3 seeds x 2 lengths) of 1,000 steps. Measured per run on the shared machine
(process time, start-up and evaluation included; not a benchmark): 500 steps took 20-32 s at length 32 (about 270 s
for the 11 kinds) and 17-20 s at 16; 1,000 steps took 45 s (V) at 32 and 26-30 s (V, R, LightConv) at 16. Scaled,
about 475 s for the 11 kinds at 32 and 325 s at 16, so about 40-45 minutes on two lanes alone;
``--tasks pair control mqar`` (198 runs) about an hour.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, append, load, metadata  # noqa: E402 - benchmarks/records.py

#: task -> (config, overrides): the three studies.
STUDIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "pair": ("configs/probe_matching.yaml", ()),
    "control": ("configs/probe_matching.yaml", ("task.generator=matching:control",)),
    "mqar": ("configs/probe_mqar.yaml", ()),
}
#: The studies ``run``, ``record`` and ``analyze`` take without ``--tasks``. MQAR is left out: no setting was found
#: where V learns it at this budget (configs/probe_mqar.yaml), so its study could not test the explanation.
DEFAULT_TASKS: tuple[str, ...] = ("pair", "control")
KINDS = "V,R,Fix,FR,D,FD,R+V,D+V,Linformer,LightConv,DynamicConv"
LENGTHS = (16, 32)
SEEDS = 3
#: (length, seeds) in training order: each step grows that length's studies to that many seeds.
PLAN: tuple[tuple[int, int], ...] = ((LENGTHS[0], 1), (LENGTHS[1], 1), (LENGTHS[0], SEEDS), (LENGTHS[1], SEEDS))
#: Equal budgets for every variant (the configs' own; spelled out so the record's command shows them): the
#: budget at which V solves the pair task at both lengths in the probe grid (validation 1.000 at 16, 0.954 at
#: 32, seed 0).
BUDGET: tuple[str, ...] = ("train.steps=1000", "train.eval_every=100", "train.save_every=500")
RECORD = RESULTS / "probe.jsonl"
TABLE = "probe"
FIGURES = ROOT / "docs" / "figures"
#: The heatmap runs: (task, kind) at the first length, seed 0.
HEATMAPS: tuple[tuple[str, str], ...] = (("pair", "V"), ("pair", "D"))


def _threads(args: argparse.Namespace) -> int:
    """Torch threads per study process: ``--threads``, else one per lane with several lanes, two with one."""
    return args.threads if args.threads is not None else (1 if args.lanes > 1 else 2)


def study_dir(runs: Path, task: str, length: int) -> Path:
    """``RUNS/study-probe-<task>-<length>``."""
    return runs / f"study-probe-{task}-{length}"


def study_command(task: str, length: int, runs: Path, seeds: int, threads: int) -> list[str]:
    """The ``synthformer study`` command of ``task`` at ``length`` (without the interpreter), ``seeds`` seeds."""
    config, overrides = STUDIES[task]
    return ["study", config, *overrides, f"task.max_len={length}", *BUDGET, "--kinds", KINDS, "--seeds", str(seeds),
            "--out", str(study_dir(runs, task, length)), "--threads", str(threads)]


def _env() -> dict[str, str]:
    """This checkout's ``src`` first on the path, so the study runs the code of this commit."""
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def run(args: argparse.Namespace) -> int:
    """Train the studies in the order of :data:`PLAN`, ``--lanes`` processes each."""
    for length, seeds in PLAN:
        for task in args.tasks:
            argv = ["nice", "-n", "19", sys.executable, "-m", "synthformer.cli.main",
                    *study_command(task, length, args.runs, seeds, _threads(args))]
            print(f"# {shlex.join(argv)}", flush=True)
            procs = [subprocess.Popen(argv, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL if i else None)
                     for i in range(args.lanes)]
            codes = [p.wait() for p in procs]
            if any(codes):
                print(f"study {task} at {length} with {seeds} seed(s) failed: exit codes {codes}", file=sys.stderr)
                return 1
    return 0


def finished(out: Path) -> tuple[Any, list[Any], list[Any]]:
    """The study of ``out`` (its manifest), its variants and the records of its finished runs."""
    from synthformer.study import StudySpec, run_dir_of
    from synthformer.study.runs import read_record

    spec = StudySpec.from_json(json.loads((out / "study.json").read_text(encoding="utf-8")))
    records = [r for v in spec.variants for s in spec.seeds if (r := read_record(run_dir_of(out, v, s)))]
    return spec, spec.variants, records


def record(args: argparse.Namespace) -> int:
    """Summarize the finished runs of each study, copy its outputs to the docs, append its record entry."""
    from synthformer.study import StudyResult, write_outputs

    for task in args.tasks:
        for length in LENGTHS:
            out = study_dir(args.runs, task, length)
            if not (out / "study.json").is_file():
                print(f"# {out.name}: no study yet")
                continue
            spec, variants, records = finished(out)
            if not records:
                print(f"# {out.name}: no finished run yet")
                continue
            outputs = write_outputs(StudyResult(out, spec, variants, records, records[0].metric, 0.0, True))
            target = FIGURES / out.name
            target.mkdir(parents=True, exist_ok=True)
            for name in ("results.json", "results.md", "report.md", "curves_steps.png", "curves_wall.png"):
                shutil.copy2(out / name, target / name)
            data = json.loads((out / "results.json").read_text(encoding="utf-8"))
            total = len(variants) * SEEDS
            command = "python -m synthformer.cli.main " + shlex.join(
                study_command(task, length, Path("runs/probe"), SEEDS, _threads(args)))
            entry = {"table": TABLE, "row": f"{task}-{length}", "task": task, "length": length,
                     "metric": data["metric"], "rows": data["rows"], "runs_done": len(records), "runs_total": total,
                     "driver": f"python benchmarks/studies/probe_study.py run --lanes {args.lanes} "
                               f"--threads {_threads(args)}",
                     **metadata(command, _threads(args), bool(args.shared_cpu)), "load_1min": [load()]}
            append(RECORD, entry)
            print(f"# {out.name}: {len(records)} of {total} runs recorded in {RECORD.relative_to(ROOT)}; "
                  f"{outputs.markdown}")
    return 0


def matching_example(seed: int = 7) -> str:
    """A ``match`` example of the pair task at the first length (A and B the same symbols, B shuffled), drawn with
    the pair config's vocabulary and number of replaced symbols."""
    import yaml

    from synthformer.tasks.suites.probes.matching import generate_pairs, pair_label

    config = yaml.safe_load((ROOT / STUDIES["pair"][0]).read_text(encoding="utf-8"))
    options = config["task"]["generator_options"]
    for ex in generate_pairs(64, vocab=options["vocab"], length=(LENGTHS[0] - 1) // 2,
                             num_replaced=options["num_replaced"], seed=seed):
        if pair_label(ex) == "match":
            return ex.text
    raise RuntimeError("no match example among 64 draws")  # probability 2**-64


def analyze(args: argparse.Namespace) -> int:
    """``synthformer analyze`` of the V and D runs (seed 0, first length) on one matching example."""
    example = matching_example()
    for task, kind in HEATMAPS:
        run_dir = study_dir(args.runs, task, LENGTHS[0]) / kind / "seed0"
        argv = [sys.executable, "-m", "synthformer.cli.main", "analyze", str(run_dir), "--example", example,
                "--positions", "64", "--out", str(FIGURES / f"probe-{task}-{kind}")]
        print(f"# {shlex.join(argv)}", flush=True)
        if subprocess.run(argv, cwd=ROOT, env=_env()).returncode:
            return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("run", "record", "analyze"))
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "probe", help="where the studies train")
    parser.add_argument("--tasks", nargs="+", choices=list(STUDIES), default=list(DEFAULT_TASKS))
    parser.add_argument("--lanes", type=int, default=2, help="processes per study (one thread each when > 1)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads per process (default: 1 with several lanes, else 2); 1 leaves a core to "
                             "other work")
    parser.add_argument("--shared-cpu", action="store_true", help="record that other work shared the CPU")
    args = parser.parse_args(argv)
    if args.lanes < 1:
        parser.error(f"--lanes must be >= 1, got {args.lanes}")
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads must be >= 1, got {args.threads}")
    return {"run": run, "record": record, "analyze": analyze}[args.action](args)


if __name__ == "__main__":
    sys.exit(main())
