"""``synthformer train CONFIG --dry-run``: what a run would cost, from its config alone, before a days-long run.

:func:`plan_run` takes the run's own setup steps (:mod:`synthformer.tasks.run.setup`: the tokenizer it keeps, the
model config, the model with ``init_from`` checked and ``train.freeze`` frozen, the optimizer's parameters), the
model built on PyTorch's ``meta`` device (shapes only: no memory for the weights, nothing computed), and reports the
parameters, the tokens of an optimizer step, the FLOPs of a step (counted by
:func:`~synthformer.bench.measure.count_flops`, the counter of ``synthformer bench``, over one forward and backward
pass of a micro-batch on the meta device), the memory a process needs to train, the data plan (:mod:`.plan_data`)
and the problems it can see: inputs not there yet (missing, with what makes them) and what the run would stop on
(errors). Nothing is read from the corpus and nothing is tokenized.

Memory per process (the formula :data:`MEMORY_FORMULA` states, printed under the plan):

* weights: 4 bytes per parameter (fp32; ``train.bf16`` autocasts the computation, not the weights);
* gradients: 4 bytes per trainable parameter;
* optimizer state: AdamW two fp32 moments (8 bytes per trainable parameter); Adafactor (torch's, factored) a
  row and a column vector of 4-byte values per matrix and a full vector per 1-D parameter;
* weights, gradients and optimizer state divided by the processes under ``train.distributed: fsdp``;
* activations: the bytes of the tensors autograd keeps for the backward pass of one micro-batch, traced on the
  meta device (each tensor once, parameters excluded, bf16 where autocast computes in bf16: ``torch.autocast``
  does not act on meta tensors, so :class:`_MetaAutocast` casts the inputs of the ops it would run in bf16; where
  that trace fails, an fp32 trace, said so). Attention is traced on its math path, which keeps the L x L
  probabilities for backward; fused kernels (flash attention on CPU and GPU) keep less, so for dot-product
  attention the number is an upper bound (measured on this CPU: t5-cpu-small at 4 x 128, 21.5 MiB planned against
  18.6 MiB saved by a real fp32 step).
  Where the model cannot run on the meta device, the formula of Korthikanti et al. (2022) per layer,
  ``tokens x (34 d + 5 h L)`` bytes in 16-bit (twice that in fp32), and the FLOPs as ``6 x parameters x tokens``;
  the plan says which.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from synthformer.models import DEFAULT_VARIANT, ModelConfig
from synthformer.tasks import RunConfig, example_lengths, optimizer_parameters, resolve_model_config, setup_model

from .measure import count_flops, random_batch
from .plan_data import DataPlan, Problems, format_bytes, plan_data, plan_inputs

__all__ = ["MEMORY_FORMULA", "RunPlan", "format_plan", "micro_batch_tokens", "plan_run"]

logger = logging.getLogger(__name__)

MEMORY_FORMULA = (
    "memory per process = weights (4 B x parameters) + gradients (4 B x trainable) + optimizer state (AdamW: "
    "8 B x trainable; Adafactor: 4 B x (rows + columns) per matrix, 4 B per vector entry), these three divided by "
    "the processes under fsdp, + activations: the bytes autograd keeps for backward over one micro-batch, traced "
    "on the meta device with attention on its math path (an upper bound where a fused kernel runs; else tokens x "
    "layers x (34 d + 5 heads L) B in 16-bit, x2 in fp32, Korthikanti et al. 2022). Allocator overhead and "
    "temporary buffers come on top; fsdp evaluation holds one whole copy of the weights."
)


@dataclass
class RunPlan:
    """What :func:`plan_run` found; every size in bytes, FLOPs per optimizer step over all processes."""

    config: str
    arch: str
    parameters: int
    trainable: int
    vocab_size: int
    vocab_source: str
    processes: int
    distributed: str
    batch_size: int
    grad_accum: int
    steps: int
    lengths: dict[str, int]
    tokens_per_step: dict[str, int]
    flops_per_step: float
    flops_method: str
    memory: dict[str, int]
    memory_method: str
    optimizer: str
    precision: str
    data: DataPlan
    recipe: str = ""
    """The model variant and the optimization recipe in words (optimizer, rate, schedule, frozen parts)."""
    machine: str = ""
    """The memory of the machine the run would train on beside the plan's peak (``bench.memory.fit_report``);
    empty until the command line fills it in."""
    model_config: dict[str, Any] = field(default_factory=dict)
    """The resolved model config the plan built (``ModelConfig.to_dict``): what ``model_config.json`` of the run
    would hold, at the plan's vocabulary."""
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """Problems the run would stop on (the dry run then ends with status 2)."""
    missing: list[str] = field(default_factory=list)
    """Inputs not there yet, each with what makes it (planned around; the dry run ends with status 0)."""

    @property
    def examples_per_step(self) -> int:
        """Examples of one optimizer step: ``batch_size x grad_accum x processes``."""
        return self.batch_size * self.grad_accum * self.processes

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json`` (the memory formula included)."""
        out = dataclasses.asdict(self)
        out["examples_per_step"] = self.examples_per_step
        out["total_flops"] = self.flops_per_step * self.steps
        out["memory_formula"] = MEMORY_FORMULA
        return out


def plan_run(run: RunConfig, *, config: str = "", processes: int = 1, run_dir: str | Path | None = None) -> RunPlan:
    """The plan of training ``run`` on ``processes`` processes (see the module docstring); reads no corpus.

    ``run_dir``: the run directory the run would use; a tokenizer already in it (a resumed run) is the one planned
    with, as the run would keep it.

    Raises:
        ConfigError: the model cannot be built from the config (named key), or is not ``init_from``'s.
    """
    if processes < 1:
        raise ValueError(f"processes: expected an integer >= 1, got {processes}")
    tcfg = run.train
    problems = Problems()
    inputs = plan_inputs(run, run_dir, problems)
    data, vocab = plan_data(run, processes=processes, inputs=inputs, problems=problems)
    model_config = resolve_model_config(run, vocab.size, vocab.classes, vocab.special_ids)
    setup = setup_model(run, model_config, meta=True, init_weights=inputs.init_weights)
    model = setup.model
    lengths = example_lengths(run)
    batch = _meta_batch(model_config, tcfg.batch_size, lengths)
    tokens = {name: tcfg.batch_size * tcfg.grad_accum * processes * n for name, n in lengths.items()}
    tokens["total"] = sum(tokens.values())
    micro_flops, saved, method, memory_method = _trace(model, batch, tcfg.bf16)
    if micro_flops is None:
        ids = sum(t.numel() for k, t in batch.items() if k.endswith("_ids"))
        micro_flops = 6 * setup.parameters * ids
        saved = _formula_activations(model, model_config, batch, tcfg.bf16)
    shard = processes if tcfg.distributed == "fsdp" and processes > 1 else 1
    trainable = optimizer_parameters(model, run)  # what the gradients and the optimizer state are kept for
    memory = {
        "weights": math.ceil(setup.parameters * 4 / shard),
        "gradients": math.ceil(sum(p.numel() * 4 for p in trainable) / shard),
        "optimizer": math.ceil(_optimizer_bytes(trainable, tcfg.optimizer) / shard),
        "activations": saved,
    }
    memory["total"] = sum(memory.values())
    return RunPlan(
        config=config, arch=model_config.arch, parameters=setup.parameters, trainable=setup.trainable,
        vocab_size=model_config.vocab_size, vocab_source=vocab.source,
        processes=processes, distributed=tcfg.distributed if processes > 1 else "one process",
        batch_size=tcfg.batch_size, grad_accum=tcfg.grad_accum, steps=tcfg.steps, lengths=lengths,
        tokens_per_step=tokens, flops_per_step=float(micro_flops) * tcfg.grad_accum * processes,
        flops_method=method, memory=memory, memory_method=memory_method,
        optimizer=tcfg.optimizer, precision="bf16 autocast" if tcfg.bf16 else "fp32", data=data,
        recipe=_recipe(run), model_config=model_config.to_dict(), warnings=problems.warnings,
        errors=problems.errors, missing=problems.missing,
    )


def _recipe(run: RunConfig) -> str:
    """``variant t5 (T5's layer, relative position bias); adafactor, lr 0.01, rsqrt schedule (full rate for 10,000
    steps, then 1/sqrt), ...``: what the plan's numbers do not show of how the run trains."""
    model, t = run.model, run.train
    variant = getattr(model, "variant", DEFAULT_VARIANT)
    bias = getattr(model, "position_bias", None)
    parts = [f"variant {variant}" + (f" with {bias} relative position bias" if bias not in (None, "none") else "")]
    schedule = {"rsqrt": f"rsqrt schedule (full rate for {t.warmup_steps:,} steps, then lr x sqrt(warm-up / step))",
                "inverse_sqrt": f"linear warm-up over {t.warmup_steps:,} steps then inverse-sqrt decay",
                "cosine": f"linear warm-up over {t.warmup_steps:,} steps then cosine decay to {t.min_lr:g}",
                "constant": "constant rate" + (f" after {t.warmup_steps:,} warm-up steps" if t.warmup_steps else "")}
    parts.append(f"{t.optimizer}, lr {t.lr:g}, {schedule[t.schedule]}")
    if t.freeze:
        parts.append(f"frozen: {', '.join(t.freeze)}")
    if getattr(run, "init_from", None):
        parts.append(f"from {run.init_from}")
    return "; ".join(parts)


