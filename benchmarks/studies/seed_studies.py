"""More seeds where more seeds can change a verdict, a same-seed noise floor, and the paper's Table 2 translation
column: resumable ``synthformer study`` runs, each finished run recorded in ``benchmarks/results/seed_studies.jsonl``.

The tables of docs/results/*.md whose gaps between kinds are near what their seeds resolve get the seeds the noise
rule (:mod:`synthformer.stats`) needs to read them: 5 per kind. Each study trains only the seeds its table's record
lacks (Tiny Shakespeare's study has seeds 0-2, so this one trains 3 and 4 with the same command), and none
already in the record (a machine without the run folders goes on from the record; of a last seed only its
unrecorded kinds), so the new runs
pair by seed with the earlier ones, and the page reads them together only where the code still reproduces the
earlier runs: the ``repro`` studies re-train an earlier seed 0 at this commit, and the page says how far it lands
from the earlier number (:func:`reproduction`).

The noise floor: ``noise`` studies re-train a run with the same seed and commit under another set of CPU kernels
(``ATEN_CPU_CAPABILITY=default``, torch's kernels without AVX: the closest this one machine comes to a second CPU),
and a run recorded on another host at the same commit pairs with it too. What two such runs differ by is noise no
seed explains: :func:`noise_pairs`.

Every study trains into ``RUNS/<name>`` (default ``runs/seeds``); the same command continues a stopped study, and
``--lanes 2`` starts each study twice, which shares its runs (``synthformer study``'s own sharing). A finished run is
appended to the record the moment its study ends (``harvest`` does it by hand, e.g. after a kill).

``run --again`` trains the named studies' seeds again, recorded or not, into ``RUNS/<name>-again-<src tree>``: its
rows supersede the study's earlier rows (the record keeps those as history). A noise pair needs both of its runs
from one library source; when one of them was resumed across two, ``run --again --studies t8-repro t8-noise``
trains the pair again in one sitting.

    python benchmarks/studies/seed_studies.py list                      # the studies, their seeds, what is recorded
    python benchmarks/studies/seed_studies.py run --studies shk-repro shk-noise compare shk --shared-cpu
    python benchmarks/studies/seed_studies.py harvest --shared-cpu
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, append, commit, latest, metadata, read_entries  # noqa: E402 - benchmarks/records.py

RECORD = RESULTS / "seed_studies.jsonl"
TABLE = "seed_studies"
FIGURES = ROOT / "docs" / "figures"

_SHK = ("train.steps=900", "train.lr=2e-3", "train.warmup_steps=90", "train.eval_every=150", "train.eval_steps=20",
        "train.save_every=300")
# Multi30k's studies (docs/results/multi30k.md): 400 steps of greedy decoding, as the paper's Table 9 used
_MT = ("train.steps=400", "train.eval_every=100", "train.save_every=200", "train.warmup_steps=40", "eval.beam=1",
       "eval.train_decode_examples=200")
_EN_DE = ("task.source_lang=en", "task.target_lang=de")
_K32 = "model.kind_options={k: 32}"  # the low-rank kinds' k in the paper's encoder tasks


@dataclass(frozen=True)
class SeedStudy:
    """One ``synthformer study``: ``kinds`` (or a ``grid``) at ``seeds``; the seeds ``earlier`` (a committed study
    ``results.json``) already holds are not trained again. ``capability``: the CPU kernels the runs use (torch's
    ``ATEN_CPU_CAPABILITY``; None: the machine's own)."""

    name: str
    config: str
    overrides: tuple[str, ...]
    kinds: tuple[str, ...]
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    grid: str | None = None
    earlier: str | None = None
    capability: str | None = None
    about: str = ""

    def earlier_seeds(self) -> set[int]:
        """The seeds the earlier record holds for every variant of this study (none without one)."""
        if self.earlier is None:
            return set()
        runs = json.loads((ROOT / self.earlier).read_text(encoding="utf-8"))["runs"]
        by_variant: dict[str, set[int]] = {}
        for r in runs:
            by_variant.setdefault(r["variant"], set()).add(int(r["seed"]))
        return set.intersection(*by_variant.values()) if by_variant else set()

    def recorded_seeds(self) -> set[int]:
        """The seeds :data:`RECORD` holds for every variant of this study (the earlier record's variants, else its
        kinds): a run recorded on another machine or in an earlier sitting whose run folder is gone."""
        if self.earlier is not None:
            runs = json.loads((ROOT / self.earlier).read_text(encoding="utf-8"))["runs"]
            variants = {r["variant"] for r in runs}
        elif self.grid is None:
            variants = set(self.kinds)
        else:
            return set()  # a grid's variant names come from the study itself: nothing to check them against
        by_seed: dict[int, set[str]] = {}
        for e in latest(RECORD, TABLE).values():
            if e["study"] == self.name:
                by_seed.setdefault(int(e["seed"]), set()).add(e["variant"])
        return {seed for seed, found in by_seed.items() if variants <= found}

    def planned_seeds(self) -> list[int]:
        """``seeds`` less the earlier record's, contiguous (a study's seeds are ``train.seed``, +1, ...)."""
        todo = sorted(set(self.seeds) - self.earlier_seeds())
        if todo and todo != list(range(todo[0], todo[0] + len(todo))):
            raise ValueError(f"{self.name}: seeds to train {todo} are not contiguous")
        return todo

    def new_seeds(self) -> list[int]:
        """The seeds this study trains: :meth:`planned_seeds` less the first ones already in :data:`RECORD` (a
        fresh machine without the run folders does not train a recorded seed again)."""
        todo, recorded = self.planned_seeds(), self.recorded_seeds()
        while todo and todo[0] in recorded:
            todo = todo[1:]
        return todo

    def kinds_to_train(self, runs: Path) -> tuple[str, ...]:
        """The kinds this study trains: all of ``kinds``, except where one seed is left and the record holds some of
        its kinds (runs of an earlier sitting whose folders are gone): then only the others. A folder already started
        keeps the kinds it started with (its ``study.json``), so a resumed study never changes its variants."""
        todo = self.new_seeds()
        if self.grid is not None or len(todo) != 1:
            return self.kinds
        started = self.out(runs) / "study.json"
        if started.is_file():
            names = set(json.loads(started.read_text(encoding="utf-8")).get("kinds", []))
            return tuple(k for k in self.kinds if k in names) or self.kinds
        done = latest(RECORD, TABLE)
        return tuple(k for k in self.kinds if row_key(self.name, k, todo[0]) not in done) or self.kinds

    def out(self, runs: Path) -> Path:
        """The study's folder: ``RUNS/<name>``, or ``RUNS/<name>-seed<N>`` when recorded seeds moved its first seed
        to N (a folder's study always keeps the seeds it started with)."""
        planned, todo = self.planned_seeds(), self.new_seeds()
        return runs / (self.name if not todo or todo[0] == planned[0] else f"{self.name}-seed{todo[0]}")

    def again_out(self, runs: Path, tree: str) -> Path:
        """The folder of ``run --again`` at the library source ``tree`` (:func:`src_tree`)."""
        return runs / f"{self.name}-again-{tree}"

    def command(self, runs: Path, threads: int = 1, again: str | None = None) -> list[str]:
        """The ``synthformer study`` arguments (without the interpreter); with ``again`` (a source tree), every
        planned seed into :meth:`again_out`."""
        todo = self.planned_seeds() if again else self.new_seeds()
        first = [f"train.seed={todo[0]}"] if todo and todo[0] else []
        kinds = self.kinds if again else self.kinds_to_train(runs)
        which = [*(["--kinds", ",".join(kinds)] if kinds else []),
                 *(["--grid", self.grid] if self.grid else [])]
        return ["study", self.config, *self.overrides, *first, *which, "--seeds", str(len(todo)),
                "--out", str(self.again_out(runs, again) if again else self.out(runs)), "--threads", str(threads)]

    def env(self) -> dict[str, str]:
        """This checkout's ``src`` first on the path; the CPU kernels where the study names them."""
        path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)
        extra = {"ATEN_CPU_CAPABILITY": self.capability} if self.capability else {}
        return {**os.environ, "PYTHONPATH": path, **extra}


