"""Data at scale (the goals of docs/data.md): a seeded text corpus of 0.5 GB and one of 5 GB, ``synthformer prepare`` on
both, and ``synthformer train`` of the span-corruption config at t5-small-cpu size from them, measured.

    python benchmarks/speed/data.py --all             # the full run (see docs/benchmarks.md: time and disk)
    python benchmarks/speed/data.py --all --phase data  # corpora, prepare, encode ceiling (may share the CPU)
    python benchmarks/speed/data.py --all --phase train  # then the train and loader rows (a quiet machine)
    python benchmarks/speed/data.py --quick           # 5 MB and 20 MB corpora, a few steps: checks the script
    python benchmarks/speed/data.py --make-corpus 0.5G --out /tmp/corpus  # only write a corpus

One record per measurement is appended to ``--record`` (``benchmarks/results/bench_data.jsonl`` for ``--all``;
``/tmp/bench_data_quick.jsonl`` for ``--quick``) with the command, date, machine, commit, threads, ``shared_cpu``
and the load average at its start and end (``benchmarks/records.py``). Rows: ``corpus@S``, ``prepare@S``,
``encode_ceiling@S``, ``train_prepared@S``, ``train_in_memory@S``, ``loader@S`` (S the corpus size). At the end each
goal is printed as holding or not, with its numbers. Work files (corpora, prepared folders, runs) go to ``--work``.

Resumable: a row the record already has is not measured again (its recorded numbers enter the goals) unless
``--rerun`` is given; a recorded ``prepare@S`` is reused only while its prepared folder is complete. So a killed run
continues with the same command, and ``--phase`` splits the long preparing (which may share the CPU: say
``--shared-cpu``) from the short timing-sensitive rows (run them on a quiet machine).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, append, latest, load, metadata  # noqa: E402

from speed.data_corpus import encode_ceiling, make_corpus, make_tokenizer, parse_size  # noqa: E402 - sibling modules
from speed.data_measure import (  # noqa: E402, E501
    GB,
    loader_and_steps,
    prepare_command,
    prepared_overrides,
    source_overrides,
    step_rate,
    train_command,
    watch,
)

CONFIG = "configs/t5_cpu_pretrain_imdb.yaml"
TABLE = "bench_data"


class Bench:
    """One benchmark session: where its files go, what it records, and the results so far (for the goals)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work: Path = args.work
        self.results: dict[str, dict[str, Any]] = {}
        self.command = "python " + shlex.join(["benchmarks/speed/data.py", *sys.argv[1:]])
        recorded = {} if args.rerun is True or args.record is None else latest(args.record, TABLE)
        # --rerun ROW ...: those rows are measured again, the rest of the record is reused
        self.recorded: dict[str, dict[str, Any]] = {k: v for k, v in recorded.items() if k not in (args.rerun or ())}

    def reuse(self, row: str) -> bool:
        """Whether ``row`` is in the record already: its numbers are then taken from there, not measured again."""
        entry = self.recorded.get(row)
        if entry is None:
            return False
        self.results[row] = entry
        print(f"{row}: recorded {entry.get('date', '?')}, not measured again (--rerun measures it)", flush=True)
        return True

    def record(self, row: str, numbers: dict[str, Any], started_load: float) -> None:
        """Keep ``numbers`` as ``row``, print them, and append them to the record with the metadata."""
        import torch

        self.results[row] = numbers
        print(f"{row}: {json.dumps(numbers)}", flush=True)
        if self.args.record is not None:
            entry = {"table": TABLE, "row": row, **numbers,
                     **metadata(self.command, torch.get_num_threads(), bool(self.args.shared_cpu)),
                     "load_1min": [started_load, load()]}
            append(self.args.record, entry)

    def corpus(self, label: str) -> Path:
        """The corpus of ``label`` (e.g. ``0.5G``), written unless one of that size and seed is there."""
        out = self.work / f"corpus-{label}"
        info_file = out / "corpus.json"
        size = parse_size(label)
        if info_file.is_file():
            info = json.loads(info_file.read_text(encoding="utf-8"))
            if info.get("size") == size and info.get("seed") == self.args.seed:
                return out
        started = load()
        self.record(f"corpus@{label}", make_corpus(size, out, self.args.seed), started)
        return out

    def tokenizer(self, corpus: Path) -> Path:
        """The tokenizer every prepare shares (trained once on the small corpus; not timed)."""
        path = self.work / "tokenizer.json"
        if not path.is_file():
            make_tokenizer(self.args.config, corpus, path)
        return path

    def prepare(self, label: str, corpus: Path, tokenizer: Path) -> Path:
        """``prepare --workers N`` of the corpus, timed (MB of JSONL per second) with its peak memory."""
        out = self.work / f"prepared-{label}"
        row = f"prepare@{label}"
        if (out / "manifest.json").is_file() and self.reuse(row):  # the manifest is written last: a whole folder
            return out
        started = load()
        command = prepare_command(self.args.config, corpus, out, tokenizer, self.args.workers)
        # polled every 0.5 s: prepare's memory changes slowly, and at 50 ms the polling of the process tree
        # (psutil) took a fifth of a core from the measurement
        result = watch(command, log=self.work / f"prepare-{label}.log", poll_s=0.5)
        if result["returncode"] != 0:
            raise SystemExit(f"prepare failed ({result}); see {self.work / f'prepare-{label}.log'}")
        size = sum((corpus / f).stat().st_size for f in ("train.jsonl", "valid.jsonl"))
        numbers = {"workers": self.args.workers, "bytes": size, "mb_per_s": round(size / 1e6 / result["seconds"], 3),
                   "seconds": result["seconds"], "peak_rss_gb": result["peak_rss_gb"]}
        self.record(row, numbers, started)
        return out

    def ceiling(self, label: str, corpus: Path, tokenizer: Path) -> None:
        """The plain ``encode_batch`` loop over the same files, and prepare's rate as a share of it."""
        if self.reuse(f"encode_ceiling@{label}"):
            return
        started = load()
        numbers = encode_ceiling([corpus / "train.jsonl", corpus / "valid.jsonl"], tokenizer)
        prepared = self.results.get(f"prepare@{label}")
        if prepared is not None:
            numbers["prepare_over_ceiling"] = round(prepared["mb_per_s"] / numbers["mb_per_s"], 3)
        self.record(f"encode_ceiling@{label}", numbers, started)

    def train(self, row: str, data: list[str], cap: float | None) -> None:
        """``synthformer train`` for a few steps: peak RSS, seconds to the first step, examples per second."""
        if self.reuse(row):
            return
        run_dir = self.work / "runs" / row.replace("@", "-")
        shutil.rmtree(run_dir, ignore_errors=True)  # an earlier run's metrics.jsonl would fake the first step
        started = load()
        command = train_command(self.args.config, run_dir, data, self.args.steps, self.args.overrides)
        result = watch(command, cap_bytes=cap, metrics=run_dir / "metrics.jsonl", timeout_s=self.args.timeout,
                       log=self.work / f"{row.replace('@', '-')}.log")
        batch = _batch_size(self.args)
        rate = step_rate(run_dir / "metrics.jsonl", batch)
        result["examples_per_s"] = None if rate is None else round(rate, 2)
        result["steps"] = self.args.steps
        if result["exceeded_cap"]:
            result["note"] = (f"exceeded the cap at {result['peak_rss_gb']:.1f} GB after {result['seconds']:.0f} s "
                              f"(cap {cap / GB:.1f} GB)")
        elif result["timed_out"]:
            result["note"] = f"stopped at --timeout {self.args.timeout:.0f} s with {result['peak_rss_gb']:.1f} GB"
        elif result["returncode"] != 0:
            result["note"] = f"exit code {result['returncode']}; see the log in {self.work}"
        self.record(row, result, started)

    def loader(self, label: str, prepared: Path) -> None:
        """The loader alone and the instrumented trainer-like loop, in this process."""
        if self.reuse(f"loader@{label}"):
            return
        started = load()
        numbers = loader_and_steps(self.args.config, prepared, self.args.overrides, self.args.loader_batches,
                                   self.args.loop_steps)
        self.record(f"loader@{label}", numbers, started)


