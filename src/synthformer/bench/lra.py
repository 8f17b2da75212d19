"""Long Range Arena's Table 2 on this machine: training steps/s and peak memory of the LRA Text classifier at
1K-4K tokens for each attention kind, relative to the vanilla Transformer (Tay et al. 2020, "Long Range Arena",
Table 2), with each kind's FLOP ratio to V as the limit its speed is compared with, and causal training against
bidirectional training of the same model.

The model is LRA Text's (``configs/lra_text.yaml``: google-research/long-range-arena's ``base_tc_config``): an
encoder classifier with 4 layers, d_model 256, 4 heads, FFN 1024, sinusoidal positions, CLS pooling and LRA's MLP
head, over the byte vocabulary, built with ``max_len`` = the measured length, on random byte batches (the task
type's ``random_batch``). Only the encoder's token mixer changes between rows (:data:`LRA_KINDS`).

A *causal* row is the same classifier with every mixer built causal (through the model's mixer factory): what a
decoder layer of that kind costs, measured in the same harness, so that causal and bidirectional training of one
kind compare directly. Linformer cannot be causal; its causal row says so.

How each number is taken (the primitives of :mod:`synthformer.bench.measure`, as ``synthformer bench``):

* a step is forward, backward and AdamW (:class:`~synthformer.bench.measure.TrainStep`); per length and
  causality, every kind's model is built, takes one step (AdamW's moments), one step under the profiler (peak
  memory: parameters and optimizer state plus the step's allocation high-water mark), then ``warmup`` untimed
  rounds and ``repeats`` timed rounds, round-robin over the kinds; the time is the median;
* speed relative to V = V's median step time / the kind's (LRA's "steps per second" ratio); memory relative to V
  = the kind's peak / V's (LRA's memory ratio);
* the FLOP-ratio limit = V's multiply-adds per step / the kind's (:func:`synthformer.bench.flops.classifier_macs`):
  the speed the kind would have at V's efficiency; "within 10%" = speed >= 0.9 x the limit;
* causal speed-up = the kind's bidirectional step time / its causal one; its limit is the bidirectional
  multiply-adds over the causal ones.

Memory guard: before building a model, its training footprint is estimated on the meta device (the
``--dry-run`` plan's trace: 16 bytes per parameter for weights, gradients and AdamW's moments, plus the
activations autograd saves, attention on its math path: an upper bound), added to the parameters and optimizer
state of the models already built for that length; a kind whose estimate exceeds the memory limit (default: 90% of
the memory available at the start) is reported as skipped with both numbers, and one whose step still fails for
lack of memory as "out of memory", instead of ending the run.

Cost: the default (batch 1, 8 kinds at 1K-4K, bidirectional and causal, each model: a first step, a profiled step,
1 warm-up and 3 timed rounds) is 6 training steps of each of 60 models (15 per length), about 45 TFLOP counted as in
:func:`~synthformer.bench.flops.classifier_macs` (causal models counted at full cost, as those that mask do):
about 20-25 minutes on the 2-core development CPU at the 30-40 GFLOP/s a training step of this model reaches
there. Batch 2 doubles it. LRA used batch 32 on TPUs; ratios, not absolute speeds, are what compare.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import math
import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm

from synthformer.attention import build_mixer, resolve_mixer, supports_causal
from synthformer.data import ByteTokenizer
from synthformer.models import ClassifierConfig, ModelConfig, build_model, num_parameters

from .flops import classifier_macs
from .measure import TrainStep, peak_bytes, random_batch, round_robin
from .plan import _formula_activations, _meta_batch, _trace
from .rows import Row, row_config
from .table import _positive

__all__ = [
    "CAUSAL_MODES",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_LENGTHS",
    "LRA_KINDS",
    "LRA_TEXT_MODEL",
    "SPEED_TOLERANCE",
    "available_bytes",
    "lra_text_config",
    "resolve_kinds",
    "run_lra_table2",
]

logger = logging.getLogger(__name__)

MIB = 2**20
#: LRA Table 2's lengths.
DEFAULT_LENGTHS: tuple[int, ...] = (1024, 2048, 3072, 4096)
#: sequences per step: LRA used 32 on TPUs; 1 keeps the whole table (bidirectional and causal) within 20-25 minutes
#: on a 2-core CPU (a step at 4K is still 4,096 tokens).
DEFAULT_BATCH_SIZE = 1
#: ``causal``: measure bidirectional and causal models, only causal ones, or only bidirectional ones.
CAUSAL_MODES: tuple[str, ...] = ("both", "only", "none")
#: the speed goal: a synthesized kind's speed at least (1 - this) x its FLOP-ratio limit.
SPEED_TOLERANCE = 0.10
#: LRA Text's model (configs/lra_text.yaml, LRA's base_tc_config); max_len is the measured length.
LRA_TEXT_MODEL: dict[str, Any] = {
    "d_model": 256, "n_heads": 4, "n_layers": 4, "d_ff": 1024, "dropout": 0.1, "attention_dropout": 0.1,
    "positions": "sinusoidal", "pooling": "cls", "head": "mlp", "num_classes": 2,
}
#: The kinds LRA's Table 2 benchmark measures, in its order: each a row of :mod:`.rows` (the paper's names and
#: options: k = 32 for FR and Linformer, as in the Synthesizer paper's encoder comparison), FD added.
LRA_KINDS: dict[str, Row] = {
    "V": Row("Transformer", "V"),
    "R": Row("Synthesizer (R)", "R"),
    "FR": Row("Synthesizer (FR)", "FR", {"k": 32}),
    "D": Row("Synthesizer (D)", "D"),
    "FD": Row("Synthesizer (FD)", "FD"),
    "R+V": Row("Synthesizer (R+V)", "R+V"),
    "D+V": Row("Synthesizer (D+V)", "D+V"),
    "Linformer": Row("Linformer", "Linformer", {"k": 32}, encoder_only=True),
}
#: Fields the harness sets itself.
_RESERVED = ("vocab_size", "max_len", "encoder_kind", "encoder_kind_options", "num_classes")


def lra_text_config(length: int, overrides: dict[str, Any] | None = None) -> ClassifierConfig:
    """LRA Text's classifier (:data:`LRA_TEXT_MODEL`, byte vocabulary) sized for ``length`` tokens, with
    ``overrides`` (any :class:`ClassifierConfig` field but the vocabulary, length, classes and mixer).

    Raises:
        ValueError: a reserved or unknown field, or an invalid value (named).
    """
    overrides = dict(overrides or {})
    reserved = sorted(set(overrides) & set(_RESERVED))
    if reserved:
        raise ValueError(f"override(s) {reserved} are set by the LRA Table 2 harness itself")
    fields = {**LRA_TEXT_MODEL, **overrides, "vocab_size": ByteTokenizer().vocab_size, "max_len": length}
    return ModelConfig.from_dict({"arch": "classifier", **fields})


def resolve_kinds(kinds: Sequence[str] | None) -> list[str]:
    """The kinds to measure, V first (every ratio is to it), duplicates dropped; None: all of :data:`LRA_KINDS`.

    Raises:
        ValueError: an unknown kind, named with the valid ones.
    """
    names = list(LRA_KINDS) if kinds is None else list(kinds)
    unknown = [k for k in names if k not in LRA_KINDS]
    if unknown:
        raise ValueError(f"unknown LRA Table 2 kind(s) {unknown}; valid kinds: {', '.join(LRA_KINDS)}")
    return list(dict.fromkeys(["V", *names]))


def _check_lengths(lengths: Sequence[int]) -> list[int]:
    if not lengths:
        raise ValueError("lengths: expected at least one length, got none")
    for n in lengths:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"length must be a positive integer (tokens per sequence), got {n!r}")
    return list(dict.fromkeys(lengths))


def available_bytes() -> int | None:
    """The memory the system can still give (``MemAvailable`` of /proc/meminfo); None where unknown."""
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _causal_factory(kind: str, d_model: int, n_heads: int, max_len: int, causal: bool = False,
                    dropout: float = 0.0, **options: Any) -> nn.Module:
    """``build_mixer`` with every mixer causal: the classifier's encoder as a decoder's self-attention."""
    return build_mixer(kind, d_model, n_heads, max_len, causal=True, dropout=dropout, **options)


#: how torch says an allocation failed (CPU: "DefaultCPUAllocator: not enough memory" / "can't allocate memory";
#: CUDA: "out of memory")
_OOM_MESSAGES = ("out of memory", "not enough memory", "can't allocate memory")


def _is_oom(err: BaseException) -> bool:
    return isinstance(err, MemoryError) or any(m in str(err).lower() for m in _OOM_MESSAGES)


@dataclass
class _Model:
    """One kind at one length and causality: its config, and once built, its model and training step."""

    kind: str
    config: ClassifierConfig
    causal: bool
    status: str = "measured"
    reason: str = ""
    estimated: float = math.nan
    step: TrainStep | None = None
    peak: float = math.nan
    resident: float = math.nan
    params: int = 0
    times: list[float] = field(default_factory=list)

    def factory(self) -> Callable[..., nn.Module]:
        return _causal_factory if self.causal else build_mixer


def _estimate(m: _Model, batch_size: int) -> tuple[int, int]:
    """(bytes a training step of ``m`` needs, bytes it keeps between steps), from a meta-device trace."""
    with torch.device("meta"):
        model = build_model(m.config, m.factory()).train()
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    batch = _meta_batch(m.config, batch_size, {"input": m.config.max_len})
    _, saved, _, how = _trace(model, batch, False)
    if how == "formula":  # a mixer without a meta kernel: the plan's formula instead
        saved = _formula_activations(model, m.config, batch, False)
    return 4 * params + saved, 3 * params  # weights, gradients, AdamW's 2 moments; weights and moments stay


def _build(m: _Model, batch_size: int, seed: int, memory: bool, device: torch.device | None = None) -> None:
    """Build ``m``'s model on ``device`` (None: the CPU), take its first step (AdamW's moments) and, with
    ``memory``, its profiled step."""
    device = torch.device("cpu") if device is None else device
    torch.manual_seed(seed)  # the same initialization stream for every kind (drawn on the CPU, then moved)
    model = build_model(m.config, m.factory()).to(device)
    m.params = num_parameters(model)
    batch = random_batch(m.config, batch_size, m.config.max_len, seed=seed)
    m.step = TrainStep(model, {key: value.to(device) for key, value in batch.items()})
    m.step()
    m.resident = float(m.step.resident_bytes())
    if memory:
        m.peak = m.resident + float(peak_bytes(m.step, device))


def _release(device: torch.device) -> None:
    """Hand freed memory back: on a GPU the caching allocator keeps it otherwise, and the next group's estimate
    (free memory) and allocations would not see it."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _group(kinds: list[str], length: int, causal: bool, overrides: dict[str, Any] | None) -> list[_Model]:
    """One :class:`_Model` per kind at ``length``; a kind that cannot be causal is marked skipped."""
    group = []
    base = lra_text_config(length, overrides)
    for kind in kinds:
        config = row_config(base, LRA_KINDS[kind])
        m = _Model(kind, config, causal)
        if causal and not supports_causal(resolve_mixer(LRA_KINDS[kind].kind)[0]):
            m.status, m.reason = "skipped", f"{kind} cannot be causal (its length projection reads every position)"
        group.append(m)
    return group