def micro_batch_tokens(run: RunConfig) -> int:
    """Positions of one micro-batch (``train.batch_size`` x every length of an example), which the time of the
    meta trace grows with (its random batch is made on the CPU; blocked attention loops over the length)."""
    return run.train.batch_size * sum(example_lengths(run).values())


def _meta_batch(config: ModelConfig, batch_size: int, lengths: dict[str, int]) -> dict[str, Tensor]:
    """A random batch of the model contract's keys at the run's shapes, moved to the meta device."""
    batch = random_batch(config, batch_size, lengths["input"])
    if "target" in lengths and "tgt_ids" in batch:
        shape = (batch_size, lengths["target"])
        batch["tgt_ids"] = torch.ones(shape, dtype=torch.long)
        batch["labels"] = torch.ones(shape, dtype=torch.long)
    return {k: v.to("meta") for k, v in batch.items()}


def _trace(model: nn.Module, batch: dict[str, Tensor], bf16: bool) -> tuple[int | None, int, str, str]:
    """FLOPs of one forward + backward of ``batch`` and the bytes autograd saved for backward, on the meta device,
    with how each was obtained: ``(flops, bytes, "counted", "traced")``; a bf16 trace that fails (a custom
    backward that mixes the dtypes the emulated autocast left) is redone in fp32 (``"traced in fp32"``, an upper
    bound); ``(None, 0, "estimate", "formula")`` if the model cannot run on the meta device at all."""
    for emulate in (True, False) if bf16 else (False,):
        try:
            flops, saved = _traced_step(model, batch, emulate)
        except Exception as err:  # noqa: BLE001 - an op without a meta kernel, or dtypes mixed by the emulation
            logger.info("tracing the model on the meta device%s failed (%s)", " in bf16" if emulate else "", err)
            model.zero_grad(set_to_none=True)
            continue
        return flops, saved, "counted", "traced" if emulate or not bf16 else "traced in fp32"
    return None, 0, "estimate", "formula"


