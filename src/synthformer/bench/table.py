"""``run_table``: the paper's Table 4 (parameters, FLOPs, training speed) measured on this machine.

Every row is the same preset with only its self-attention token mixer swapped (see :mod:`.rows`). All rows are
built first; then one training step per row initializes the optimizer state, FLOPs and peak memory are measured
on one further step each, and the timed steps run round-robin over the rows (warm-up rounds first), so a burst
of background load slows every row alike instead of one. Speeds are medians over the repeats and are also given
as ratios to the Transformer of the same run, the only numbers comparable across machines.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import os
import platform
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from synthformer.models import ModelConfig, build_model, get_preset, num_parameters

from .measure import DTYPES, TrainStep, batch_tokens, peak_bytes, random_batch, round_robin
from .rows import Row, conv_kernel_sizes, resolve_rows, row_config

__all__ = [
    "COLUMNS",
    "bench_config",
    "describe_run",
    "machine_info",
    "run_table",
    "to_csv",
    "to_markdown",
    "write_outputs",
]

logger = logging.getLogger(__name__)

MIB = 2**20

#: Fields the benchmark sets itself; an override of them would be silently replaced, so it is refused.
_RESERVED = ("vocab_size", "encoder_kind", "decoder_kind", "encoder_kind_options", "decoder_kind_options")

#: CSV columns, in order (every key of a result row).
COLUMNS: tuple[str, ...] = (
    "model",
    "kind",
    "params",
    "flops_per_step",
    "flop_ratio",
    "steps_per_s",
    "steps_per_s_ratio",
    "efficiency",
    "tokens_per_s",
    "tokens_per_s_ratio",
    "step_ms",
    "step_ms_min",
    "step_ms_max",
    "peak_mib",
    "step_peak_mib",
    "resident_mib",
    "paper_steps_per_s_ratio",
    "kernel_sizes",
    "preset",
    "arch",
    "n_layers",
    "d_model",
    "batch_size",
    "seq_len",
    "tokens_per_step",
    "vocab_size",
    "dtype",
    "steps",
    "repeats",
    "warmup",
    "threads",
)


def bench_config(
    preset: str, vocab_size: int = 8000, seq_len: int | None = None, overrides: dict[str, Any] | None = None
) -> ModelConfig:
    """The preset the rows are built from: ``preset`` with ``overrides`` (any :class:`ModelConfig` field but the
    vocabulary and the mixer kinds), ``vocab_size``, and ``max_len = seq_len`` (default: the preset's max_len).

    The models are sized for exactly the benchmarked length, as a model trained at that length would be; this
    matters for the length-dependent parameters of ``R`` (``l^2`` per head) and ``D`` (``d l``).

    Raises:
        ValueError: unknown preset or field, a reserved field in ``overrides``, or an invalid value.
    """
    overrides = dict(overrides or {})
    reserved = sorted(set(overrides) & set(_RESERVED))
    if reserved:
        raise ValueError(
            f"override(s) {reserved} are set by the benchmark itself (vocab_size by its own argument, the mixer "
            f"kinds by the rows)"
        )
    base = get_preset(preset).to_dict()
    # the model's own check would blame its special ids ("bos_id must be ... in [0, 1)"), not the --vocab-size
    need = max(base["pad_id"], base["bos_id"], base["eos_id"]) + 1
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < need:
        raise ValueError(f"vocab_size must be an integer >= {need} (the preset's special ids), got {vocab_size!r}")
    config = ModelConfig.from_dict({**base, **overrides, "vocab_size": vocab_size})
    if seq_len is None:
        seq_len = config.max_len
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 1:
        raise ValueError(f"seq_len must be a positive integer, got {seq_len!r}")
    return ModelConfig.from_dict({**config.to_dict(), "max_len": seq_len})


def _positive(name: str, value: Any, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


class _Candidate:
    """A row being measured: its model, its training step and the numbers collected so far."""

    def __init__(
        self, row: Row, config: ModelConfig, batch_size: int, seed: int, autocast_dtype: torch.dtype | None,
        device: torch.device,
    ) -> None:
        self.row = row
        self.config = row_config(config, row)
        torch.manual_seed(seed)  # same initialization stream for every row (built on the CPU, then moved)
        self.model = build_model(self.config).to(device)
        batch = random_batch(self.config, batch_size, config.max_len, seed=seed)
        self.batch = {key: value.to(device) for key, value in batch.items()}
        self.step = TrainStep(self.model, self.batch, autocast_dtype)
        self.times: list[float] = []


def run_table(
    preset: str = "lm-base",
    rows: Sequence[str] | None = None,
    batch_size: int = 8,
    seq_len: int | None = None,
    vocab_size: int = 8000,
    steps: int = 2,
    warmup: int = 2,
    repeats: int = 5,
    dtype: str = "fp32",
    overrides: dict[str, Any] | None = None,
    memory: bool = True,
    seed: int = 0,
    progress: bool = False,
    threads: int | None = None,
    device: str | torch.device = "cpu",
) -> list[dict[str, Any]]:
    """Measure the paper's Table 4 for ``preset`` on this machine.

    Args:
        preset: a model preset (:func:`synthformer.models.list_presets`); decoder presets (``lm-*``, ``mt-*``)
            get Table 4's rows, encoder presets (``cls-*``) also the factorized models of Table 7.
        rows: row names (paper names, ``"Syn (R)"``, or mixer kinds such as ``"R+V"``); None for the default
            rows. The Transformer is always measured (first): speeds are reported as ratios to it.
        batch_size: sequences per training step.
        seq_len: tokens per sequence; None uses the preset's ``max_len``. Models are built with
            ``max_len = seq_len``.
        vocab_size: vocabulary of every model (the presets' 32k is a placeholder).
        steps: training steps per timed sample (one sample = ``steps`` consecutive steps, divided by ``steps``).
        warmup: untimed warm-up rounds (one step per row per round) after the first step, before timing.
        repeats: timed samples per row; the reported speed is their median.
        dtype: ``"fp32"`` or ``"bf16"`` (CPU autocast for forward and backward; parameters stay fp32).
        overrides: :class:`ModelConfig` fields changed in the preset before building (e.g. ``{"n_layers": 1}``).
        memory: measure the peak memory of a step with the profiler (slow for large models; NaN when off).
        seed: seed of the initialization of every model and of the random batch.
        progress: show a tqdm progress bar (stderr).
        threads: torch intra-op threads for the run (restored afterwards); None keeps the current setting. On a
            machine shared with other jobs, fewer threads than cores avoids the threads waiting on each other
            whenever another process holds a core.
        device: where the models train (``"cuda"`` on a GPU: autocast on that device, each timed step waited
            for, peak memory from the CUDA allocator).

    Returns:
        One dict per row with the keys of :data:`COLUMNS`: ``params`` (trainable, as ``num_parameters``),
        ``flops_per_step`` (forward + backward, FlopCounterMode), ``steps_per_s`` / ``tokens_per_s`` (medians)
        and their ``*_ratio`` to the Transformer, ``step_ms`` (median, min, max), ``peak_mib`` (resident
        parameters and optimizer state plus the high-water mark of one step), ``paper_steps_per_s_ratio``
        (the paper's ratio, for reference), and the settings of the run.

    Raises:
        ValueError: unknown preset, row or option; an encoder-only row (Linformer) on a decoder preset.
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    _positive("batch_size", batch_size)
    _positive("vocab_size", vocab_size, minimum=2)
    _positive("steps", steps)
    _positive("repeats", repeats)
    _positive("warmup", warmup, minimum=0)
    if threads is not None:
        _positive("threads", threads)
    config = bench_config(preset, vocab_size, seq_len, overrides)
    selected = resolve_rows(list(rows) if rows is not None else None, config, preset)
    autocast_dtype = DTYPES[dtype]
    device = torch.device(device)

    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _measure(
            preset, config, selected, batch_size, steps, warmup, repeats, autocast_dtype, memory, seed, progress,
            device,
        )
    finally:
        torch.set_num_threads(previous_threads)


def _measure(
    preset: str,
    config: ModelConfig,
    selected: list[Row],
    batch_size: int,
    steps: int,
    warmup: int,
    repeats: int,
    autocast_dtype: torch.dtype | None,
    memory: bool,
    seed: int,
    progress: bool,
    device: torch.device,
) -> list[dict[str, Any]]:
    """Build the rows, measure them (in the order of the module docstring), and assemble the result rows."""
    seq_len = config.max_len
    candidates = [_Candidate(row, config, batch_size, seed, autocast_dtype, device) for row in selected]
    for c in candidates:
        logger.info("%s: %s, %d parameters", c.row.name, c.row.kind, num_parameters(c.model))

    per_row_steps = 1 + 1 + int(memory) + warmup + repeats * steps  # first step, FLOPs, memory, warm-up, timed
    bar = tqdm(total=per_row_steps * len(candidates), desc="bench", unit="step", disable=not progress)
    try:
        flops: dict[str, int] = {}
        resident: dict[str, int] = {}
        step_peak: dict[str, float] = {}
        for c in candidates:
            bar.set_postfix_str(f"{c.row.name}: first step, FLOPs, memory")
            c.step()  # allocates AdamW's moments, so the measured steps below start from the steady state
            bar.update(1)
            flops[c.row.name] = c.step.count_flops()
            bar.update(1)
            resident[c.row.name] = c.step.resident_bytes()
            if memory:
                step_peak[c.row.name] = float(peak_bytes(c.step, device))
                bar.update(1)

        def tick(phase: str, n: int) -> None:
            bar.set_postfix_str(phase)
            bar.update(n)

        # round-robin: each repeat times every row once, so load that comes and goes hits all rows alike
        for c, times in zip(candidates, round_robin([c.step for c in candidates], warmup, repeats, steps, tick),
                            strict=True):
            c.times = times
    finally:
        bar.close()

    base = candidates[0]  # resolve_rows puts the Transformer first
    base_step = statistics.median(base.times)
    results: list[dict[str, Any]] = []
    for c in candidates:
        step_s = statistics.median(c.times)
        tokens = batch_tokens(c.batch)
        name = c.row.name
        peak = step_peak.get(name, math.nan)
        results.append(
            {
                "model": name,
                "kind": c.row.kind,
                "params": num_parameters(c.model),
                "flops_per_step": flops[name],
                # the steps/s ratio at the Transformer's efficiency: its FLOPs per step over this row's (counted)
                "flop_ratio": flops[base.row.name] / flops[name] if flops[name] else math.nan,
                "steps_per_s": 1.0 / step_s,
                "steps_per_s_ratio": base_step / step_s,
                "efficiency": (base_step / step_s) / (flops[base.row.name] / flops[name]) if flops[name] else math.nan,
                "tokens_per_s": tokens / step_s,
                "tokens_per_s_ratio": (tokens / step_s) / (batch_tokens(base.batch) / base_step),
                "step_ms": step_s * 1e3,
                "step_ms_min": min(c.times) * 1e3,
                "step_ms_max": max(c.times) * 1e3,
                "peak_mib": (resident[name] + peak) / MIB,
                "step_peak_mib": peak / MIB,
                "resident_mib": resident[name] / MIB,
                "paper_steps_per_s_ratio": c.row.paper_speed_ratio,
                "kernel_sizes": "-".join(map(str, conv_kernel_sizes(config.n_layers))) if c.row.conv else "",
                "preset": preset,
                "arch": config.arch,
                "n_layers": config.n_layers,
                "d_model": config.d_model,
                "batch_size": batch_size,
                "seq_len": seq_len,
                "tokens_per_step": tokens,
                "vocab_size": config.vocab_size,
                "dtype": "bf16" if autocast_dtype is not None else "fp32",
                "steps": steps,
                "repeats": repeats,
                "warmup": warmup,
                "threads": torch.get_num_threads(),
            }
        )
        logger.info(
            "%s: %.3g steps/s (x%.2f of the Transformer), %.3g FLOPs/step",
            name,
            1.0 / step_s,
            base_step / step_s,
            flops[name],
        )
    return results


# --------------------------------------------------------------------------- reporting
def machine_info() -> dict[str, str]:
    """Processor, CPU and thread counts, torch and Python versions, OS: what a speed depends on."""
    processor = platform.processor() or platform.machine()
    try:
        # platform.processor() is often empty or just "x86_64" on Linux; cpuinfo has the model name
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    processor = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "processor": processor,
        "cpus": str(os.cpu_count()),
        "torch_threads": str(torch.get_num_threads()),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "os": platform.platform(),
    }


def _human(n: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f}{unit}"
    return str(int(n))


def _ratio(value: float | None) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.2f}"


#: Markdown columns: header -> how a result row is shown.
_MD_COLUMNS: tuple[tuple[str, Any], ...] = (
    ("Model", lambda r: r["model"] + (f" (K={r['kernel_sizes']})" if r["kernel_sizes"] else "")),
    ("Params", lambda r: _human(r["params"])),
    ("FLOPs/step", lambda r: f"{r['flops_per_step']:.2e}"),
    ("Steps/s", lambda r: f"{r['steps_per_s']:.3g}"),
    ("Steps/s vs Transformer", lambda r: _ratio(r["steps_per_s_ratio"])),
    ("FLOP ratio", lambda r: _ratio(r["flop_ratio"])),
    ("Efficiency", lambda r: _ratio(r["efficiency"])),
    ("Tokens/s", lambda r: f"{r['tokens_per_s']:,.0f}"),
    ("Tokens/s vs Transformer", lambda r: _ratio(r["tokens_per_s_ratio"])),
    ("Peak MiB", lambda r: "" if math.isnan(r["peak_mib"]) else f"{r['peak_mib']:,.1f}"),
    ("Paper steps/s vs Transformer", lambda r: _ratio(r["paper_steps_per_s_ratio"])),
)


def to_markdown(results: Sequence[dict[str, Any]]) -> str:
    """The results as a Markdown table in the form of the paper's Table 4 (one line per model)."""
    headers = [h for h, _ in _MD_COLUMNS]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(["---"] + ["---:"] * (len(headers) - 1)) + "|"]
    for r in results:
        lines.append("| " + " | ".join(fmt(r) for _, fmt in _MD_COLUMNS) + " |")
    return "\n".join(lines)


