"""Training speed of every kind of the token-mixing study (docs/results/mixing.md, "Speed"), measured the way
docs/benchmarks.md measures speed: medians after warm-up, V in the same run, ratios to V, interleaved rounds.

Each kind of ``studies/mixing_study.py``'s :data:`KINDS` gets the model the study's runs train: the run config is
loaded with its overrides (``load_run_config``), the kind set on every stack (``with_kind``), the data prepared by
the task's own generator (``prepare_data``, once: the kinds share the task section) and the model built, seeded and
counted by the run's own model step (``setup_model``), with the run's optimizer and schedule (``build_optimizer``,
``build_scheduler``). One training step is what the trainer does for one process: the loss of a batch of the config's
``train.batch_size`` training examples (``forward_loss``), backward, gradient clipping at ``train.grad_clip``, the
optimizer and schedule steps, the gradients cleared. Every kind trains on the same batch.

In each of ``--rounds`` rounds every kind is measured once, the order rotated by one kind per round so that drift and
background load hit every kind alike: ``--warmup`` untimed steps, then ``--steps`` timed steps, of which the median is
the round's sample. Per kind: the median over the rounds (ms per step, steps/s) and the speed relative to V (V's
median step time over the kind's: above 1 is faster than V), with the smallest and largest of the per-round ratios as
its spread. Torch runs ``--threads`` threads (default 1, as the study's runs do); nothing else is tuned (no allocator
or environment settings): the process runs as a user runs it.

    python benchmarks/speed/mixing_speed.py                                  # MQAR's config, recorded
    python benchmarks/speed/mixing_speed.py --config configs/mixing_mad.yaml # MAD's (in-context recall)
    python benchmarks/speed/mixing_speed.py --setting selective_copy         # a setting of the study, its overrides
    python benchmarks/speed/mixing_speed.py --smoke --kinds V,R,D            # 2 rounds of 1 step: printed only

One JSON line per kind is appended to ``benchmarks/results/mixing_speed.jsonl`` (``--record FILE``; ``--smoke``
records only with ``--record``) with the metadata of ``records.py``; ``doc_tables/mixing.py`` builds the page's
table ``mixing-speed-quiet`` from the newest run. A progress line per round goes to stderr.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, append, load, metadata  # noqa: E402 - benchmarks/records.py
from studies import mixing_study as study  # noqa: E402 - the study's kinds and settings

TABLE = "mixing_speed"
RECORD = RESULTS / f"{TABLE}.jsonl"
DEFAULT_CONFIG = "configs/mixing_mqar.yaml"
KINDS: tuple[str, ...] = study.KINDS
FULL = {"rounds": 5, "warmup": 3, "steps": 20}
SMOKE = {"rounds": 2, "warmup": 1, "steps": 1}


@dataclass
class Trainee:
    """One kind's model with the run's optimizer and schedule, ready for :func:`train_step`."""

    kind: str
    run: Any  # RunConfig
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: Any  # LambdaLR
    parameters: int
    trainable: int


@dataclass(frozen=True)
class Workload:
    """What is measured: the setting's label, its config and overrides, and the batch every kind trains on."""

    label: str
    config: str
    overrides: tuple[str, ...]
    batch: dict[str, torch.Tensor]

    @property
    def batch_size(self) -> int:
        return int(next(iter(self.batch.values())).shape[0])

    @property
    def length(self) -> int:
        """Positions of one example (the batch tensors are (B, L))."""
        return int(next(iter(self.batch.values())).shape[-1])


def setting_of(args: argparse.Namespace) -> tuple[str, str, tuple[str, ...]]:
    """(label, config, overrides): a study setting's (``--setting``: its name, config and overrides, the
    command's own overrides after them), else ``--config`` with the overrides (label: the config's path, and the
    overrides when there are any)."""
    if args.setting is not None:
        s = study.setting(args.setting)
        return s.name, s.config, (*s.overrides, *args.overrides)
    label = " ".join([args.config, *args.overrides])
    return label, args.config, tuple(args.overrides)


