"""``synthformer train CONFIG [key=value ...]``: train a model described by a YAML run config."""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

from ._common import HelpFormatter, add_common_options, format_metrics, warn_if_busy

__all__ = ["continue_command", "register", "run"]

logger = logging.getLogger(__name__)

_EPILOG = """\
examples:
  synthformer train configs/lm_tiny_shakespeare.yaml
  synthformer train configs/lm_tiny_shakespeare.yaml model.decoder_kind=R+V train.steps=500 --run-dir runs/rv
  synthformer train configs/algorithmic_reverse.yaml train.lr=3e-4 model.n_layers=2
  synthformer train configs/listops.yaml --run-dir runs/listops --resume      # continue a stopped run
  synthformer train configs/listops.yaml --run-dir runs/listops --overwrite   # start it over

Overrides are dotted keys of the config (task.*, model.*, train.*, eval.*) with YAML values:
  train.lr=3e-4  train.bf16=true  model.decoder_kind=D  eval.metrics=[loss,bleu]  task.train=my.txt

Ctrl-C stops at the end of the current step and saves a checkpoint; --resume continues exactly from it.
SIGTERM and SIGUSR1 (a batch system's preemption notice) do the same and exit with status 75, which a job script
requeues on (docs/distributed.md, "SLURM"). A step whose loss or gradients are not finite, or whose loss spikes
far above its recent range (train.spike_factor), stops the run (train.nonfinite=skip drops it instead); so does a
loss that climbs slowly to 3 times the untrained model's (train.divergence_factor), and rotation keeps the
checkpoint whose weights computed the best loss; train.keep_best=METRIC keeps the best checkpoint by a metric too.
A larger train.steps with --resume extends a finished run.

Plan a long run first: --dry-run prints the parameters, tokens and FLOPs per step, the peak memory per process
beside this machine's and the data plan without training or reading the data; an input not there yet (a data file,
a prepared folder, an init_from run) is a "missing:" line saying what makes it, and the plan goes on (exit status
0); a problem that would stop the run otherwise ends it with exit status 2:
  synthformer train configs/t5_base_pretrain_c4.yaml --dry-run --processes 8
A run whose planned peak memory is over this machine's (RAM, or the GPU's) refuses to start; --no-memory-check
starts it anyway.
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``train`` verb."""
    p = sub.add_parser(
        "train", help="train a model from a YAML run config", formatter_class=HelpFormatter, epilog=_EPILOG,
        description="Train the model a run config describes: build the tokenizer on the training split, the "
                    "datasets and the model, then train with periodic evaluation and checkpoints into the run "
                    "directory.",
    )
    p.add_argument("config", metavar="CONFIG", help="YAML run config (see configs/)")
    p.add_argument("overrides", metavar="KEY=VALUE", nargs="*", help="dotted config overrides, e.g. train.lr=3e-4")
    p.add_argument("--run-dir", metavar="DIR", help="run directory (default: runs/<config file name>)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true", help="continue the run in --run-dir from its last checkpoint")
    mode.add_argument("--overwrite", action="store_true",
                      help="delete an earlier run in --run-dir (checkpoints, metrics, tokenizer) and start over")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (default: shown on a terminal)")
    plan = p.add_argument_group("planning")
    plan.add_argument("--dry-run", action="store_true",
                      help="print the run's plan (parameters, tokens and FLOPs per step, memory per process, data) "
                           "without training, reading or tokenizing the data; the model is built on the meta device")
    plan.add_argument("--json", action="store_true", help="with --dry-run: print the plan as JSON")
    plan.add_argument("--processes", type=int, metavar="N", default=None,
                      help="with --dry-run: plan for N processes (default: $WORLD_SIZE, else 1)")
    plan.add_argument("--no-memory-check", action="store_true",
                      help="start even when the plan's peak memory (see --dry-run) is over this machine's memory")
    add_common_options(p)
    p.set_defaults(handler=run, default_log_level=logging.INFO)


def run(args: argparse.Namespace) -> int:
    """Train; print where the run is and its final metrics."""
    from synthformer.common import ConfigError
    from synthformer.tasks import load_run_config, train_run
    from synthformer.train import EXIT_PREEMPTED, Preempted

    config_path = Path(args.config)
    overrides = list(args.overrides)
    run_config = load_run_config(config_path, overrides)
    run_dir = Path(args.run_dir) if args.run_dir else Path("runs") / config_path.stem
    if args.dry_run:
        return _dry_run(args, run_config, config_path, run_dir)
    if args.json or args.processes is not None:
        raise ConfigError("--json and --processes go with --dry-run")
    if not args.no_memory_check:
        _check_memory(run_config, config_path, run_dir)
    # Shown if Ctrl-C stops the run: the exact command that continues it.
    command = continue_command(["train", str(config_path), *overrides, "--run-dir", str(run_dir), "--resume"])
    args.interrupt_hint = f"a checkpoint was saved; continue with: {command}"
    progress = not args.no_progress and sys.stderr.isatty()
    warn_if_busy()
    try:
        result = train_run(run_config, run_dir, resume=args.resume, overwrite=args.overwrite, progress=progress)
    except Preempted as stop:  # SIGTERM / SIGUSR1: saved; a distinct status for the job script to requeue on
        if int(os.environ.get("RANK", "0")) == 0:
            print(f"synthformer train: {stop}; continue with: {command}", file=sys.stderr)
        return EXIT_PREEMPTED
    if int(os.environ.get("RANK", "0")) != 0:
        return 0  # under torchrun the main process reports
    print(f"run directory: {run_dir}")
    print(f"model: {result.model_config.arch}, {result.parameters:,} trainable parameters")
    for line in result.data_summary:
        print(f"data: {line}")
    train_loss = result.metrics.get("loss")
    loss = f", last train loss {train_loss:.4f}" if isinstance(train_loss, float) else ""
    print(f"trained {result.steps} steps{loss}, {result.tokens_per_second:,.0f} tokens/s, "
          f"{result.wall_seconds:.1f} s")
    evals = {k[len("eval_"):]: v for k, v in result.metrics.items() if k.startswith("eval_")}
    if evals:
        print(f"evaluation ({run_config.eval.split}):")
        for line in format_metrics(evals, prefix="  "):
            print(line)
    print(f"next: synthformer eval {shlex.quote(str(run_dir))}   |   synthformer generate {shlex.quote(str(run_dir))} "
          "--prompt TEXT")
    return 0


