"""Optimizers (AdamW, Adafactor) with weight-decay parameter groups, and warm-up + decay LR schedules."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

from .config import TrainConfig

__all__ = [
    "WarmupDecay",
    "adamw",
    "build_optimizer",
    "build_scheduler",
    "lr_multiplier",
    "lrs_for",
    "param_groups",
]

logger = logging.getLogger(__name__)

# Module types whose parameters are never weight-decayed (their weights are scales, not projections).
_NORM_TYPES: tuple[type[nn.Module], ...] = (
    nn.LayerNorm, nn.GroupNorm, nn.LocalResponseNorm,
    nn.modules.batchnorm._BatchNorm, nn.modules.instancenorm._InstanceNorm,
)
if hasattr(nn, "RMSNorm"):
    _NORM_TYPES = (*_NORM_TYPES, nn.RMSNorm)


def _is_norm(module: nn.Module) -> bool:
    # Custom norms (e.g. a hand-written RMSNorm) are recognised by name.
    return isinstance(module, _NORM_TYPES) or "norm" in type(module).__name__.lower()


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Split trainable parameters into a decayed and a non-decayed group.

    Not decayed: every parameter of a normalisation module, every parameter with fewer than 2 dimensions
    (biases, gains, mixture weights), and names returned by an optional ``model.no_weight_decay()``.
    Tied parameters appear once (``named_parameters`` de-duplicates shared tensors).
    """
    extra: set[str] = set(model.no_weight_decay()) if hasattr(model, "no_weight_decay") else set()
    no_decay_ids: set[int] = set()
    for module_name, module in model.named_modules():
        if _is_norm(module):
            no_decay_ids.update(id(p) for p in module.parameters(recurse=False))
        for pname, p in module.named_parameters(recurse=False):
            full = f"{module_name}.{pname}" if module_name else pname
            if full in extra:
                no_decay_ids.add(id(p))
    decay, no_decay = [], []
    for _, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if p.ndim < 2 or id(p) in no_decay_ids:
            no_decay.append(p)
        else:
            decay.append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return [g for g in groups if g["params"]]


#: devices whose parameters torch's fused AdamW kernel takes
_FUSED_DEVICES = ("cpu", "cuda")


def _fusable(params: Iterable) -> bool:
    """Whether torch's fused AdamW takes every parameter: plain floating tensors on the CPU or CUDA. A tensor
    subclass (FSDP2's DTensor parameters) takes the default implementation."""
    for group in params:
        for p in group["params"] if isinstance(group, dict) else [group]:
            if type(p) not in (nn.Parameter, torch.Tensor) or p.device.type not in _FUSED_DEVICES:
                return False
            if not p.is_floating_point():
                return False
    return True


def adamw(params: Iterable, **kwargs) -> torch.optim.AdamW:
    """``torch.optim.AdamW(params, **kwargs)`` on torch's fused kernel where it takes the parameters
    (:func:`_fusable`), else the default implementation.

    Why: the default on the CPU is one loop of about a dozen elementwise passes per parameter. For R, whose
    attention weights are an L x L matrix per head, that was 351 ms of a 1.8 s LRA Text step at L = 2048
    (``benchmarks/lra_profile.py``); the fused kernel updated 4 x (4, 2048, 2048) parameters in 41 ms against
    303 ms (2-core development CPU). The update is the same algorithm, equal to rounding (tested).
    """
    params = list(params)
    if "fused" not in kwargs and "foreach" not in kwargs and _fusable(params):
        kwargs["fused"] = True
    return torch.optim.AdamW(params, **kwargs)


def build_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """AdamW or Adafactor over :func:`param_groups`, both with decoupled weight decay."""
    groups = param_groups(model, config.weight_decay)
    if not groups:
        raise ValueError("the model has no trainable parameters")
    if config.optimizer == "adamw":
        return adamw(groups, lr=config.lr, betas=tuple(config.betas), eps=config.eps)
    if config.optimizer == "adafactor":
        if not hasattr(torch.optim, "Adafactor"):
            raise RuntimeError("optimizer='adafactor' needs torch>=2.5 (torch.optim.Adafactor)")
        # torch's Adafactor has no momentum (beta1) and uses a fixed lr (no relative step), which is what
        # an explicit schedule wants.
        return torch.optim.Adafactor(groups, lr=config.lr)
    raise ValueError(f"unknown optimizer {config.optimizer!r}; valid: 'adamw', 'adafactor'")


def lr_multiplier(
    step: int, *, warmup_steps: int, total_steps: int, schedule: str, min_ratio: float = 0.0
) -> float:
    """Factor applied to the peak lr for the optimizer step with index ``step`` (0-based).

    Warm-up is linear, ``step / warmup_steps``, so the factor is exactly 1 at ``step == warmup_steps``.
    After it: ``inverse_sqrt`` gives ``sqrt(warmup_steps / step)`` (continuous at the peak; ``1/sqrt(step)``
    without warm-up), ``cosine`` goes from 1 to ``min_ratio`` at ``total_steps``, ``constant`` stays at 1.
    Decays never go below ``min_ratio`` (``min_lr / lr``).
    """
    if warmup_steps > 0 and step < warmup_steps:
        return step / warmup_steps
    if schedule == "constant":
        return 1.0
    if schedule == "inverse_sqrt":
        value = math.sqrt(warmup_steps / step) if warmup_steps > 0 else 1.0 / math.sqrt(max(step, 1))
        return max(value, min_ratio)
    if schedule == "cosine":
        span = max(total_steps - warmup_steps, 1)
        progress = min(max((step - warmup_steps) / span, 0.0), 1.0)
        return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))
    raise ValueError(f"unknown schedule {schedule!r}; valid: 'inverse_sqrt', 'cosine', 'constant'")


class WarmupDecay:
    """The LR lambda, as a callable object whose state is only numbers and a string.

    ``LambdaLR.state_dict`` stores a callable object's ``__dict__`` (a plain function is skipped), so keeping
    it to primitives lets the scheduler state load with ``torch.load(weights_only=True)``.
    """

    def __init__(self, warmup_steps: int, total_steps: int, schedule: str, min_ratio: float) -> None:
        self.warmup_steps = int(warmup_steps)
        self.total_steps = int(total_steps)
        self.schedule = str(schedule)
        self.min_ratio = float(min_ratio)

    def __call__(self, step: int) -> float:
        return lr_multiplier(
            step, warmup_steps=self.warmup_steps, total_steps=self.total_steps,
            schedule=self.schedule, min_ratio=self.min_ratio,
        )


def build_scheduler(optimizer: torch.optim.Optimizer, config: TrainConfig) -> LambdaLR:
    """A ``LambdaLR`` implementing the config's warm-up and decay (stepped once per optimizer step)."""
    fn = WarmupDecay(config.warmup_steps, config.steps, config.schedule, config.min_lr / config.lr)
    return LambdaLR(optimizer, fn)


def lrs_for(config: TrainConfig, steps: Iterable[int]) -> list[float]:
    """The absolute learning rates the schedule gives at ``steps`` (handy for plots and tests)."""
    fn = WarmupDecay(config.warmup_steps, config.steps, config.schedule, config.min_lr / config.lr)
    return [config.lr * fn(s) for s in steps]