def build(config: str, overrides: tuple[str, ...], kinds: list[str]) -> tuple[dict[str, Trainee],
                                                                               dict[str, torch.Tensor]]:
    """Every kind's :class:`Trainee` and the shared batch, built as ``synthformer study`` builds its runs."""
    from synthformer.tasks import load_run_config, prepare_data, setup_model, with_kind
    from synthformer.tasks.run.data import for_run
    from synthformer.train import build_optimizer, build_scheduler

    path = Path(config) if Path(config).is_file() else ROOT / config  # a path from here, else from the root
    base = load_run_config(path, list(overrides))
    runs = {kind: with_kind(base, kind) for kind in kinds}  # an unknown kind fails here, before any data
    data = prepare_data(runs[kinds[0]], splits=("train",))
    train = data.datasets["train"]
    batch_size = int(base.train.batch_size)
    if len(train) < batch_size:
        raise ValueError(f"the training split has {len(train)} examples, fewer than train.batch_size={batch_size}")
    batch = train.collate([train[i] for i in range(batch_size)])  # each tensor (B, L)
    trainees = {}
    for kind, run in runs.items():
        setup = setup_model(run, for_run(run, data).model_config)
        model = setup.model.train()
        optimizer = build_optimizer(model, run.train)
        trainees[kind] = Trainee(kind, run, model, optimizer, build_scheduler(optimizer, run.train), setup.parameters,
                                 setup.trainable)
    return trainees, batch


def train_step(t: Trainee, batch: dict[str, torch.Tensor]) -> float:
    """One training step of ``t`` on ``batch`` (the trainer's step for one process and one micro-batch); its loss."""
    from synthformer.train.evaluation import forward_loss

    cfg = t.run.train
    loss = forward_loss(t.model, batch, bf16=cfg.bf16, device_type="cpu")
    loss.backward()
    if cfg.grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(list(t.model.parameters()), cfg.grad_clip)
    value = float(loss.detach())  # the trainer reads the step's loss before it updates
    t.optimizer.step()
    t.scheduler.step()
    t.optimizer.zero_grad(set_to_none=True)
    return value


def sample_ms(t: Trainee, batch: dict[str, torch.Tensor], warmup: int, steps: int) -> float:
    """The median time in ms of ``steps`` timed training steps after ``warmup`` untimed ones."""
    for _ in range(warmup):
        train_step(t, batch)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        train_step(t, batch)
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def rotated(kinds: list[str], round_index: int) -> list[str]:
    """The order of round ``round_index``: ``kinds`` rotated left by the round's number."""
    k = round_index % len(kinds)
    return kinds[k:] + kinds[:k]


def measure(trainees: dict[str, Trainee], batch: dict[str, torch.Tensor], rounds: int, warmup: int,
            steps: int) -> dict[str, list[float]]:
    """kind -> its sample (ms per step) of every round, in round order; a progress line per round on stderr."""
    kinds = list(trainees)
    times: dict[str, list[float]] = {kind: [] for kind in kinds}
    start = time.perf_counter()
    for r in range(rounds):
        order = rotated(kinds, r)
        for kind in order:
            times[kind].append(sample_ms(trainees[kind], batch, warmup, steps))
        print(f"# round {r + 1}/{rounds} done ({time.perf_counter() - start:.0f} s; order {' '.join(order)}; "
              f"V {times['V'][-1]:.1f} ms/step)", file=sys.stderr, flush=True)
    return times