STUDIES: tuple[SeedStudy, ...] = (
    SeedStudy("shk-repro", "configs/lm_tiny_shakespeare.yaml", _SHK, ("V",), seeds=(0,),
              about="V's seed 0 of Tiny Shakespeare's study again, at this commit: does the code still reproduce "
                    "the earlier seeds?"),
    SeedStudy("shk-noise", "configs/lm_tiny_shakespeare.yaml", _SHK, ("V",), seeds=(0,), capability="default",
              about="shk-repro's run under torch's kernels without AVX (same seed, same commit)"),
    SeedStudy("compare", "configs/compare_pystdlib.yaml", (), ("V", "R", "D", "R+V"),
              about="`synthformer compare`'s four kinds on its default task and budget, 5 seeds (its record has one)"),
    SeedStudy("compare-repro", "configs/compare_pystdlib.yaml", (), ("V",), seeds=(0,),
              about="the compare study's V seed 0 again, at a later commit: do the house's changes keep it?"),
    SeedStudy("shk", "configs/lm_tiny_shakespeare.yaml", _SHK, ("V", "R", "Fix", "FR", "D", "FD", "R+V", "D+V"),
              earlier="docs/figures/study-shk/results.json",
              about="Tiny Shakespeare's eight kinds (the paper's Table 2, LM column): seeds 3 and 4"),
    SeedStudy("t2-mt", "configs/mt_multi30k_de_en.yaml", _MT + _EN_DE, ("V", "R", "D", "R+V", "D+V"),
              about="the paper's Table 2, translation column, on Multi30k en-de (BLEU from sacrebleu)"),
    SeedStudy("t8-repro", "configs/mt_multi30k_de_en.yaml", _MT, ("V",), seeds=(0,),
              about="V's seed 0 of the Table 8 study again, at this commit"),
    SeedStudy("t8-noise", "configs/mt_multi30k_de_en.yaml", _MT, ("V",), seeds=(0,), capability="default",
              about="t8-repro's run under torch's kernels without AVX"),
    SeedStudy("t8", "configs/mt_multi30k_de_en.yaml", _MT, ("V", "R", "D", "Conv", "ConvReluConv", "Bottleneck", "GLU"),
              earlier="docs/figures/study-t8/results.json", about="the paper's Table 8 variants: seeds 2 to 4"),
    SeedStudy("t9", "configs/mt_multi30k_de_en.yaml", _MT, ("R",), grid="model.n_heads=2,4,8,16,32",
              earlier="docs/figures/study-t9/results.json", about="R with 2 to 32 heads (Table 9): seeds 2 to 4"),
    # IMDb's Table 7 rows (docs/results/imdb.md): the low-rank kinds take k = 32 (an option V and R refuse), so the
    # table is two studies of one config and budget; a seed gives both the same data order, so their runs pair
    SeedStudy("imdb", "configs/cls_imdb.yaml", (), ("V", "R"),
              about="IMDb's V and R (Table 7's Transformer, and R beside it), 5 seeds (its record has one)"),
    SeedStudy("imdb-k32", "configs/cls_imdb.yaml", (_K32,), ("FR", "FR+V", "Linformer"),
              about="IMDb's low-rank kinds at k = 32 (Table 7), 5 seeds, paired with the imdb study by seed"),
    # t9 lets the head width fall from 64 to 4 as heads are added (d_model 128); here each head keeps 16 channels
    SeedStudy("t9-fixed", "configs/mt_multi30k_de_en.yaml", (*_MT, "model.head_dim=16"), ("R",), seeds=(0, 1, 2),
              grid="model.n_heads=2,4,8,16,32", about="R with 2 to 32 heads at a fixed head width of 16"),
)