def _traced_step(model: nn.Module, batch: dict[str, Tensor], bf16: bool) -> tuple[int, int]:
    """(FLOPs, bytes saved for backward, each tensor once, parameters excluded) of one step on the meta device."""
    params = {id(p) for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(t: Tensor) -> Tensor:
        base = t._base if t._base is not None else t
        if id(base) not in params:
            saved[id(base)] = base.numel() * base.element_size()
        return t

    def step() -> None:
        autocast = _MetaAutocast() if bf16 else contextlib.nullcontext()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast:
            loss = model(**batch)["loss"]
        loss.backward()

    flops = count_flops(step)
    model.zero_grad(set_to_none=True)
    return flops, sum(saved.values())


class _MetaAutocast(TorchFunctionMode):
    """bf16 autocast for meta tensors, which ``torch.autocast`` leaves alone: the ops CPU autocast runs in bf16
    (matrix products, convolutions, attention) get their floating-point inputs cast to bf16, so the traced
    activations are the bf16 copies and outputs a real bf16 run keeps; everything else runs as given."""

    LOWER = frozenset({F.linear, torch.matmul, Tensor.matmul, Tensor.__matmul__, torch.bmm, Tensor.bmm, torch.mm,
                       torch.addmm, torch.baddbmm, F.conv1d, F.conv2d, F.scaled_dot_product_attention})

    def __init__(self) -> None:
        super().__init__()
        self._weights: dict[int, Tensor] = {}  # autocast casts each weight once per forward pass and keeps it

    def _cast(self, x: Any) -> Any:
        if not isinstance(x, Tensor) or not x.is_floating_point() or x.dtype == torch.bfloat16:
            return x
        if x.is_leaf and x.requires_grad:
            if id(x) not in self._weights:
                self._weights[id(x)] = x.to(torch.bfloat16)
            return self._weights[id(x)]
        return x.to(torch.bfloat16)

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if func in self.LOWER:
            args = tuple(self._cast(a) for a in args)
            kwargs = {k: self._cast(v) for k, v in kwargs.items()}
        return func(*args, **kwargs)


def _formula_activations(model: nn.Module, config: ModelConfig, batch: dict[str, Tensor], bf16: bool) -> int:
    """Korthikanti et al. (2022), per layer: ``tokens x (34 d + 5 h L)`` bytes in 16-bit (x2 in fp32)."""
    layers = sum(1 for m in model.modules() if type(m).__name__ == "TransformerBlock")
    d, heads = int(getattr(config, "d_model", 0)), int(getattr(config, "n_heads", 1))
    ids = [t for k, t in batch.items() if k.endswith("_ids")]
    length = max(t.shape[-1] for t in ids)
    tokens = sum(t.numel() for t in ids) / max(len(ids), 1)
    return int(tokens * layers * (34 * d + 5 * heads * length) * (1 if bf16 else 2))


def _optimizer_bytes(params: list[nn.Parameter], optimizer: str) -> int:
    """fp32 optimizer state: AdamW's two moments, or torch Adafactor's factored second moment (a row and a column
    vector per matrix: the shape less its last, and less its second-to-last, dimension)."""
    if optimizer == "adamw":
        return sum(p.numel() * 8 for p in params)
    total = 0
    for p in params:
        if p.dim() >= 2:
            total += (math.prod(p.shape[:-1]) + math.prod(p.shape[:-2]) * p.shape[-1]) * 4
        else:
            total += p.numel() * 4
    return total


def _count(n: float) -> str:
    for unit, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{n:,.0f} "


def format_plan(plan: RunPlan) -> list[str]:
    """The plan as the lines ``synthformer train --dry-run`` prints."""
    mem, tok = plan.memory, plan.tokens_per_step
    parts = " + ".join(f"{tok[k]:,} {k}" for k in plan.lengths)
    lengths = ", ".join(f"{k} {v}" for k, v in plan.lengths.items())
    flops_how = ("counted: FlopCounterMode over forward + backward of a micro-batch on the meta device"
                 if plan.flops_method == "counted" else "estimated: 6 x parameters x tokens (the model does not run "
                 "on the meta device)")
    lines = [
        f"plan of {plan.config or 'the run'} (dry run: nothing trained, no data read or tokenized)",
        f"model:      {plan.arch}, {plan.parameters:,} parameters ({plan.trainable:,} trainable); vocabulary "
        f"{plan.vocab_size:,} ({plan.vocab_source})",
        *([f"recipe:     {plan.recipe}"] if plan.recipe else []),
        f"step:       {plan.batch_size} examples x {plan.grad_accum} micro-batches x {plan.processes} process(es) "
        f"= {plan.examples_per_step:,} examples of {lengths} positions",
        f"tokens:     {tok['total']:,} per optimizer step ({parts}); {tok['total'] * plan.steps:,} in "
        f"{plan.steps:,} steps",
        f"FLOPs:      {_count(plan.flops_per_step)}FLOP per optimizer step, {_count(plan.flops_per_step * plan.steps)}"
        f"FLOP in all ({flops_how})",
        f"memory:     peak {format_bytes(mem['total'])} per process = weights {format_bytes(mem['weights'])} + "
        f"gradients {format_bytes(mem['gradients'])} + {plan.optimizer} state {format_bytes(mem['optimizer'])} + "
        f"activations {format_bytes(mem['activations'])} ({plan.memory_method}, {plan.precision}, "
        f"{plan.distributed}) [1]",
    ]
    lines += [f"machine:    {plan.machine}"] if plan.machine else []
    lines += [f"data:       {line}" if i == 0 else f"            {line}" for i, line in enumerate(plan.data.lines())]
    lines += [f"missing:    {m}" for m in plan.missing]
    lines += [f"warning:    {w}" for w in plan.warnings]
    lines += [f"error:      {e}" for e in plan.errors]
    lines.append(f"[1] {MEMORY_FORMULA}")
    return lines