def _measure_group(group: list[_Model], batch_size: int, warmup: int, repeats: int, steps: int, memory: bool,
                   limit: int | None, seed: int, tick: Callable[[str, int], None], device: torch.device) -> None:
    """Build the group's models within the memory limit, then time them round-robin; free them afterwards."""
    kept = 0  # bytes the models built so far keep between steps
    for m in group:
        if m.status != "measured":
            continue
        need, keeps = _estimate(m, batch_size) if limit is not None else (0, 0)
        m.estimated = (kept + need) / MIB if limit is not None else math.nan
        if limit is not None and kept + need > limit:
            m.status = "skipped"
            m.reason = (f"estimated {m.estimated:,.0f} MiB (this step and the models built before it) > the memory "
                        f"limit {limit / MIB:,.0f} MiB")
            continue
        try:
            _build(m, batch_size, seed, memory, device)
        except (RuntimeError, MemoryError) as err:
            if not _is_oom(err):
                raise
            m.status, m.reason, m.step = "out of memory", f"{type(err).__name__}: {str(err)[:120]}", None
            _release(device)
            continue
        kept += keeps
        tick(f"{m.kind}: first step" + (", memory" if memory else ""), 1 + int(memory))
    live = [m for m in group if m.step is not None]
    try:
        for m, times in zip(live, round_robin([m.step for m in live], warmup, repeats, steps, tick), strict=True):
            m.times = times
    finally:
        for m in live:
            m.step = None  # free the models before the next group is built (4K: gigabytes for R's L x L)
        _release(device)