def to_csv(results: Sequence[dict[str, Any]]) -> str:
    """The results as CSV with the columns of :data:`COLUMNS` (plain numbers, full precision)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    for r in results:
        writer.writerow({k: ("" if r[k] is None else r[k]) for k in COLUMNS})
    return buffer.getvalue()


def describe_run(results: Sequence[dict[str, Any]], command: str | None = None) -> str:
    """The lines printed above the table: machine, settings, command line, and how each column is measured."""
    info = machine_info()
    first = results[0]
    lines = [
        f"Synthesizer Table 4 regenerated: preset {first['preset']} (arch {first['arch']}, {first['n_layers']} "
        f"layers, d_model {first['d_model']})",
        f"machine: {info['processor']}; {info['cpus']} CPUs, {first['threads']} torch threads; torch "
        f"{info['torch']}; Python {info['python']}; {info['os']}",
        f"settings: batch {first['batch_size']} x length {first['seq_len']} ({first['tokens_per_step']} tokens/step), "
        f"vocab {first['vocab_size']}, {first['dtype']}; median of {first['repeats']} repeats x {first['steps']} "
        f"steps after {first['warmup']} warm-up rounds, round-robin over the models",
    ]
    if command:
        lines.append(f"command: {command}")
    lines.append(
        "columns: a step = forward + backward + AdamW on random tokens; FLOPs = FlopCounterMode on forward + "
        "backward (matmuls and attention only; elementwise ops uncounted); FLOP ratio = the Transformer's FLOPs/step "
        "over the row's (its steps/s ratio at equal efficiency); Efficiency = steps/s ratio / FLOP ratio; "
        "Peak = parameters + optimizer state + "
        "the profiler's allocation high-water mark of one step; Paper = the paper's steps/s ratio (Table 4, TPU; "
        "Table 7 for FR and Linformer); K = per-layer kernel sizes"
    )
    return "\n".join(lines)


def write_outputs(
    results: Sequence[dict[str, Any]], out: str | os.PathLike[str], command: str | None = None
) -> tuple[Path, Path]:
    """Write ``<out>.md`` (the description and the Markdown table) and ``<out>.csv``; return both paths.

    A ``.md`` or ``.csv`` suffix on ``out`` is dropped first, so ``--out table4.md`` also writes ``table4.csv``.
    """
    prefix = Path(out)
    if prefix.suffix in (".md", ".csv"):
        prefix = prefix.with_suffix("")
    prefix.parent.mkdir(parents=True, exist_ok=True)
    md_path, csv_path = Path(f"{prefix}.md"), Path(f"{prefix}.csv")
    description = "\n".join(f"- {line}" for line in describe_run(results, command).splitlines())
    md_path.write_text(description + "\n\n" + to_markdown(results) + "\n", encoding="utf-8")
    csv_path.write_text(to_csv(results), encoding="utf-8")
    logger.info("wrote %s and %s", md_path, csv_path)
    return md_path, csv_path
