"""Re-run the training tables of docs/results/*.md and record each finished row: ``synthformer compare`` (and its
ListOps task), IMDb with the paper's Table 7, tiny Shakespeare and Multi30k.

Resumable, like ``benchmarks/studies/table3.py``: each row trains into ``RUNS/<table>/<row>`` through the CLI in a
subprocess (``python -m synthformer.cli.main``, this checkout's ``src`` first on ``PYTHONPATH``), and the moment it
finishes one JSON line is appended to ``benchmarks/results/<table>.jsonl`` (commit it right away) with its numbers,
its commands, the date (UTC), machine, commit, threads and whether other work shared the CPU (``--shared-cpu``;
the load average at its start and end is recorded too). A row already recorded is skipped; a training run with
checkpoints is continued with ``--resume`` (``compare`` cannot resume: an unrecorded compare row starts over).
``benchmarks/docs_tables.py`` builds the docs' tables from these records.

    python benchmarks/studies/results_runs.py --table compare --threads 1 --shared-cpu  # ~6 min alone at 2 threads
    python benchmarks/studies/results_runs.py --table listops                    # compare --task listops
    python benchmarks/studies/results_runs.py --table imdb                       # V R FR FR+V Linformer, ~6-10 min each
    python benchmarks/studies/results_runs.py --table shakespeare                # 5 runs, 12-21 min each
    python benchmarks/studies/results_runs.py --table multi30k                   # 3 runs, 30-50 min each
    python benchmarks/studies/results_runs.py --table t5arch_pretrain            # T5's architecture
    python benchmarks/studies/results_runs.py --table t5arch_glue                # from t5arch_pretrain's runs
    python benchmarks/studies/results_runs.py --table t5arch_superglue           # likewise
    python benchmarks/studies/results_runs.py --table lra --rows listops-V text-V  # LRA's Table 1
    python benchmarks/studies/results_runs.py --table lra_cpu --runs runs/lracpu  # the same at a CPU's size
    python benchmarks/studies/results_runs.py --table imdb --rows V R --runs /tmp/runs  # some rows, elsewhere
    python benchmarks/studies/results_runs.py --table imdb --steps 4 --record /tmp/x.jsonl  # a smoke run
    python benchmarks/studies/results_runs.py --table compare --rerun  # re-measure recorded rows (a quiet machine)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, append, commit, latest, load, metadata  # noqa: E402 - benchmarks/records.py

_K32 = "model.kind_options={k: 32}"
_SHK = ["configs/lm_tiny_shakespeare.yaml", "train.lr=2e-3"]


@dataclass(frozen=True)
class Row:
    """One row of a table: ``synthformer train`` of ``config`` with ``overrides`` then ``synthformer eval`` on
    ``split``; or, with ``compare_kind``, ``synthformer compare --kinds KIND``."""

    config: str = ""
    overrides: tuple[str, ...] = ()
    split: str = "test"
    compare_kind: str | None = None
    compare_task: str = "pystdlib"


def _train_row(config: str, *overrides: str, split: str = "test") -> Row:
    return Row(config=config, overrides=tuple(overrides), split=split)


def _shk(kind: str, steps: int = 2400) -> Row:
    every = steps // 4
    return _train_row(_SHK[0], f"model.decoder_kind={kind}", f"train.steps={steps}", _SHK[1],
                      f"train.eval_every={every}", f"train.save_every={2 * every}", split="valid")


def _mt(kind: str) -> Row:
    kinds = () if kind == "V" else (f"model.encoder_kind={kind}", f"model.decoder_kind={kind}")
    return _train_row("configs/mt_multi30k_de_en.yaml", *kinds)


_T5_KINDS = ("V", "R", "D", "R+V", "D+V")
_T5_PRE = "configs/t5arch_cpu_pretrain_imdb.yaml"
#: The earlier recipe (AdamW at 2e-3, warm-up then cosine, gradients clipped at 1), on the same budget and data as
#: T5's Adafactor: the comparison the T5 setting's optimizer choice rests on
_ADAMW = ("train.optimizer=adamw", "train.lr=2e-3", "train.schedule=cosine", "train.warmup_steps=150",
          "train.grad_clip=1.0")


def _t5_finetune(config: str, kind: str, pretrained: str) -> Row:
    """Finetuning from the ``t5arch_pretrain`` row ``pretrained`` (``{runs}``: the sitting's runs folder)."""
    return _train_row(config, f"model.encoder_kind={kind}", f"init_from={{runs}}/t5arch_pretrain/{pretrained}",
                      split="valid")


# LRA's Table 1 at LRA's model sizes (the configs), with a CPU step budget. LRA's own Synthesizer is its
# SynthesizerEncoder's default, random logits plus the dot product summed (synthesizer_mode "random", the dot product
# kept): R+V here; its factorized mode has k = 32 (FR's k here, as in the paper's encoder tasks). LRA's Linformer
# projects keys and values with one (max_len, 16) matrix (low_rank_features=16, shared by K and V and the heads).
_LRA_CONFIGS = {"listops": "configs/lra_listops.yaml", "text": "configs/lra_text.yaml",
                "pathfinder": "configs/lra_pathfinder.yaml"}
_LRA_KINDS: dict[str, tuple[str, ...]] = {"V": (), "R": (), "FR": (_K32,), "D": (), "R+V": (),
                                          "Linformer": ("model.kind_options={k: 16, share_kv: true}",)}


@dataclass(frozen=True)
class LraBudget:
    """One task's CPU budget, equal for every kind: ``steps`` of ``batch_size``; validation on the first
    ``eval_steps`` batches of the valid split at the middle and the end; the test accuracy over ``eval_limit``
    test examples (a seeded subset: the full test sets take longer to score than the training)."""

    steps: int
    batch_size: int
    eval_steps: int
    eval_limit: int

    @property
    def warmup_steps(self) -> int:
        """LRA warms up for 1,000-8,000 steps, longer than these runs: here 10% of the steps (the peak lr stays
        the config's, LRA's peak), then the config's schedule (inverse square root, or cosine)."""
        return max(1, self.steps // 10)

    def overrides(self) -> tuple[str, ...]:
        return (f"train.steps={self.steps}", f"train.batch_size={self.batch_size}",
                f"train.warmup_steps={self.warmup_steps}", f"train.eval_every={self.steps // 2}",
                f"train.save_every={self.steps // 2}", f"train.eval_steps={self.eval_steps}",
                f"task.eval_limit={self.eval_limit}")


#: Chosen so that V's row trains in about 30-45 minutes on one thread of this shared machine. V's step on one thread
#: (2026-11-26, a few steps each beside 2-3 other jobs on the 2 cores: rounded up): ListOps about 28 s at batch 2
#: (7-46 s: the lengths vary), Text 22 s at batch 8 (60 s at LRA's 32), Pathfinder 6.3 s at batch 16 and 21 s at
#: 64. At LRA's batches that is a few dozen steps at most (ListOps at 32: minutes per step, and 80 GiB of math-path
#: activations; Pathfinder at 512: about 3 minutes), so the batch is cut, never the model: ListOps 2 (and still
#: under 100 steps: out of this machine's reach at LRA's size), Text 8, Pathfinder 32 (LRA 512; the config's 64).
#: LRA's steps x batch: ListOps 5,000 x 32, Text 20,000 x 32, Pathfinder 62,500 x 512. Test examples: a subset
#: where scoring all would take too long (ListOps' forward takes seconds per example on one thread).
LRA_BUDGETS = {"listops": LraBudget(steps=80, batch_size=2, eval_steps=10, eval_limit=200),
               "text": LraBudget(steps=100, batch_size=8, eval_steps=8, eval_limit=1000),
               "pathfinder": LraBudget(steps=200, batch_size=32, eval_steps=8, eval_limit=2000)}


def _lra(task: str, kind: str) -> Row:
    return _train_row(_LRA_CONFIGS[task], f"model.encoder_kind={kind}", *_LRA_KINDS[kind],
                      *LRA_BUDGETS[task].overrides(), split="test")


#: LRA at a size this CPU trains (docs/results/lra.md, "At CPU size"): the config holds the task, model and budget,
#: the rows vary only the kind, as the LRA-sized table does; V first, then R, so a stopped study has both
LRA_CPU_CONFIGS = {"listops": "configs/lra_listops_cpu.yaml"}


def _lra_cpu(task: str, kind: str) -> Row:
    return _train_row(LRA_CPU_CONFIGS[task], f"model.encoder_kind={kind}", *_LRA_KINDS[kind], split="test")


TABLES: dict[str, dict[str, Row]] = {
    "compare": {k: Row(compare_kind=k) for k in ("V", "R", "D", "R+V")},
    "listops": {k: Row(compare_kind=k, compare_task="listops") for k in ("V", "R", "D", "R+V")},
    "imdb": {
        "V": _train_row("configs/cls_imdb.yaml", "model.encoder_kind=V"),
        "R": _train_row("configs/cls_imdb.yaml", "model.encoder_kind=R"),
        **{k: _train_row("configs/cls_imdb.yaml", f"model.encoder_kind={k}", _K32)
           for k in ("FR", "FR+V", "Linformer")},
    },
    "shakespeare": {"V": _shk("V"), "R": _shk("R"), "D": _shk("D"), "R+V": _shk("R+V"), "R+V@1600": _shk("R+V", 1600)},
    "multi30k": {k: _mt(k) for k in ("V", "R", "D")},
    # T5's own architecture; "transformer-V" is the earlier setting (configs/t5_cpu_*), for comparison
    "t5arch_pretrain": {**{k: _train_row(_T5_PRE, f"model.encoder_kind={k}", split="valid") for k in _T5_KINDS},
                        "V-adamw": _train_row(_T5_PRE, "model.encoder_kind=V", *_ADAMW, split="valid"),
                        "transformer-V": _train_row("configs/t5_cpu_pretrain_imdb.yaml", split="valid")},
    "t5arch_glue": {**{k: _t5_finetune("configs/t5arch_cpu_glue.yaml", k, k) for k in ("V", "R+V", "D+V")},
                    "R+V-grown": _t5_finetune("configs/t5arch_cpu_glue.yaml", "R+V", "V"),  # V's weights, new R
                    "transformer-V": _t5_finetune("configs/t5_cpu_glue.yaml", "V", "transformer-V")},
    # SuperGLUE on the same pretrained models
    "t5arch_superglue": {k: _t5_finetune("configs/t5arch_cpu_superglue.yaml", k, k) for k in _T5_KINDS},
    "lra": {f"{task}-{kind}": _lra(task, kind) for task in _LRA_CONFIGS for kind in _LRA_KINDS},
    "lra_cpu": {f"{task}-{kind}": _lra_cpu(task, kind) for task in LRA_CPU_CONFIGS for kind in _LRA_KINDS},
}


@dataclass
class Sitting:
    """How this invocation runs its rows."""

    runs: Path
    record: Path
    threads: int | None
    shared_cpu: bool
    extra: list[str] = field(default_factory=list)
    rerun: bool = False
    """Run rows the record already has (a quiet re-measurement); the new entry then supersedes the old one."""


def _cli(args: list[str], log: Path, threads: int | None) -> float:
    """Run ``python -m synthformer.cli.main ARGS`` (output appended to ``log``); its wall seconds. Raises on failure."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
        args = [*args, "--threads", str(threads)]
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"$ synthformer {shlex.join(args)}\n")
        fh.flush()
        code = subprocess.run([sys.executable, "-m", "synthformer.cli.main", *args], cwd=ROOT, env=env, stdout=fh,
                              stderr=subprocess.STDOUT, check=False).returncode
    if code != 0:
        raise SystemExit(f"synthformer {shlex.join(args)} failed (exit {code}); see {log}")
    return time.perf_counter() - start


def _command(args: list[str], threads: int | None) -> str:
    prefix = f"OMP_NUM_THREADS={threads} " if threads is not None else ""
    suffix = f" --threads {threads}" if threads is not None else ""
    return f"{prefix}synthformer {shlex.join(args)}{suffix}"


def training_numbers(run_dir: Path) -> dict[str, Any]:
    """From ``metrics.jsonl``: steps, the trainer's clock (``elapsed_s``, periodic validation included), the time
    spent in periodic validation (an eval line's clock minus that of the train line of its step), the median
    logged tokens/s, and the last validation metrics (``eval_*``)."""
    from synthformer.train import RunDir  # reads metrics.jsonl past a torn last line

    records = RunDir(run_dir).read_metrics()
    train = {r["step"]: r for r in records if "loss" in r}
    evals = [r for r in records if any(k.startswith("eval_") for k in r)]
    elapsed = max(float(r.get("elapsed_s", 0.0)) for r in records)
    validating = sum(max(float(e["elapsed_s"]) - float(train[e["step"]]["elapsed_s"]), 0.0)
                     for e in evals if e["step"] in train)
    last_eval = {k: v for k, v in (evals[-1] if evals else {}).items() if k.startswith("eval_")}
    return {"steps": max(r["step"] for r in records), "elapsed_s": round(elapsed, 1),
            "train_s": round(elapsed - validating, 1),
            "tokens_per_s": round(statistics.median(r["tokens_per_s"] for r in train.values()), 1),
            "valid": last_eval}


def _parameters(log: Path) -> int | None:
    found = re.findall(r"([\d,]+) trainable parameters", log.read_text(encoding="utf-8"))
    return int(found[-1].replace(",", "")) if found else None


def _run_train(row: Row, run_dir: Path, s: Sitting) -> tuple[dict[str, Any], list[str]]:
    log = run_dir.parent / f"{run_dir.name}.log"
    overrides = [o.replace("{runs}", str(s.runs)) for o in row.overrides]
    for o in overrides:  # a finetuning row needs its pretraining row's run first
        if o.startswith("init_from=") and not Path(o.split("=", 1)[1]).is_dir():
            raise SystemExit(f"{o} does not exist yet: run the pretraining table's row first (--table "
                             f"{Path(o.split('=', 1)[1]).parent.name} --runs {s.runs})")
    train = ["train", row.config, *overrides, *s.extra, "--run-dir", str(run_dir)]
    # a row killed after a checkpoint continues; one killed before its first save (the directory holds only its
    # config and metrics: this runner made it, for a row not recorded yet) starts over
    resume = ["--resume"] if (run_dir / "checkpoints").is_dir() else ["--overwrite"] if run_dir.exists() else []
    train_wall = _cli([*train, *resume], log, s.threads)
    evaluate = ["eval", str(run_dir), "--split", row.split]
    eval_wall = _cli(evaluate, log, s.threads)
    result = json.loads((run_dir / f"eval_{row.split}.json").read_text(encoding="utf-8"))
    numbers = {"parameters": _parameters(log), **training_numbers(run_dir), row.split: result.get("metrics", result),
               "train_wall_s": round(train_wall, 1), "eval_wall_s": round(eval_wall, 1), "resumed": bool(resume)}
    return numbers, [_command(train, s.threads), _command(evaluate, s.threads)]


def _run_compare(row: Row, run_dir: Path, s: Sitting) -> tuple[dict[str, Any], list[str]]:
    task = [] if row.compare_task == "pystdlib" else ["--task", row.compare_task]
    args = ["compare", *task, "--kinds", str(row.compare_kind), *s.extra, "--out", str(run_dir), "--overwrite"]
    wall = _cli(args, run_dir.parent / f"{run_dir.name}.log", s.threads)
    result = json.loads((run_dir / "comparison.json").read_text(encoding="utf-8"))
    numbers = {**result["rows"][0], "baseline": result["baseline"], "process_wall_s": round(wall, 1)}
    numbers.pop("run_dir", None)
    return numbers, [_command(args, s.threads)]


def run_row(table: str, name: str, s: Sitting) -> None:
    """Train and evaluate one row unless the record has it; append its entry the moment it is done."""
    recorded = name in latest(s.record, table)
    if recorded and not s.rerun:
        print(f"{table} {name}: recorded in {s.record}, skipped", flush=True)
        return
    row = TABLES[table][name]
    run_dir = s.runs / table / name.replace("@", "-")
    if recorded and run_dir.exists():  # a re-measurement trains from scratch, beside the old run (kept); on a
        # machine without the old run it takes the plain name, where a finetuning row's init_from looks
        run_dir = run_dir.with_name(f"{run_dir.name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}")
    load_start, code = load(), commit()  # of the code that starts: later commits during the run do not count
    start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    numbers, commands = (_run_compare if row.compare_kind else _run_train)(row, run_dir, s)
    entry = {"table": table, "row": name, **numbers, "started": start, "run_dir": str(run_dir),
             **metadata(" && ".join(commands), s.threads, s.shared_cpu), "commit": code,
             "load_1min": [load_start, load()]}
    append(s.record, entry)
    print(f"{table} {name}: recorded ({entry['date']})", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--table", required=True, choices=list(TABLES))
    p.add_argument("--rows", nargs="+", default=None, help="rows to run (default: every row of the table)")
    p.add_argument("--runs", type=Path, default=ROOT / "runs" / "results", help="where run directories go")
    p.add_argument("--record", type=Path, default=None, help="default: benchmarks/results/<table>.jsonl")
    p.add_argument("--threads", type=int, default=None, help="torch threads (and OMP_NUM_THREADS) for every run")
    p.add_argument("--shared-cpu", action="store_true", help="record that other work shared the CPU meanwhile")
    p.add_argument("--steps", type=int, default=None, help="override train.steps (smoke runs)")
    p.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE",
                   help="more config overrides for every training row (smoke runs: e.g. task.train_limit=20000)")
    p.add_argument("--rerun", action="store_true",
                   help="also run rows already recorded (e.g. on a quiet machine); the new entries supersede the old")
    args = p.parse_args(argv)
    rows = args.rows or list(TABLES[args.table])
    unknown = [r for r in rows if r not in TABLES[args.table]]
    if unknown:
        p.error(f"unknown rows {unknown} of {args.table}; known: {list(TABLES[args.table])}")
    extra = [] if args.steps is None else [f"train.steps={args.steps}", f"train.eval_every={args.steps}",
                                           f"train.save_every={args.steps}"]
    extra += args.set
    sitting = Sitting(args.runs.resolve(), args.record or RESULTS / f"{args.table}.jsonl", args.threads,
                      args.shared_cpu, extra, args.rerun)
    for name in rows:
        run_row(args.table, name, sitting)
    return 0


if __name__ == "__main__":
    sys.exit(main())
