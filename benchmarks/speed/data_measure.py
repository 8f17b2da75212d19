"""The measurements of ``benchmarks/speed/data.py``: ``prepare`` and ``train`` through the real CLI in a subprocess
(wall time, peak resident memory of the process tree polled from /proc, the time to the first optimizer step), and the
loader alone in this process (examples per second of the prepared dataset + ``BatchStream``, and the share of
step time spent in ``next(stream)`` in a loop that mimics the trainer's step).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[2]
GB = 1e9


def cli(*args: str) -> list[str]:
    """The ``synthformer`` command line of this checkout (run with ``src`` first on ``PYTHONPATH``)."""
    return [sys.executable, "-m", "synthformer.cli.main", *args]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _tree_rss(proc: psutil.Process) -> int:
    """Resident bytes of ``proc`` and its descendants (DataLoader or prepare workers) now; 0 once gone."""
    total = 0
    try:
        for p in [proc, *proc.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
    except psutil.Error:
        return 0
    return total


def _hwm(pid: int) -> int:
    """VmHWM (the kernel's peak RSS) of one process in bytes; 0 when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _first_step(metrics: Path | None) -> bool:
    """True once ``metrics.jsonl`` holds a training record (a line with a ``loss``: the first step is done)."""
    if metrics is None or not metrics.is_file():
        return False
    for line in metrics.read_text(encoding="utf-8").splitlines():
        try:
            if "loss" in json.loads(line):
                return True
        except ValueError:
            continue
    return False


def watch(command: list[str], *, cap_bytes: float | None = None, metrics: Path | None = None,
          timeout_s: float | None = None, poll_s: float = 0.05, log: Path | None = None) -> dict[str, Any]:
    """Run ``command``, polling the resident memory of its process tree every ``poll_s``; stop it (the whole
    process group) once that passes ``cap_bytes`` or ``timeout_s``. Returns the wall time, the peak (the
    larger of the polled tree sum and the main process's VmHWM), the seconds to the first training record in
    ``metrics`` when given, the exit code and whether the cap was exceeded."""
    if metrics is not None and metrics.exists():
        raise FileExistsError(f"{metrics} exists before the run: it would be taken for this run's first step")
    out = open(log, "w", encoding="utf-8") if log is not None else subprocess.DEVNULL
    start = time.perf_counter()
    popen = subprocess.Popen(command, cwd=ROOT, env=_env(), stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True)
    proc = psutil.Process(popen.pid)
    peak = 0
    first_step_s = None
    exceeded = timed_out = False
    try:
        while popen.poll() is None:
            peak = max(peak, _tree_rss(proc), _hwm(popen.pid))
            if first_step_s is None and _first_step(metrics):
                first_step_s = time.perf_counter() - start
            over_time = timeout_s is not None and time.perf_counter() - start > timeout_s
            if (cap_bytes is not None and peak > cap_bytes) or over_time:
                exceeded, timed_out = not over_time, over_time
                os.killpg(popen.pid, signal.SIGKILL)
                popen.wait()
                break
            time.sleep(poll_s)
    finally:
        if popen.poll() is None:
            os.killpg(popen.pid, signal.SIGKILL)
            popen.wait()
        if log is not None:
            out.close()
    seconds = time.perf_counter() - start
    if first_step_s is None and _first_step(metrics):  # finished between two polls
        first_step_s = seconds
    return {"seconds": round(seconds, 3), "peak_rss_gb": round(peak / GB, 3), "returncode": popen.returncode,
            "exceeded_cap": exceeded, "timed_out": timed_out,
            "first_step_s": None if first_step_s is None else round(first_step_s, 3)}


def prepare_command(config: str, corpus: Path, out: Path, tokenizer: Path, workers: int) -> list[str]:
    """``synthformer prepare`` of the corpus's files with the config's task section and the shared tokenizer (its
    size, not the config's: trained on the benchmark's small corpus, it may hold fewer ids than the config asks)."""
    return cli("prepare", config, f"task.train={corpus / 'train.jsonl'}", f"task.valid={corpus / 'valid.jsonl'}",
               *source_overrides(), "task.vocab_size=null", "--out", str(out), "--tokenizer", str(tokenizer),
               "--workers", str(workers), "--overwrite", "--no-progress")


def source_overrides() -> list[str]:
    """Unset the config's own sources (a named data set, an HF source) and its size limits: the benchmark's corpus
    is read whole."""
    return ["task.data=null", "task.data_splits=null", "task.hf_name=null", "task.hf_options={}", "task.hf_splits={}",
            "task.train_limit=null", "task.eval_limit=null"]


def prepared_overrides(prepared: Path) -> list[str]:
    """Train from ``prepared`` (the config's sources and sizes unset; its vocabulary is the corpus's)."""
    return [f"task.prepared={prepared}", *source_overrides(), "task.vocab_size=null"]


def train_overrides(steps: int, extra: list[str]) -> list[str]:
    """A few steps, a training record every step, no evaluation before the end (the final one reads 2 batches)."""
    return [f"train.steps={steps}", "train.log_every=1", "train.eval_every=0", "train.eval_steps=2",
            "train.warmup_steps=1", *extra]


def train_command(config: str, run_dir: Path, data: list[str], steps: int, extra: list[str]) -> list[str]:
    """``synthformer train`` of the config on ``data`` overrides (``task.prepared=DIR`` or the corpus files)."""
    return cli("train", config, *data, *train_overrides(steps, extra), "--run-dir", str(run_dir), "--overwrite")


def step_rate(metrics: Path, batch_size: int) -> float | None:
    """Examples per second of the real run between its first and last training records (None: too few)."""
    records = []
    for line in metrics.read_text(encoding="utf-8").splitlines() if metrics.is_file() else []:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if "loss" in entry and "elapsed_s" in entry:
            records.append(entry)
    if len(records) < 2 or records[-1]["elapsed_s"] <= records[0]["elapsed_s"]:
        return None
    steps = records[-1]["step"] - records[0]["step"]
    return steps * batch_size / (records[-1]["elapsed_s"] - records[0]["elapsed_s"])


def loader_and_steps(config: str, prepared: Path, overrides: list[str], batches: int, steps: int) -> dict[str, Any]:
    """In this process, from the prepared corpus: examples per second of the training dataset + ``BatchStream``
    alone (``batches`` batches after one warm-up batch), then ``steps`` steps of a loop that mimics the trainer
    (``next(stream)``, forward, backward, AdamW step) timing ``next(stream)`` apart: the trainer does not expose
    its data-wait time, so this loop measures it. The first step is not counted (warm-up)."""
    import torch

    from synthformer.tasks import load_run_config
    from synthformer.tasks.run.data import build_task_model, prepare_data
    from synthformer.train.evaluation import forward_loss
    from synthformer.train.loader import BatchStream

    run = load_run_config(Path(config), [*prepared_overrides(prepared), *overrides])
    data = prepare_data(run, splits=("train",))
    dataset = data.datasets["train"]
    cfg = run.train

    def stream() -> BatchStream:
        return BatchStream(dataset, batch_size=cfg.batch_size, seed=cfg.seed, collate_fn=dataset.collate,
                           num_workers=cfg.num_workers)

    loader = stream()
    next(loader)
    start = time.perf_counter()
    for _ in range(batches):
        next(loader)
    loader_s = time.perf_counter() - start
    loader.close()

    model, _ = build_task_model(run, data)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    loop = stream()
    wait = total = 0.0
    for k in range(steps + 1):
        t0 = time.perf_counter()
        batch = next(loop)
        t1 = time.perf_counter()
        loss = forward_loss(model, batch, bf16=False, device_type="cpu")
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        t2 = time.perf_counter()
        if k > 0:
            wait += t1 - t0
            total += t2 - t0
    loop.close()
    return {
        "examples": len(dataset), "batch_size": cfg.batch_size, "num_workers": cfg.num_workers,
        "loader_batches": batches, "loader_examples_per_s": round(batches * cfg.batch_size / loader_s, 1),
        "loop_steps": steps, "loop_examples_per_s": round(steps * cfg.batch_size / total, 2),
        "data_wait_share": round(wait / total, 5), "data_wait_ms_per_step": round(1000 * wait / steps, 3),
        "threads": torch.get_num_threads(),
    }  # fmt: skip
