"""The paper's Table 3 on this machine: summarization (SAMSum, DialogSum: ROUGE) and dialogue (DailyDialog,
PersonaChat: BLEU-1, BLEU-4, ROUGE-L, METEOR, CIDEr) for the Transformer (V), Dynamic Convolutions and the
Synthesizers R, D, D+V and R+V (encoder and decoder self-attention of the same kind; cross-attention V).

Resumable: each model trains into ``RUNS/<dataset>_<kind>``; a run already evaluated on its test split is skipped,
one with checkpoints is continued with ``--resume`` (a finished one then only gets evaluated). The final
evaluation is ``synthformer eval`` on the whole test split (written to ``eval_test.json`` and appended to the run's
``metrics.jsonl``); the table shows each metric and its difference to V.

Each finished model is also recorded in ``--record`` (default ``benchmarks/results/table3.jsonl``, tracked in
git): one JSON line with its test metrics, training and evaluation wall times, the command's overrides, the
commit and the machine. A model found there is not trained again, so the table can be filled over several
sittings on different machines (commit the record after each sitting); the table reads the record.

``--seed N`` (N > 0) trains the same models with ``train.seed=N`` (initialisation, dropout and batch order; the
data and its splits stay the same) into ``RUNS/<dataset>_<kind>_seed<N>``. The main table shows seed 0; every
(dataset, model) with more than one seed recorded also gets a line of mean ± standard deviation over its seeds,
which is what a difference between two single-seed models should be read against.

    python benchmarks/studies/table3.py                           # everything (about 20 minutes per model)
    python benchmarks/studies/table3.py --datasets personachat --kinds V D
    python benchmarks/studies/table3.py --table-only              # the table of what is finished
    python benchmarks/studies/table3.py --table-only --plot docs/figures/table3.png  # and its picture
    python benchmarks/studies/table3.py --datasets personachat --kinds V --seed 1  # a second seed: the seed spread
    python benchmarks/studies/table3.py --steps 4 --runs /tmp/t3  # a smoke run of the whole grid
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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


DEFAULT_RECORD = ROOT / "benchmarks" / "results" / "table3.jsonl"


def read_record(path: Path) -> dict[tuple[str, str, int], dict]:
    """(dataset, kind, seed) -> its recorded result (entries without a seed are seed 0); the last line of a key
    wins, a torn line is skipped."""
    found: dict[tuple[str, str, int], dict] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
                found[entry["dataset"], entry["kind"], int(entry.get("seed", 0))] = entry
            except (ValueError, KeyError, TypeError):
                continue
    return found


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def trained_seconds(run_dir: Path, this_sitting: float) -> float:
    """Training wall time over every sitting: the trainer's last ``elapsed_s`` in the run's ``metrics.jsonl``
    (restored from the checkpoint on ``--resume``, so it counts the sittings before this one), or this sitting's
    time when the run logged none."""
    from synthformer.train import RunDir  # reads metrics.jsonl past a torn last line

    elapsed = [r["elapsed_s"] for r in RunDir(run_dir).read_metrics() if isinstance(r.get("elapsed_s"), (int, float))]
    return max([this_sitting, *map(float, elapsed)])


def record_result(path: Path, dataset: str, kind: str, run_dir: Path, extra: list[str], train_s: float,
                  eval_s: float, seed: int = 0, shared_cpu: bool = False) -> None:
    """Append one finished model's test metrics and times to the record (one line, flushed and synced), with the
    command that reproduces it, the date and whether other work shared the CPU (``benchmarks/records.py``)."""
    finished = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = (f"python benchmarks/studies/table3.py --datasets {dataset} --kinds {kind}"
               + (f" --seed {seed}" if seed else ""))
    entry = {"dataset": dataset, "kind": kind, "seed": seed, "metrics": _metrics(run_dir),
             "train_seconds": round(train_s, 1),
             "eval_seconds": round(eval_s, 1), "overrides": extra, "config": CONFIGS[dataset],
             "commit": _commit(), "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
             "threads": int(os.environ.get("OMP_NUM_THREADS", "0")) or None,
             "finished": finished, "date": finished, "command": command, "shared_cpu": shared_cpu}
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:  # one line per model: a kill leaves at most a torn last line
        fh.write(json.dumps(entry) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def run_dir_of(runs: Path, dataset: str, kind: str, seed: int = 0) -> Path:
    """``RUNS/<dataset>_<kind>`` for seed 0 (the names of the first sittings), ``..._seed<N>`` otherwise."""
    return runs / (f"{dataset}_{kind}" if seed == 0 else f"{dataset}_{kind}_seed{seed}")


def run_one(dataset: str, kind: str, runs: Path, extra: list[str], record: Path, seed: int = 0,
            shared_cpu: bool = False) -> None:
    """Train (or resume) and evaluate one model unless it is recorded or evaluated already."""
    from synthformer.cli.main import main

    run_dir = run_dir_of(runs, dataset, kind, seed)
    if (dataset, kind, seed) in read_record(record):
        print(f"{dataset} {kind} seed {seed}: recorded in {record}, skipped", flush=True)
        return
    if seed:
        extra = [*extra, f"train.seed={seed}"]
    if (run_dir / "eval_test.json").is_file():
        print(f"{run_dir}: evaluated earlier (not recorded: its times are unknown), skipped", flush=True)
        return
    resume = ["--resume"] if (run_dir / "checkpoints").is_dir() else []
    start = time.perf_counter()
    code = main(["train", str(ROOT / CONFIGS[dataset]), f"model.encoder_kind={kind}", f"model.decoder_kind={kind}",
                 *extra, "--run-dir", str(run_dir), *resume])
    if code != 0:
        raise SystemExit(f"training {run_dir} failed (exit {code})")
    trained = time.perf_counter()
    if main(["eval", str(run_dir), "--split", "test"]) != 0:
        raise SystemExit(f"evaluating {run_dir} failed")
    done = time.perf_counter()
    train_s = trained_seconds(run_dir, trained - start)
    record_result(record, dataset, kind, run_dir, extra, train_s, done - trained, seed, shared_cpu)
    print(f"{run_dir}: trained in {train_s:.0f} s ({trained - start:.0f} s this sitting), evaluated in "
          f"{done - trained:.0f} s", flush=True)


def _family(dataset: str) -> str:
    """``"summarization"`` or ``"dialogue"``: the block of the table and the metric columns of ``dataset``."""
    return "summarization" if dataset in SUMMARIZATION else "dialogue"


def _seeds(recorded: dict[tuple[str, str, int], dict], dataset: str, kind: str) -> list[int]:
    """The recorded seeds of one (dataset, model), ascending."""
    return sorted(s for (d, k, s) in recorded if (d, k) == (dataset, kind))


def _cell(value: float | None, base: float | None) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    if base is None or math.isnan(base):
        return f"{value:.2f}"
    return f"{value:.2f} ({value - base:+.2f})"


def table(datasets: list[str], kinds: list[str], runs: Path, record: Path,
          baselines: dict[str, tuple[str, dict]] | None = None) -> str:
    """Table 3's layout in Markdown: one block per task family, one row per model, each dataset's metrics with
    their difference to V (from the record, else from the run directory's ``eval_test.json``); with
    ``baselines`` (dataset -> (row label, test metrics)), a last row per block of the datasets that have one."""
    recorded = read_record(record)
    out = []
    for family in ("summarization", "dialogue"):
        chosen = [d for d in datasets if _family(d) == family]
        if not chosen:
            continue
        header = ["Model"] + [f"{d} {name}" for d in chosen for name, _ in COLUMNS[family]]
        out += [f"**{family}** (test split; in parentheses: difference to V)", "",
                "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        scores = {(d, k): recorded[d, k, 0]["metrics"] if (d, k, 0) in recorded else _metrics(runs / f"{d}_{k}")
                  for d in chosen for k in kinds}
        for kind in kinds:
            cells = [_cell(scores[d, kind].get(key), scores.get((d, "V"), {}).get(key) if kind != "V" else None)
                     for d in chosen for _, key in COLUMNS[family]]
            out.append(f"| {LABELS.get(kind, kind)} | " + " | ".join(cells) + " |")
        found = {d: baselines[d] for d in chosen if d in (baselines or {})}
        if found:  # a model-free reference, with its difference to V like the models'
            label = next(iter(found.values()))[0]
            cells = [_cell(found[d][1].get(key) if d in found else None, scores.get((d, "V"), {}).get(key))
                     for d in chosen for _, key in COLUMNS[family]]
            out.append(f"| {label} | " + " | ".join(cells) + " |")
        out.append("")
        out += _spread(family, chosen, kinds, recorded)
    return "\n".join(out)


def _spread(family: str, datasets: list[str], kinds: list[str], recorded: dict[tuple[str, str, int], dict]
            ) -> list[str]:
    """Markdown lines: mean ± sample standard deviation of each metric over the recorded seeds of every
    (dataset, model) with at least two; nothing if there is none."""
    from synthformer.study import mean_std  # the studies' mean ± sample std over the finite values

    rows = []
    for d in datasets:
        for k in kinds:
            seeds = _seeds(recorded, d, k)
            if len(seeds) < 2:
                continue
            cells = []
            for _, key in COLUMNS[family]:
                mean, std = mean_std([recorded[d, k, s]["metrics"].get(key) for s in seeds])
                cells.append("n/a" if math.isnan(std) else f"{mean:.2f} ± {std:.2f}")
            rows.append(f"| {d} | {LABELS.get(k, k)} | {', '.join(map(str, seeds))} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    header = ["dataset", "Model", "seeds"] + [name for name, _ in COLUMNS[family]]
    return [f"Seed spread ({family}): mean ± standard deviation over the recorded seeds", "",
            "| " + " | ".join(header) + " |", "|" + "---|" * len(header), *rows, ""]


def differences(recorded: dict[tuple[str, str, int], dict], dataset: str, kinds: list[str]
                ) -> tuple[dict[str, list[float]], list[float] | None]:
    """What the figure draws for one dataset: each non-V kind's seed-0 difference to V's seed 0 per metric of the
    dataset's family (nan where either is missing), and V's seed standard deviation per metric (None with fewer
    than two seeds of V)."""
    from synthformer.study import mean_std

    keys = [key for _, key in COLUMNS[_family(dataset)]]

    def value(kind: str, key: str, seed: int = 0) -> float:
        got = recorded.get((dataset, kind, seed), {}).get("metrics", {}).get(key)
        return float(got) if isinstance(got, (int, float)) else math.nan

    diffs = {k: [value(k, key) - value("V", key) for key in keys] for k in kinds if k != "V"}
    seeds = _seeds(recorded, dataset, "V")
    spread = [mean_std([value("V", key, s) for s in seeds])[1] for key in keys] if len(seeds) > 1 else None
    return diffs, spread


def plot(datasets: list[str], kinds: list[str], record: Path, out: Path) -> Path:
    """One panel per dataset: grouped bars of each model's difference to V (points) per metric, with V's seed
    standard deviation as a grey band around zero where V has several seeds; from the record, written as a PNG."""
    from synthformer.plotting import new_figure, save_png  # matplotlib only when the figure is drawn

    recorded = read_record(record)
    others = [k for k in kinds if k != "V"]
    cols = min(2, len(datasets))
    rows = math.ceil(len(datasets) / cols)
    fig = new_figure((6.0 * cols, 3.6 * rows), dpi=100)
    axes = fig.subplots(rows, cols, squeeze=False)
    width = 0.8 / max(len(others), 1)
    for ax, dataset in zip(axes.flat, datasets, strict=False):  # spare panels stay empty
        names = [name for name, _ in COLUMNS[_family(dataset)]]
        diffs, spread = differences(recorded, dataset, kinds)
        for i, kind in enumerate(others):
            xs = [m + (i - (len(others) - 1) / 2) * width for m in range(len(names))]
            ax.bar(xs, diffs[kind], width, label=LABELS.get(kind, kind))  # nan bars are left out
        if spread is not None:
            for m, std in enumerate(spread):
                if not math.isnan(std):
                    ax.fill_between([m - 0.45, m + 0.45], -std, std, color="0.85", zorder=0,
                                    label="V: ± 1 std over seeds" if m == 0 else None)
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(names)), names)
        ax.set_title(f"{dataset}: difference to the Transformer (V)")
        ax.set_ylabel("points")
    for ax in list(axes.flat)[len(datasets):]:
        ax.axis("off")
    handles: dict[str, object] = {}  # one legend for all panels, each label once
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
    labels = list(handles)
    fig.legend([handles[lab] for lab in labels], labels, loc="lower center", ncol=len(labels), frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return save_png(fig, out, dpi=100)


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
    p.add_argument("--seed", type=int, default=0,
                   help="train.seed of the models to train (default 0; N > 0 trains into <dataset>_<kind>_seedN)")
    p.add_argument("--record", type=Path, default=DEFAULT_RECORD,
                   help="the file of finished models' results (default: %(default)s)")
    p.add_argument("--shared-cpu", action="store_true",
                   help="record that other work (a second lane, tests) shared the CPU while these models trained")
    p.add_argument("--table-only", action="store_true", help="print the table of the finished runs only")
    p.add_argument("--plot", type=Path, default=None, metavar="PNG",
                   help="also draw each model's difference to V per dataset and metric into this PNG")
    args = p.parse_args(argv)
    if args.seed < 0:
        p.error(f"--seed must be >= 0, got {args.seed}")
    extra = [] if args.steps is None else [f"train.steps={args.steps}", f"train.save_every={args.steps}",
                                           f"train.eval_every={args.steps}"]
    if not args.table_only:
        for dataset in args.datasets:
            for kind in args.kinds:
                run_one(dataset, kind, args.runs, extra, args.record, args.seed, args.shared_cpu)
    print(table(args.datasets, args.kinds, args.runs, args.record))
    if args.plot is not None:
        print(f"figure: {plot(args.datasets, args.kinds, args.record, args.plot)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
