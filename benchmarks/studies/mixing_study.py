"""The token-mixing study (docs/results/mixing.md): MQAR and the MAD tasks for every kind and baseline, each kind at
its own learning rate.

Every run is a ``synthformer study`` run under RUNS (default ``runs/mixing``, resumable: the same command continues,
finished runs are read back, a half-finished one resumes from its checkpoint), and every finished run is copied into
the committed record ``benchmarks/results/mixing_runs.jsonl`` as soon as its study ends (``harvest`` does it by
hand). That record, not RUNS, is what the later stages read, so a study spread over several machines continues
where it stopped: a study whose runs are all in it is not started again.

1. ``run --stage lr``: per grid (MQAR at width 128, each other MQAR width, MAD: :data:`LR_SETTING`) and kind,
   each learning rate of :data:`LRS` on seed 0 of the grid's setting (``RUNS/lr-<grid>/<kind>``). ``choose`` then
   picks, per grid and kind, the rate with the best validation accuracy (ties: the lower validation loss) and
   writes the choice with the grid's numbers to ``benchmarks/results/mixing_lr.jsonl``. The test split is never
   read for the choice.
2. ``run --stage seeds``: per setting and kind, :data:`SEEDS` seeds at the chosen rate (``RUNS/<setting>/<kind>``),
   seed 0 of every setting first, then the other seeds, so a study stopped early already has a row per kind.

``record`` appends one entry per (setting, kind) with its harvested seeds (validation and test accuracy per seed,
steps/s, parameters) to ``benchmarks/results/mixing.jsonl``; ``benchmarks/docs_tables.py`` builds the page's
tables from it. ``--lanes`` studies train at once, one process of ``--threads`` threads each.

    python benchmarks/studies/mixing_study.py run --stage lr --families mqar    # 11 kinds x 3 rates, one study per kind
    python benchmarks/studies/mixing_study.py choose
    python benchmarks/studies/mixing_study.py run --stage seeds
    python benchmarks/studies/mixing_study.py record --shared-cpu

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
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, append, commit, latest, load, machines, metadata, read_entries  # noqa: E402

from studies.mixing_settings import (  # noqa: E402
    DROPPED,
    KINDS,
    LR_SETTING,
    LRS,
    RATES_FROM,
    SEEDS,
    SETTINGS,
    Setting,
    families,
    setting,
)

RECORD = RESULTS / "mixing.jsonl"
LR_RECORD = RESULTS / "mixing_lr.jsonl"
RUNS_RECORD = RESULTS / "mixing_runs.jsonl"
TABLE = "mixing"


def kind_dir(kind: str) -> str:
    """A kind's folder name (``R+V`` -> ``R_plus_V``)."""
    return kind.replace("+", "_plus_")


def lr_command(grid: str, kind: str, runs: Path, threads: int) -> list[str]:
    """The ``synthformer study`` command of ``kind``'s learning-rate grid ``grid`` (without the interpreter)."""
    s = setting(LR_SETTING[grid])
    return ["study", s.config, *s.overrides, "--kinds", kind, "--grid",
            "train.lr=" + ",".join(f"{lr:g}" for lr in LRS), "--seeds", "1",
            "--out", str(runs / f"lr-{grid}" / kind_dir(kind)), "--threads", str(threads)]


def _base_seed(s: Setting) -> int:
    """The first seed of the seeds stage: 1 where the setting is its grid's setting (seed 0 is the grid's run at
    the chosen rate), else 0."""
    return 1 if LR_SETTING.get(s.grid) == s.name else 0


def first_seed(s: Setting, kind: str, lr: float, done: dict[str, dict[str, Any]]) -> int:
    """The first seed of (setting, kind) that ``done`` (the harvested runs) lacks, counting up from
    :func:`_base_seed`: a machine without the run folders goes on from the record."""
    first = _base_seed(s)
    while run_key(s.name, kind, lr, first) in done:
        first += 1
    return first