def summarize(times: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    """Per kind: the median ms per step, steps/s and the speed relative to V (V's median over the kind's), with the
    per-round ratios (V's sample over the kind's in the same round) and their min and max."""
    v_median = statistics.median(times["V"])
    out = {}
    for kind, samples in times.items():
        median = statistics.median(samples)
        per_round = [v / k for v, k in zip(times["V"], samples, strict=True)]
        out[kind] = {"ms_per_step": median, "steps_per_second": 1000.0 / median, "round_ms": samples,
                     "speed_vs_V": v_median / median, "round_speed_vs_V": per_round,
                     "speed_vs_V_min": min(per_round), "speed_vs_V_max": max(per_round)}
    return out


def line(kind: str, row: dict[str, Any]) -> str:
    """One printed row."""
    return (f"{kind:12s} {row['ms_per_step']:9.2f} {row['steps_per_second']:9.2f}  {row['speed_vs_V']:.2f} "
            f"[{row['speed_vs_V_min']:.2f}-{row['speed_vs_V_max']:.2f}]")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="dotted overrides of the run config, as "
                   "`synthformer train` takes them (after a --setting's own)")
    p.add_argument("--config", default=None, help=f"the run config (default {DEFAULT_CONFIG})")
    p.add_argument("--setting", choices=[s.name for s in study.SETTINGS], default=None,
                   help="a setting of the study instead: its config and overrides (e.g. mqar-64x8, selective_copy)")
    p.add_argument("--kinds", default=None, help=f"comma-separated, as `synthformer study` takes them (default: "
                   f"every kind of the study, {','.join(KINDS)}); V is always measured: the unit")
    p.add_argument("--rounds", type=int, default=None, help=f"rounds, every kind once in each (default "
                   f"{FULL['rounds']}; the spread is over them)")
    p.add_argument("--warmup", type=int, default=None, help=f"untimed steps before each sample (default "
                   f"{FULL['warmup']})")
    p.add_argument("--steps", type=int, default=None, help=f"timed steps per sample, of which the median "
                   f"(default {FULL['steps']})")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1, as the study's runs)")
    p.add_argument("--smoke", action="store_true", help=f"a smoke run: {SMOKE['rounds']} rounds of "
                   f"{SMOKE['steps']} step after {SMOKE['warmup']} (given options still win); recorded only with "
                   "--record")
    p.add_argument("--record", type=Path, default=None, help=f"JSONL record (default {RECORD.relative_to(ROOT)}; "
                   "none for --smoke)")
    p.add_argument("--no-record", action="store_true", help="print only")
    p.add_argument("--shared-cpu", action="store_true", help="record that other work shared the CPU meanwhile")
    args = p.parse_args(argv)
    if args.config is not None and args.setting is not None:
        p.error("--config and --setting: give one (a setting names its own config)")
    args.config = args.config or DEFAULT_CONFIG
    for key, value in (SMOKE if args.smoke else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    for name, least in (("rounds", 1), ("steps", 1), ("warmup", 0), ("threads", 1)):
        if getattr(args, name) < least:
            p.error(f"--{name} must be at least {least}")
    given = [k.strip() for k in args.kinds.split(",") if k.strip()] if args.kinds else list(KINDS)
    args.kinds = ["V", *[k for k in dict.fromkeys(given) if k != "V"]]
    if args.record is None and not args.smoke:
        args.record = RECORD
    if args.no_record:
        args.record = None
    return args


def run(args: argparse.Namespace, command: str) -> dict[str, dict[str, Any]]:
    """Measure every kind of ``args`` (see the module docstring), print the table, append one entry per kind; at
    ``--threads`` torch threads, the process's own count restored after (a caller in this process keeps its own)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        return _run(args, command)
    finally:
        torch.set_num_threads(previous)


def _run(args: argparse.Namespace, command: str) -> dict[str, dict[str, Any]]:
    started, load_start = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"), load()
    label, config, overrides = setting_of(args)
    trainees, batch = build(config, overrides, args.kinds)
    work = Workload(label, config, overrides, batch)
    print(f"# {label}: {len(trainees)} kinds, batch {work.batch_size} x {work.length} tokens, "
          f"{torch.get_num_threads()} thread(s); {args.rounds} rounds x (median of {args.steps} steps after "
          f"{args.warmup}), the order rotated per round", flush=True)
    rows = summarize(measure(trainees, batch, args.rounds, args.warmup, args.steps))
    print("kind         ms/step   steps/s    x V [min-max over the rounds]")
    for kind, row in rows.items():
        print(line(kind, row), flush=True)
    if args.record is not None:
        meta = {**metadata(command, torch.get_num_threads(), args.shared_cpu), "load_1min": [load_start, load()]}
        for kind, row in rows.items():
            append(args.record, {"table": TABLE, "row": f"{label} {kind}", "run": started, "setting": label,
                                 "config": config, "overrides": list(overrides), "kind": kind,
                                 "smoke": bool(args.smoke), "rounds": args.rounds, "warmup": args.warmup,
                                 "steps": args.steps, "batch_size": work.batch_size, "length": work.length,
                                 "parameters": trainees[kind].parameters,
                                 "trainable": trainees[kind].trainable, **row, **meta})
        print(f"# recorded in {args.record}: {len(rows)} rows")
    return rows


def main(argv: list[str] | None = None) -> int:
    from synthformer.common import ConfigError

    args = parse_args(argv)
    command = "python " + shlex.join(["benchmarks/speed/mixing_speed.py", *(sys.argv[1:] if argv is None else argv)])
    try:
        run(args, command)
    except (ConfigError, FileNotFoundError) as err:  # a bad config, override or kind: one line, nothing recorded
        print(f"mixing_speed.py: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