def _batch_size(args: argparse.Namespace) -> int:
    from synthformer.tasks import load_run_config

    return load_run_config(Path(args.config), list(args.overrides)).train.batch_size


def verdict(goal: str, ok: bool | None) -> str:
    """What :func:`goals` says of ``goal``: holds / does not hold / not measured, or "reported (no threshold)"
    for the prepare throughput, which has no threshold."""
    if goal.startswith("prepare"):
        return "reported (no threshold)"
    return "not measured" if ok is None else ("holds" if ok else "does not hold")


def goals(results: dict[str, dict[str, Any]], small: str, big: str) -> list[tuple[str, str, bool | None]]:
    """The data-at-scale goals as (goal, what was measured, holds) with ``None`` for "not measured"; the last one (the
    prepare throughput) is reported against the ceiling, with no threshold, so it is always ``None``."""
    rows: list[tuple[str, str, bool | None]] = []
    p_small = results.get(f"train_prepared@{small}", {}).get("peak_rss_gb")
    p_big = results.get(f"train_prepared@{big}", {}).get("peak_rss_gb")
    mem = results.get(f"train_in_memory@{small}", {})
    in_memory = mem.get("peak_rss_gb")
    rows.append((f"peak RSS of train from prepared {big} within 10% of prepared {small}",
                 f"{p_big} GB vs {p_small} GB", None if p_small is None or p_big is None else p_big <= 1.1 * p_small))
    note = f"; in-memory {mem['note']}" if "note" in mem else ""
    rows.append((f"peak RSS of train from prepared {big} below the in-memory path at {small}",
                 f"{p_big} GB vs {in_memory} GB{note}",
                 None if p_big is None or in_memory is None else p_big < in_memory))
    first = results.get(f"train_prepared@{big}", {}).get("first_step_s")
    rows.append((f"command to first optimizer step from prepared {big} <= 10 s", f"{first} s",
                 None if first is None else first <= 10.0))
    loader = results.get(f"loader@{big}", {})
    supply = loader.get("loader_examples_per_s")
    real = results.get(f"train_prepared@{big}", {}).get("examples_per_s") or loader.get("loop_examples_per_s")
    ratio = None if supply is None or not real else round(supply / real, 1)
    real = None if real is None else round(real, 2)
    rows.append(("loader supplies >= 10x what the trainer consumes",
                 f"loader {supply} examples/s, trainer {real} examples/s: {ratio}x",
                 None if ratio is None else ratio >= 10))
    share = loader.get("data_wait_share")
    measured = "not measured" if share is None else f"{100 * share:.3g}%"
    rows.append(("share of step time waiting for data <= 2%",
                 f"{measured} with train.num_workers {loader.get('num_workers')} (next(stream) timed in a "
                 "trainer-like loop: the trainer does not expose it)",
                 None if share is None else share <= 0.02))
    prep = results.get(f"prepare@{small}", {})
    ceil = results.get(f"encode_ceiling@{small}", {})
    at_big = results.get(f"prepare@{big}", {}).get("mb_per_s")
    rows.append((f"prepare --workers {prep.get('workers')} throughput, against the encode_batch ceiling",
                 f"{prep.get('mb_per_s')} MB/s at {small} ({at_big} MB/s at {big}); ceiling (1 process) "
                 f"{ceil.get('mb_per_s')} MB/s; ratio {ceil.get('prepare_over_ceiling')}", None))
    return rows