def seeds_at_rate(s: Setting, kind: str, lr: float, done: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The harvested runs (``done``) of (setting, kind) at rate ``lr``, in seed order, of seeds 0 to SEEDS - 1:
    what ``record`` tables and ``mixing_status.py`` counts."""
    return [e for seed in range(SEEDS) if (e := done.get(run_key(s.name, kind, lr, seed)))]


def seeds_command(s: Setting, kind: str, lr: float, seeds: int, runs: Path, threads: int,
                  first: int | None = None, folder: str | None = None) -> list[str]:
    """The ``synthformer study`` command of one (setting, kind) at its chosen rate, seeds ``first`` (default
    :func:`_base_seed`) to ``seeds - 1``. A study that starts later than its base seed trains into its own folder
    (``KIND-seedN``): a folder's study keeps the seeds it started with. A folder that holds another study of the
    kind (trained before its grid chose this rate, or from another first seed) is kept as it is, and this one
    trains beside it (``KIND-lrR``, ``KIND-lrR-seedN``). ``folder`` names the study's folder instead (the one a
    harvest read, or the plain one of a fresh machine), without looking at ``runs``."""
    base = _base_seed(s)
    first = base if first is None else first
    overrides = [*s.overrides, f"train.lr={lr:g}", *([f"train.seed={first}"] if first else [])]
    if folder is None:
        suffix = "" if first == base else f"-seed{first}"
        folder = kind_dir(kind) + suffix
        if _holds_another(runs / s.name / folder, overrides, list(range(first, seeds))):
            folder = f"{kind_dir(kind)}-lr{lr:g}{suffix}"
    return ["study", s.config, *overrides, "--kinds", kind, "--seeds", str(seeds - first), "--out",
            str(runs / s.name / folder), "--threads", str(threads)]


def _study_spec(out: Path) -> dict[str, Any]:
    """The ``study.json`` of the study in ``out`` ({} without one)."""
    path = out / "study.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _holds_another(out: Path, overrides: list[str], seeds: list[int]) -> bool:
    """Whether ``out`` holds a study other than the one of ``overrides`` and ``seeds`` (which would refuse this
    command: a folder's study is never changed)."""
    spec = _study_spec(out)
    return bool(spec) and (spec.get("overrides") != overrides or spec.get("seeds") != seeds)


def _spec_rate(spec: dict[str, Any]) -> float | None:
    """The learning rate of a study's ``study.json`` (its ``train.lr`` override); None without one."""
    return next((float(o.split("=", 1)[1]) for o in spec.get("overrides", []) if o.startswith("train.lr=")), None)


def _env() -> dict[str, str]:
    """This checkout's ``src`` first on the path, so the study runs the code of this commit."""
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


@dataclass(frozen=True)
class Job:
    """One study to train: its command, its folder and the keys (:func:`run_key`) of the runs it trains."""

    command: list[str]
    out: Path
    keys: tuple[str, ...]


def lr_job(grid: str, kind: str, runs: Path, threads: int) -> Job:
    """``kind``'s learning-rate grid ``grid`` as a :class:`Job`."""
    return Job(lr_command(grid, kind, runs, threads), runs / f"lr-{grid}" / kind_dir(kind),
               tuple(run_key(LR_SETTING[grid], kind, lr, 0) for lr in LRS))


def seeds_job(s: Setting, kind: str, lr: float, seeds: int, runs: Path, threads: int,
              done: dict[str, dict[str, Any]] | None = None) -> Job:
    """:func:`seeds_command` as a :class:`Job`, from the first seed ``done`` lacks (:func:`first_seed`)."""
    first = first_seed(s, kind, lr, done or {})
    command = seeds_command(s, kind, lr, seeds, runs, threads, first)
    return Job(command, Path(command[command.index("--out") + 1]),
               tuple(run_key(s.name, kind, lr, seed) for seed in range(first, seeds)))


def _study(job: Job) -> int:
    """Run one study in one process (its output in ``OUT.log``, beside the study: a study folder holds only what
    the study writes); its exit code."""
    job.out.parent.mkdir(parents=True, exist_ok=True)
    argv = ["nice", "-n", "19", sys.executable, "-m", "synthformer.cli.main", *job.command]
    print(f"# {shlex.join(argv)}", flush=True)
    append(_launches(job.out), {"commit": commit(), "command": shlex.join(job.command)})  # the code each sitting ran
    with open(job.out.with_name(job.out.name + ".log"), "a", encoding="utf-8") as log:
        return subprocess.run(argv, cwd=ROOT, env=_env(), stdout=log, stderr=subprocess.STDOUT).returncode


def _run_studies(jobs: list[Job], lanes: int, shared_cpu: bool) -> bool:
    """Run the jobs whose runs are not all harvested, ``lanes`` at a time, harvesting each one's runs as it ends;
    True when all succeeded."""
    done = harvested()
    todo = [j for j in jobs if any(k not in done for k in j.keys)]
    print(f"# {len(jobs) - len(todo)} of {len(jobs)} studies already harvested")
    failed = 0
    with ThreadPoolExecutor(max_workers=lanes) as pool:
        futures = {pool.submit(_study, j): j for j in todo}
        for future in as_completed(futures):  # the record is appended from this thread only
            if code := future.result():
                failed += 1
                print(f"# failed (exit code {code}): {shlex.join(futures[future].command)}", file=sys.stderr)
            _harvest_study(futures[future].out, shared_cpu, done)
    return not failed


def grid_of(entry: dict[str, Any]) -> str:
    """The grid a choice entry was made on (:data:`LR_SETTING`'s key): its ``grid_name``, or (entries made when
    every family had one grid, named as the family) its ``family``."""
    return str(entry.get("grid_name", entry["family"]))


def current_choices() -> dict[str, dict[str, Any]]:
    """The newest entry of the choice record per (grid, kind), where it was chosen at its grid's budget (choices of
    an earlier budget, made before ``steps`` was recorded with them, are not current)."""
    budgets = {g: setting(LR_SETTING[g]).steps for g in LR_SETTING}
    return {k: e for k, e in latest(LR_RECORD, "mixing_lr").items() if e.get("steps") == budgets.get(grid_of(e))}


def chosen_rates() -> dict[tuple[str, str], float]:
    """(grid, kind) -> the chosen learning rate, from :func:`current_choices`; a grid of :data:`RATES_FROM` gets
    its lender's."""
    own = {(grid_of(e), e["kind"]): float(e["lr"]) for e in current_choices().values()}
    lent = {(borrower, kind): lr for borrower, lender in RATES_FROM.items() for (fam, kind), lr in own.items()
            if fam == lender}
    return {**own, **lent}


def _launches(out: Path) -> Path:
    """``OUT.launches.jsonl``, beside a study folder: one line per sitting the driver started, with its commit,
    copied into each harvested run (the code the run trained with, besides the harvest's commit)."""
    return out.with_name(out.name + ".launches.jsonl")


def run_key(setting_name: str, kind: str, lr: float, seed: int) -> str:
    """The row of one run in :data:`RUNS_RECORD`; a grid's seed-0 run and the seeds stage's share it."""
    return f"{setting_name}-{kind}-lr{lr:g}-seed{seed}"


def harvested() -> dict[str, dict[str, Any]]:
    """row -> the newest entry of every harvested run of a known setting at that setting's budget
    (:attr:`Setting.steps`); rows of another budget are history, not current."""
    budgets = {s.name: s.steps for s in SETTINGS}
    return {k: e for k, e in latest(RUNS_RECORD, "mixing_runs").items()
            if budgets.get(e["setting"]) == e.get("steps")}


def current_entries() -> dict[str, dict[str, Any]]:
    """row -> the newest entry of :data:`RECORD` (one per setting and kind) whose budget is its setting's now; an
    entry of a setting's earlier budget (fuzzy recall's 1,000 steps) is history, and no table reads it as current.
    Entries of a dropped setting are kept: no table has a column for them."""
    budgets = {s.name: s.steps for s in SETTINGS}
    return {k: e for k, e in latest(RECORD, TABLE).items()
            if budgets.get(e.get("setting"), e.get("steps")) == e.get("steps")}


def _setting_of(out: Path) -> Setting:
    """The setting a study folder trains: ``RUNS/<setting>/<kind>``, or ``RUNS/lr-<grid>/<kind>`` (its grid's)."""
    name = out.parent.name
    return setting(LR_SETTING[name[3:]] if name.startswith("lr-") else name)


def _grid_wanted(grid: str, args: argparse.Namespace) -> bool:
    """Whether the command line asks for ``grid``: its setting is of one of ``--families`` and, with
    ``--settings``, among them (``--settings mqar-64x8-d64`` trains or chooses width 64's grid alone)."""
    on = setting(LR_SETTING[grid]) if grid in LR_SETTING else None
    if on is None:  # a borrowing grid: asked for by any setting that trains at it
        return any(s.grid == grid and _setting_wanted(s, args) for s in SETTINGS)
    return _setting_wanted(on, args)


def _setting_wanted(s: Setting, args: argparse.Namespace) -> bool:
    """Whether ``s`` is of one of ``--families`` and, with ``--settings``, among them."""
    settings = getattr(args, "settings", None)
    return s.family in args.families and (not settings or s.name in settings)


def run(args: argparse.Namespace) -> int:
    """Train a stage: the learning-rate grids, or the seeds at the chosen rates (studies already harvested skipped)."""
    if args.stage == "lr":
        if borrowed := [g for g in RATES_FROM if _grid_wanted(g, args)]:
            print(f"# {', '.join(borrowed)}: no grid of its own (it trains at {RATES_FROM[borrowed[0]]}'s choices)")
        jobs = [lr_job(g, k, args.runs, args.threads) for g in LR_SETTING if _grid_wanted(g, args) for k in KINDS]
        return 0 if _run_studies(jobs, args.lanes, args.shared_cpu) else 1
    rates = chosen_rates()
    ok = True
    for seeds in (1, SEEDS):  # seed 0 of every setting first; each pass's jobs from what is harvested by then
        jobs, done = [], harvested()
        for s in (s for s in SETTINGS if _setting_wanted(s, args)):
            for kind in (k for k in KINDS if not args.kinds or k in args.kinds):
                if (s.grid, kind) not in rates:
                    print(f"# {s.name} {kind}: no learning rate chosen yet (run --stage lr, then choose)")
                elif not (seeds == 1 and _base_seed(s)):  # else its seed 0 is the grid's run
                    jobs.append(seeds_job(s, kind, rates[(s.grid, kind)], seeds, args.runs, args.threads, done))
        ok = _run_studies(jobs, args.lanes, args.shared_cpu) and ok
    return 0 if ok else 1


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


def _harvest_study(out: Path, shared_cpu: bool, done: dict[str, dict[str, Any]]) -> int:
    """Append the finished runs of the study in ``out`` that ``done`` (the harvested runs, updated) lacks; how many
    were appended."""
    if not (out / "study.json").is_file():
        return 0
    if out.parent.name in DROPPED:
        print(f"# {out}: setting dropped ({DROPPED[out.parent.name]}); not harvested")
        return 0
    if out.parent.name.startswith("lr-") and out.parent.name[3:] not in LR_SETTING:  # its setting was dropped
        print(f"# {out}: grid dropped (not in LR_SETTING); not harvested")
        return 0
    s, spec = _setting_of(out), _study_spec(out)
    launched = sorted({e["commit"] for e in read_entries(_launches(out))})
    added = 0
    for r in _records(out):
        if " train.lr=" in r.variant:  # a grid's run
            kind, lr = _grid_point(r.variant)
            command = lr_command(s.grid, kind, Path("runs/mixing"), 1)
        else:  # the command of this folder's own study: its rate and first seed as its study.json holds them
            kind, lr = r.variant, _spec_rate(spec)
            command = seeds_command(s, kind, lr, SEEDS, Path("runs/mixing"), 1, spec["seeds"][0], out.name)
        if (key := run_key(s.name, kind, lr, r.seed)) in done:
            continue
        if r.steps != s.steps:  # a study folder of an earlier budget: its rows are in the record already
            print(f"# {key}: trained {r.steps} steps, the setting's budget is {s.steps}; not harvested")
            continue
        done[key] = entry = {"table": "mixing_runs", "row": key, "setting": s.name, "family": s.family,
                             "kind": kind, "lr": lr, "seed": r.seed, "metric": r.metric, "valid": r.valid_metric,
                             "valid_loss": r.valid_loss, "test": r.test_metric, "parameters": r.parameters,
                             "steps": r.steps, "steps_per_second": r.steps_per_second,
                             "wall_seconds": r.wall_seconds, "launched_at": launched,
                             **metadata("python -m synthformer.cli.main " + shlex.join(command), 1, shared_cpu)}
        append(RUNS_RECORD, entry)
        added += 1
    return added


def harvest(args: argparse.Namespace) -> int:
    """Copy every finished run under RUNS into :data:`RUNS_RECORD` (the ones it holds already are left)."""
    done = harvested()
    added = sum(_harvest_study(p.parent, bool(args.shared_cpu), done) for p in sorted(args.runs.rglob("study.json")))
    print(f"# {added} run(s) harvested into {RUNS_RECORD.relative_to(ROOT)}")
    return 0


def choose(args: argparse.Namespace) -> int:
    """Pick each kind's rate per grid from its harvested runs (validation only) and append the choices."""
    harvest(args)
    done = harvested()
    for grid in (g for g in LR_SETTING if _grid_wanted(g, args)):
        on = setting(LR_SETTING[grid])
        for kind in KINDS:
            runs = [e for lr in LRS if (e := done.get(run_key(on.name, kind, lr, 0)))]
            if len(runs) < len(LRS):
                print(f"# {grid} {kind}: {len(runs)} of {len(LRS)} rates finished; not chosen yet")
                continue
            best = sorted(runs, key=lambda e: (-e["valid"], e["valid_loss"]))[0]
            command = "python -m synthformer.cli.main " + shlex.join(lr_command(grid, kind, Path("runs/mixing"), 1))
            append(LR_RECORD, {"table": "mixing_lr", "row": f"{grid}-{kind}", "family": on.family, "grid_name": grid,
                               "kind": kind, "lr": best["lr"], "steps": best["steps"],
                               "grid": {f"{kind} train.lr={e['lr']:g}": [e["valid"], e["valid_loss"]] for e in runs},
                               **metadata(command, 1, bool(args.shared_cpu))})
            print(f"# {grid} {kind}: lr {best['lr']:g} (validation accuracy {best['valid']:.3f})")
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


def run_provenance(found: list[dict[str, Any]]) -> dict[str, str]:
    """Where and when a row's seeds trained, from their harvested entries: the machines (in order, each once) and
    the newest run's date. A row's numbers depend on the CPU that trained it, not on the host that writes the row,
    which is kept beside as ``recorded_on``."""
    return {"machine": machines(found), "date": max(str(e.get("date", "?")) for e in found)}


def record(args: argparse.Namespace) -> int:
    """Append one entry per (setting, kind) with its harvested seeds at the chosen rate."""
    harvest(args)
    rates, done = chosen_rates(), harvested()
    trivial_of: dict[str, dict[str, float]] = {}
    for s in (s for s in SETTINGS if s.family in args.families):
        for kind in KINDS:
            if (s.grid, kind) not in rates:
                continue
            lr = rates[(s.grid, kind)]
            found = seeds_at_rate(s, kind, lr, done)
            if not found:
                continue
            trivial = trivial_of.setdefault(s.name, baselines(s))
            command = "python -m synthformer.cli.main " + shlex.join(
                seeds_command(s, kind, lr, SEEDS, Path("runs/mixing"), 1, folder=kind_dir(kind)))
            meta = metadata(command, 1, bool(args.shared_cpu) or any(e.get("shared_cpu") for e in found))
            append(RECORD, {"table": TABLE, "row": f"{s.name}-{kind}", "setting": s.name, "family": s.family,
                            "kind": kind, "lr": lr, "metric": found[0]["metric"], "seeds": [e["seed"] for e in found],
                            "valid": [e["valid"] for e in found], "test": [e["test"] for e in found],
                            "valid_loss": [e["valid_loss"] for e in found], "parameters": found[0]["parameters"],
                            "steps": found[0]["steps"], "steps_per_second": [e["steps_per_second"] for e in found],
                            "baselines": trivial, "trained": sorted({e["date"] for e in found}),
                            "driver": "python benchmarks/studies/mixing_study.py run --stage seeds",
                            **meta, **run_provenance(found), "recorded": meta["date"], "recorded_on": meta["machine"],
                            "load_1min": [load()]})
            print(f"# {s.name} {kind}: {len(found)} seed(s) recorded")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("run", "harvest", "choose", "record"))
    parser.add_argument("--stage", choices=("lr", "seeds"), default="seeds")
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "mixing", help="where the studies train")
    parser.add_argument("--families", nargs="+", choices=families(), default=families())
    parser.add_argument("--settings", nargs="+", choices=[s.name for s in SETTINGS], default=None,
                        help="train only these settings (default: every setting of the families)")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=None,
                        help="seeds stage: train only these kinds (default: every kind)")
    parser.add_argument("--lanes", type=int, default=2, help="studies trained at once (default 2)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process (default 1)")
    parser.add_argument("--shared-cpu", action="store_true", help="record that other work shared the CPU")
    args = parser.parse_args(argv)
    if args.lanes < 1:
        parser.error(f"--lanes must be >= 1, got {args.lanes}")
    return {"run": run, "harvest": harvest, "choose": choose, "record": record}[args.action](args)


if __name__ == "__main__":
    sys.exit(main())