def run_lra_table2(
    kinds: Sequence[str] | None = None,
    lengths: Sequence[int] = DEFAULT_LENGTHS,
    batch_size: int = DEFAULT_BATCH_SIZE,
    causal: str = "both",
    warmup: int = 1,
    repeats: int = 3,
    steps: int = 1,
    overrides: dict[str, Any] | None = None,
    memory: bool = True,
    memory_limit: int | None = None,
    memory_guard: bool = True,
    seed: int = 0,
    progress: bool = False,
    threads: int | None = None,
    device: str | torch.device = "cpu",
) -> list[dict[str, Any]]:
    """Measure LRA's Table 2 (see the module docstring) and return one row per (length, causality, kind).

    Args:
        kinds: kinds of :data:`LRA_KINDS` (V is always measured, first); None: all eight.
        lengths: tokens per sequence (LRA: 1024, 2048, 3072, 4096).
        batch_size: sequences per training step.
        causal: ``"both"`` (bidirectional, then causal, at each length), ``"only"`` or ``"none"``.
        warmup, repeats, steps: untimed rounds, timed rounds (the median is reported), steps per timed sample.
        overrides: :class:`ClassifierConfig` fields changed in LRA Text's model (e.g. ``{"d_model": 16}``).
        memory: measure each model's peak memory (one profiled step each; NaN when off).
        memory_limit: bytes a length's models may use together; None: 90% of :func:`available_bytes` (on a GPU:
            of the device's free memory).
        memory_guard: estimate each model's footprint on the meta device first and skip those over the limit;
            False builds every model whatever it needs (no meta-device trace: tiny runs start faster).
        seed: seed of every model's initialization and of the random batch.
        progress: a tqdm progress bar on stderr.
        threads: torch threads for the run (restored afterwards); None keeps torch's.
        device: where the models train (``"cuda"`` on a GPU: each timed step waited for, peak memory from the
            CUDA allocator).

    Returns:
        dicts with ``kind``, ``model``, ``L``, ``causal``, ``status`` (``measured``, ``skipped``, ``out of
        memory``) and ``reason``, ``params``, ``macs`` (forward multiply-adds per step), ``speed_limit``,
        ``step_ms`` (median, with ``step_ms_min`` / ``step_ms_max``), ``steps_per_s``, ``speed_vs_V``,
        ``efficiency`` (speed / limit), ``within_10pct``, ``peak_mib``, ``memory_vs_V``, ``estimated_mib``, on
        causal rows ``causal_speedup`` and ``causal_limit``, and the settings.

    Raises:
        ValueError: an unknown kind or causal mode, a length or count < 1, a bad override (each named).
    """
    names = resolve_kinds(kinds)
    lengths = _check_lengths(lengths)
    if causal not in CAUSAL_MODES:
        raise ValueError(f"causal must be one of {', '.join(CAUSAL_MODES)}, got {causal!r}")
    for name, value, least in (("batch_size", batch_size, 1), ("warmup", warmup, 0), ("repeats", repeats, 1),
                               ("steps", steps, 1)):
        _positive(name, value, least)
    lra_text_config(lengths[0], overrides)  # a bad override fails now, not after the first length
    device = torch.device(device)
    if not memory_guard:
        memory_limit = None
    elif memory_limit is None:
        free = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else available_bytes()
        memory_limit = None if free is None else int(0.9 * free)
    modes = {"both": (False, True), "only": (True,), "none": (False,)}[causal]
    groups = [_group(names, n, c, overrides) for n in lengths for c in modes]
    total = sum((1 + int(memory) + warmup + repeats * steps) for g in groups for m in g if m.status == "measured")
    bar = tqdm(total=total, desc="LRA Table 2", unit="step", disable=not progress)

    def tick(phase: str, n: int) -> None:
        bar.set_postfix_str(phase)
        bar.update(n)

    previous = torch.get_num_threads()
    if threads is not None:
        _positive("threads", threads)
        torch.set_num_threads(threads)
    try:
        for g in groups:
            _measure_group(g, batch_size, warmup, repeats, steps, memory, memory_limit, seed, tick, device)
        settings = {"batch_size": batch_size, "warmup": warmup, "repeats": repeats, "steps": steps,
                    "threads": torch.get_num_threads(), "memory_limit_mib": None if memory_limit is None
                    else memory_limit / MIB}
    finally:
        torch.set_num_threads(previous)
        bar.close()
    return _rows([m for g in groups for m in g], batch_size, settings)