def goal_lines(results: dict[str, dict[str, Any]], small: str, big: str) -> list[str]:
    """One line per data-at-scale goal: the goal, the numbers, and whether it holds."""
    lines = []
    for goal, measured, ok in goals(results, small, big):
        lines.append(f"goal {goal} (measured {measured}): {verdict(goal, ok)}")
    return lines


def run_all(args: argparse.Namespace) -> list[str]:
    """Every measurement in order, then the goal lines."""
    bench = Bench(args)
    args.work.mkdir(parents=True, exist_ok=True)
    small, big = args.sizes
    corpora = {label: bench.corpus(label) for label in (small, big)}
    tokenizer = bench.tokenizer(corpora[small])
    prepared = {label: bench.prepare(label, corpora[label], tokenizer) for label in (small, big)}
    bench.ceiling(small, corpora[small], tokenizer)
    if args.phase == "data":
        return []
    for label in (small, big):
        bench.train(f"train_prepared@{label}", prepared_overrides(prepared[label]), None)
    if not args.skip_in_memory:
        files = [f"task.train={corpora[small] / 'train.jsonl'}", f"task.valid={corpora[small] / 'valid.jsonl'}"]
        bench.train(f"train_in_memory@{small}", [*source_overrides(), *files], parse_size(args.memory_cap))
    bench.loader(big, prepared[big])
    lines = goal_lines(bench.results, small, big)
    for line in lines:
        print(line)
    return lines


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--all", action="store_true", help="every measurement at --sizes (default 0.5G 5G)")
    mode.add_argument("--quick", action="store_true", help="every measurement on 5M and 20M corpora, 4 steps")
    mode.add_argument("--make-corpus", metavar="SIZE", help="only write a corpus of SIZE (e.g. 0.5G) to --out")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="config overrides for train and the loader")
    p.add_argument("--out", type=Path, help="the corpus folder of --make-corpus")
    p.add_argument("--work", type=Path, default=ROOT.parent / "bench-data", help="corpora, prepared folders, runs")
    p.add_argument("--config", default=CONFIG, help="the span-corruption run config (t5-small-cpu size)")
    p.add_argument("--sizes", nargs=2, metavar=("SMALL", "BIG"), default=None)
    p.add_argument("--steps", type=int, default=None, help="training steps of each train run (default 10; quick 4)")
    p.add_argument("--workers", type=int, default=2, help="prepare --workers")
    p.add_argument("--memory-cap", default="16G", help="stop the in-memory run once its RSS passes this")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds before a train run is stopped")
    p.add_argument("--skip-in-memory", action="store_true", help="do not run the in-memory path")
    p.add_argument("--loader-batches", type=int, default=None, help="batches timed from the loader (200; quick 20)")
    p.add_argument("--loop-steps", type=int, default=None, help="steps of the instrumented loop (20; quick 4)")
    p.add_argument("--seed", type=int, default=0, help="the corpus's seed")
    p.add_argument("--record", type=Path, default=None, help="JSONL record (default: see the module docstring)")
    p.add_argument("--shared-cpu", action="store_true", help="record that other work shared the CPU")
    p.add_argument("--phase", choices=("data", "train", "all"), default="all",
                   help="data: corpora, prepare and the encode ceiling only; train: the rest (what is recorded is "
                        "reused); all: both")
    p.add_argument("--rerun", nargs="*", metavar="ROW", default=None,
                   help="measure rows the record already has again: all of them, or the ROWs named (e.g. "
                        "prepare@0.5G)")
    args = p.parse_args(argv)
    quick = args.quick
    args.sizes = args.sizes or (["5M", "20M"] if quick else ["0.5G", "5G"])
    args.steps = args.steps or (4 if quick else 10)
    args.loader_batches = args.loader_batches or (20 if quick else 200)
    args.loop_steps = args.loop_steps or (4 if quick else 20)
    if quick or args.rerun == []:  # a quick run checks the script: it measures everything each time
        args.rerun = True
    if args.record is None and not args.make_corpus:
        args.record = Path("/tmp/bench_data_quick.jsonl") if quick else RESULTS / f"{TABLE}.jsonl"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.make_corpus:
        if args.out is None:
            raise SystemExit("--make-corpus SIZE needs --out DIR")
        print(json.dumps(make_corpus(parse_size(args.make_corpus), args.out, args.seed)))
        return 0
    run_all(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