def continue_command(argv: list[str], env: Mapping[str, str] | None = None) -> str:
    """The command line that runs ``synthformer ARGV`` the way this process was launched: plain ``synthformer``, or,
    under ``torchrun`` (``WORLD_SIZE`` above 1), torchrun with this launch's processes per machine. A process cannot
    see the rendezvous options of a launch over several machines: they are left as a placeholder."""
    env = os.environ if env is None else env
    world = int(env.get("WORLD_SIZE") or 1)
    if world <= 1:
        return shlex.join(["synthformer", *argv])
    per_machine = int(env.get("LOCAL_WORLD_SIZE") or world)
    machines = max(world // per_machine, 1)
    module = shlex.join(["-m", "synthformer.cli.main", *argv])
    if machines == 1:
        return f"torchrun --standalone --nproc_per_node {per_machine} {module}"
    return (f"torchrun --nnodes {machines} --nproc_per_node {per_machine} <the launch's --rdzv-* options> {module} "
            "(on each machine)")


def _dry_run(args: argparse.Namespace, run_config: object, config_path: Path, run_dir: Path) -> int:
    """Print the plan (:func:`synthformer.bench.plan.plan_run`); a problem the run would stop on ends it with a
    one-line error, an input that is not there yet is a line of the plan (a dry run plans the run to come)."""
    from synthformer.bench import fit_report, format_plan, machine_memory, plan_run
    from synthformer.common import ConfigError

    processes = args.processes if args.processes is not None else int(os.environ.get("WORLD_SIZE", "1"))
    if processes < 1:
        raise ConfigError(f"--processes: expected an integer >= 1, got {processes}")
    plan = plan_run(run_config, config=str(config_path), processes=processes, run_dir=run_dir)  # type: ignore[arg-type]
    plan.machine, warning = fit_report(plan.memory["total"], _local_processes(processes), machine_memory())
    if warning:
        plan.warnings.append(warning)
    if args.json:
        print(json.dumps(plan.to_dict(), indent=1))
    else:
        for line in format_plan(plan):
            print(line)
    if plan.errors:
        more = f" (and {len(plan.errors) - 1} more above)" if len(plan.errors) > 1 else ""
        raise ConfigError(f"the run would fail: {plan.errors[0]}{more}")
    return 0


#: The environment variable that, set to ``off``, skips the memory check before a real run (:func:`_check_memory`).
MEMORY_CHECK_ENV = "SYNTHFORMER_MEMORY_CHECK"

#: The most positions of a micro-batch that a real run plans before it starts (ListOps at LRA's sizes: 64,032).
_TRACE_LIMIT = 2**21


def _local_processes(processes: int) -> int:
    """The processes that would run on this machine: torchrun's ``LOCAL_WORLD_SIZE``, else all ``processes``."""
    return int(os.environ.get("LOCAL_WORLD_SIZE") or processes)


def _check_memory(run_config: object, config_path: Path, run_dir: Path) -> None:
    """Refuse (ConfigError: exit status 2, one line) a run whose planned peak memory is over this machine's.

    The plan is the dry run's (the model on the meta device: seconds at LRA's sizes). A config the planner cannot
    read is left to the run itself, which reports its own error, and so is a micro-batch of more than
    :data:`_TRACE_LIMIT` positions, whose trace would take long: such lengths are most often a mistake that the
    data checks name better (``task.max_len`` beyond the data); ``--dry-run`` plans it all the same.

    ``SYNTHFORMER_MEMORY_CHECK=off`` in the environment skips the check as ``--no-memory-check`` does (unset, or
    any other value: the check runs). It is for the test suite, whose thousand tiny runs are far below any
    machine's memory and would each pay the plan (a tenth of a second); the suite's memory-check tests unset it.
    """
    if os.environ.get(MEMORY_CHECK_ENV) == "off":
        return
    from synthformer.bench import machine_memory, micro_batch_tokens, over_memory, plan_run
    from synthformer.common import ConfigError

    processes = int(os.environ.get("WORLD_SIZE") or 1)
    try:
        tokens = micro_batch_tokens(run_config)  # type: ignore[arg-type]
        if tokens > _TRACE_LIMIT:
            logger.info("no memory check: a micro-batch of %s positions is more than the check traces "
                        "(synthformer train CONFIG --dry-run plans it)", f"{tokens:,}")
            return
        plan = plan_run(run_config, config=str(config_path), processes=processes,  # type: ignore[arg-type]
                        run_dir=run_dir)
    except Exception as err:  # noqa: BLE001 - the memory check never stops a run the planner cannot plan
        logger.debug("no memory check: the run could not be planned (%s)", err)
        return
    why = over_memory(plan.memory["total"], _local_processes(processes), machine_memory())
    if why:
        raise ConfigError(why)