def study(name: str) -> SeedStudy:
    """The study called ``name``."""
    for s in STUDIES:
        if s.name == name:
            return s
    raise KeyError(f"no study {name!r}; known: {', '.join(s.name for s in STUDIES)}")


def row_key(study_name: str, variant: str, seed: int) -> str:
    """The row of one run in :data:`RECORD`."""
    return f"{study_name}/{variant}/seed{seed}"


def _records(out: Path) -> list[Any]:
    """The finished runs' records of the study in ``out`` (none before it starts)."""
    from synthformer.study import StudySpec, run_dir_of
    from synthformer.study.runs import read_record

    if not (out / "study.json").is_file():
        return []
    spec = StudySpec.from_json(json.loads((out / "study.json").read_text(encoding="utf-8")))
    return [r for v in spec.variants for s in spec.seeds if (r := read_record(run_dir_of(out, v, s)))]


def _launches(out: Path) -> Path:
    """``OUT.launches.jsonl``: one line per sitting that started the study, with the commit and the source tree
    it ran."""
    return out.with_name(out.name + ".launches.jsonl")


def src_tree() -> str:
    """The git tree hash of ``src/`` (``-dirty`` with uncommitted changes there): two commits with the same hash
    ran the same library code, whatever else (records, docs, scripts) changed between them."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()

    try:
        return git("rev-parse", "--short", "HEAD:src") + ("-dirty" if git("status", "--porcelain", "--", "src")
                                                          else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def harvest_study(s: SeedStudy, runs: Path, shared_cpu: bool) -> int:
    """Append the finished runs of ``s`` the record lacks; how many were appended."""
    added = 0
    for out in [runs / s.name, *sorted(runs.glob(f"{s.name}-seed*"))]:
        added += _harvest_folder(s, out, shared_cpu)
    for out in sorted(runs.glob(f"{s.name}-again-*")):
        added += _harvest_folder(s, out, shared_cpu, again=True)
    return added


def _harvest_folder(s: SeedStudy, out: Path, shared_cpu: bool, again: bool = False) -> int:
    """:func:`harvest_study` of one of the study's folders; an ``again`` folder's runs supersede recorded rows of
    another source tree (a row of its own tree is this folder's, harvested already)."""
    done = latest(RECORD, TABLE)
    launches = read_entries(_launches(out))
    launched = sorted({e["commit"] for e in launches})
    trees = sorted({e.get("src", "unknown") for e in launches})
    prefix = f"ATEN_CPU_CAPABILITY={s.capability} " if s.capability else ""
    # the command the folder's study was started with (after this harvest, the study's own command moves on)
    command = launches[-1]["command"] if launches else shlex.join(s.command(Path("runs/seeds")))
    added = 0
    for r in _records(out):
        if (key := row_key(s.name, r.variant, r.seed)) in done and not (again and done[key].get("src_tree") != trees):
            continue
        entry = {"table": TABLE, "row": key, "study": s.name, "variant": r.variant, "seed": r.seed,
                 "metric": r.metric, "valid": r.valid_metric, "valid_loss": r.valid_loss, "test": r.test_metric,
                 "parameters": r.parameters, "steps": r.steps, "steps_per_second": r.steps_per_second,
                 "wall_seconds": r.wall_seconds, "cpu_capability": s.capability or "machine", "launched_at": launched,
                 "src_tree": trees,
                 **metadata(prefix + "python -m synthformer.cli.main " + command, 1, shared_cpu)}
        append(RECORD, entry)
        added += 1
    return added


def _train(s: SeedStudy, runs: Path, lane: int, again: str | None = None) -> int:
    """One process of study ``s`` (its output in ``OUT.log`` beside its folder); its exit code. ``again``: the
    source tree of a ``run --again``."""
    out = s.again_out(runs, again) if again else s.out(runs)
    out.parent.mkdir(parents=True, exist_ok=True)
    command = s.command(runs, again=again)
    argv = ["nice", "-n", "19", sys.executable, "-m", "synthformer.cli.main", *command]
    print(f"# lane {lane}: {shlex.join(argv)}", flush=True)
    if lane == 0:
        append(_launches(out), {"commit": commit(), "src": src_tree(), "command": shlex.join(command)})
    with open(out.with_name(out.name + ".log"), "a", encoding="utf-8") as log:
        return subprocess.run(argv, cwd=ROOT, env=s.env(), stdout=log, stderr=subprocess.STDOUT).returncode


def run(args: argparse.Namespace) -> int:
    """Train the named studies in order (each with ``--lanes`` processes sharing its runs), harvesting each."""
    failed = 0
    again = src_tree() if getattr(args, "again", False) else None
    if again and again.endswith("-dirty"):
        print("error: run --again trains at a committed library source; src/ has uncommitted changes",
              file=sys.stderr)
        return 2
    for s in (study(n) for n in args.studies):
        if not again and not s.new_seeds():
            print(f"# {s.name}: every seed is recorded (in {s.earlier or RECORD.name})")
            continue
        with ThreadPoolExecutor(max_workers=args.lanes) as pool:
            codes = list(pool.map(_train, [s] * args.lanes, [args.runs] * args.lanes, range(args.lanes),
                                  [again] * args.lanes))
        failed += any(codes)
        print(f"# {s.name}: {harvest_study(s, args.runs, args.shared_cpu)} runs recorded (exit codes {codes})")
    return 1 if failed else 0


def harvest(args: argparse.Namespace) -> int:
    for s in STUDIES:
        print(f"# {s.name}: {harvest_study(s, args.runs, args.shared_cpu)} runs recorded")
    return 0


def list_studies(args: argparse.Namespace) -> int:
    done = latest(RECORD, TABLE)
    for s in STUDIES:
        have = sum(1 for e in done.values() if e["study"] == s.name)
        print(f"{s.name:10s} seeds {s.new_seeds()} ({have} runs recorded): {s.about}")
    return 0


# --------------------------------------------------------------------------- what the page reads


def runs_of(name: str, split: str = "valid") -> list[tuple[str, int, float]]:
    """(variant, seed, metric) of a study: its earlier record's runs and the recorded new seeds, one per
    (variant, seed) (a recorded run wins over the earlier record's)."""
    s = study(name)
    key = "valid_metric" if split == "valid" else "test_metric"
    found: dict[tuple[str, int], float] = {}
    if s.earlier:
        for r in json.loads((ROOT / s.earlier).read_text(encoding="utf-8"))["runs"]:
            if r.get(key) is not None:
                found[(r["variant"], int(r["seed"]))] = float(r[key])
    for e in latest(RECORD, TABLE).values():
        if e["study"] == name and e.get(split) is not None:
            found[(e["variant"], int(e["seed"]))] = float(e[split])
    order = {v: i for i, v in enumerate(dict.fromkeys(v for v, _ in found))}  # the earlier record's order first
    return [(v, seed, x) for (v, seed), x in sorted(found.items(), key=lambda kv: (kv[0][1], order[kv[0][0]]))]


def reproduction(repro: str, split: str = "valid") -> dict[str, Any] | None:
    """A repro study's run against the same (variant, seed) of the study it re-trains (the study named ``repro``
    without ``-repro``): in that study's earlier record, else in its own recorded runs. Both values and their
    difference; None until the repro run is recorded."""
    if repro not in {s.name for s in STUDIES}:
        return None
    now = runs_of(repro, split)
    if not now:
        return None
    variant, seed, value = now[0]
    base = study(repro.removesuffix("-repro"))
    if base.earlier is not None:
        key = "valid_metric" if split == "valid" else "test_metric"
        runs = json.loads((ROOT / base.earlier).read_text(encoding="utf-8"))["runs"]
        before = next((r.get(key) for r in runs if r["variant"] == variant and int(r["seed"]) == seed), None)
    else:
        before = next((x for v, s, x in runs_of(base.name, split) if v == variant and s == seed), None)
    return {"variant": variant, "seed": seed, "now": value, "earlier": before,
            "difference": None if before is None else value - float(before)}


def _kernels(entry: dict[str, Any]) -> str:
    """The host and CPU kernels a recorded run used: its machine, with the capability it was forced to."""
    if entry.get("cpu_capability", "machine") == "machine":
        return str(entry["machine"])
    host = str(entry["machine"]).split(", torch CPU capability")[0]
    return f"{host}, torch CPU capability {entry['cpu_capability'].upper()} (forced)"


def noise_pairs(split: str = "valid") -> list[dict[str, Any]]:
    """Same-seed pairs of the same library code (:func:`src_tree`) under different CPU kernels: a noise study
    against its repro study, and any two recorded runs of one study, variant and seed on different hosts."""
    entries = [e for e in latest(RECORD, TABLE).values() if e.get(split) is not None]
    groups: dict[tuple[str, str, int, str], list[dict[str, Any]]] = {}
    for e in entries:
        base = e["study"].removesuffix("-noise").removesuffix("-repro")
        groups.setdefault((base, e["variant"], int(e["seed"]), " ".join(e.get("src_tree", ["unknown"]))),
                          []).append(e)
    pairs = []
    for (base, variant, seed, at), found in groups.items():
        kernels = {_kernels(e): e for e in found}
        if len(kernels) < 2:
            continue
        (a, ea), (b, eb) = list(kernels.items())[:2]
        pairs.append({"study": base, "variant": variant, "seed": seed, "src_tree": at, "a": a, "b": b,
                      "value_a": ea[split], "value_b": eb[split], "difference": abs(ea[split] - eb[split])})
    return pairs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("run", "harvest", "list"))
    parser.add_argument("--studies", nargs="+", default=[s.name for s in STUDIES], metavar="NAME")
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "seeds")
    parser.add_argument("--lanes", type=int, default=1, help="processes per study, sharing its runs")
    parser.add_argument("--shared-cpu", action="store_true", help="record that other work shared the CPU")
    parser.add_argument("--again", action="store_true",
                        help="run: train the studies' seeds again (recorded or not); their rows supersede")
    args = parser.parse_args(argv)
    return {"run": run, "harvest": harvest, "list": list_studies}[args.action](args)


if __name__ == "__main__":
    raise SystemExit(main())