def _rows(models: list[_Model], batch_size: int, settings: dict[str, Any]) -> list[dict[str, Any]]:
    """The result rows: each model's numbers and its ratios to V (same length and causality) and, causal, to its
    own bidirectional row."""
    by = {(m.kind, m.config.max_len, m.causal): m for m in models}
    rows = []
    for m in models:
        length = m.config.max_len
        macs = _macs(m, batch_size)
        v = by.get(("V", length, m.causal))
        v_macs = _macs(v, batch_size) if v is not None else math.nan
        ms = statistics.median(m.times) * 1e3 if m.times else math.nan
        v_ms = statistics.median(v.times) * 1e3 if v is not None and v.times else math.nan
        limit = v_macs / macs
        speed = v_ms / ms
        row = {"kind": m.kind, "model": LRA_KINDS[m.kind].name, "L": length, "causal": m.causal, "status": m.status,
               "reason": m.reason, "params": m.params, "macs": macs, "speed_limit": limit, "step_ms": ms,
               "step_ms_min": min(m.times) * 1e3 if m.times else math.nan,
               "step_ms_max": max(m.times) * 1e3 if m.times else math.nan,
               "steps_per_s": 1e3 / ms, "speed_vs_V": speed, "efficiency": speed / limit,
               "within_10pct": None if math.isnan(speed) else speed >= (1 - SPEED_TOLERANCE) * limit,
               "peak_mib": m.peak / MIB, "memory_vs_V": m.peak / v.peak if v is not None else math.nan,
               "estimated_mib": m.estimated, "d_model": m.config.d_model, "n_layers": m.config.n_layers,
               "n_heads": m.config.n_heads, **settings}
        if m.causal:
            bidir = by.get((m.kind, length, False))
            bidir_ms = statistics.median(bidir.times) * 1e3 if bidir is not None and bidir.times else math.nan
            row["causal_speedup"] = bidir_ms / ms
            row["causal_limit"] = _macs(dataclasses.replace(m, causal=False), batch_size) / macs
        rows.append(row)
    return rows


def _macs(m: _Model, batch_size: int) -> float:
    """Forward multiply-adds of a step of ``m`` (NaN where it has no count: Linformer, causal)."""
    try:
        return float(classifier_macs(m.config, batch_size, m.config.max_len, causal=m.causal))
    except ValueError:
        return math.nan
