"""Optimizers (AdamW, Adafactor) with weight-decay parameter groups, frozen parts, and warm-up + decay LR schedules.

Adafactor is torch's ``torch.optim.Adafactor`` with T5's settings. How it compares with the Adafactor T5 trained
with (Mesh TensorFlow's ``adafactor_optimizer_from_hparams`` as the T5 repository configures it; Shazeer and Stern
2018):

============================  ===========================================  =========================================
setting                       T5                                           here (torch.optim.Adafactor)
============================  ===========================================  =========================================
first moment (momentum)       none (beta1 = 0)                             none (torch's has no beta1)
second-moment decay           ``1 - t^-0.8`` (decay_rate 0.8)             the same (``beta2_decay=-0.8``)
update clipping               RMS(update) <= 1.0                           the same (``d=1.0``)
parameter scale               step x max(1e-3, RMS(weight))                the same (``eps[1]=1e-3``)
relative step size            the schedule is the step: ``rsqrt_decay``    the schedule's rate ``lr_t``, capped by
                              = ``1/sqrt(max(t, 10000))``                  torch at ``1/sqrt(t)``; the cap never
                                                                           binds for ``rsqrt`` with ``lr <= 1 /
                                                                           sqrt(warmup_steps)``, T5's 1e-2 / 10k
factored second moment        matrices with both sides >= 128              every matrix (>= 2 dimensions)
epsilon1                      1e-30 added to ``g^2``                       ``g^2`` clamped below at
                                                                           ``finfo.eps^2`` (1.4e-14 in fp32)
weight decay                  none                                         ``train.weight_decay`` (default 0),
                                                                           decoupled
============================  ===========================================  =========================================

The last three rows are where the two differ; each changes only parameters with tiny gradients or small matrices.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

from .config import FREEZABLE, TrainConfig

__all__ = [
    "WarmupDecay",
    "FREEZABLE_PARTS",
    "adamw",
    "build_optimizer",
    "freeze_parts",
    "build_scheduler",
    "extend_schedule",
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

    Why: the default on the CPU is a dozen elementwise passes per parameter, which R's L x L attention weights make
    a large part of a long step (measured in docs/benchmarks.md, "Fused AdamW"). Same algorithm, equal to rounding
    (tested).
    """
    params = list(params)
    if "fused" not in kwargs and "foreach" not in kwargs and _fusable(params):
        kwargs["fused"] = True
    return torch.optim.AdamW(params, **kwargs)


#: The parts ``train.freeze`` may name: the token (and learned position) embeddings, and the output softmax layer
#: over the vocabulary.
FREEZABLE_PARTS: tuple[str, ...] = FREEZABLE


def _part_parameters(model: nn.Module, part: str) -> list[nn.Parameter]:
    """The parameters of ``part``, as the model names them in its ``parts()`` (each model family says which of its
    modules are its embeddings and its output layer; train cannot import the models to find out)."""
    if part not in FREEZABLE_PARTS:
        raise ValueError(f"train.freeze: unknown part {part!r}; valid: {', '.join(FREEZABLE_PARTS)}")
    parts = model.parts() if callable(getattr(model, "parts", None)) else {}
    found = [p for module in parts.get(part, []) for p in module.parameters()]
    if not found:
        raise ValueError(f"train.freeze: {type(model).__name__} has no {part!r} part to freeze "
                         f"(its parts: {', '.join(k for k, v in parts.items() if v) or 'none'})")
    return found


def freeze_parts(model: nn.Module, parts: Iterable[str]) -> int:
    """Turn off ``requires_grad`` of the named parts (:data:`FREEZABLE_PARTS`); return how many parameter entries
    were frozen (a tied matrix counts once).

    The paper finetunes its T5 models "with embedding and softmax output layer parameters kept fixed". With tied
    embeddings (T5 v1.0), ``embeddings`` and ``output`` are one matrix: naming either freezes it. Frozen weights are
    still saved in every checkpoint; the optimizer never sees them.

    Raises:
        ValueError: an unknown part, or a model without it.
    """
    frozen: dict[int, nn.Parameter] = {}
    for part in parts:
        frozen.update((id(p), p) for p in _part_parameters(model, part))
    newly = [p for p in frozen.values() if p.requires_grad]
    for p in newly:
        p.requires_grad_(False)
    if newly:  # said once: the pipeline freezes before it counts, the optimizer again (a no-op then)
        entries = sum(p.numel() for p in frozen.values())
        logger.info("frozen: %s (%s parameter entries)", ", ".join(parts), f"{entries:,}")
    return sum(p.numel() for p in frozen.values())


def build_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """AdamW or Adafactor over :func:`param_groups`, both with decoupled weight decay.

    The parts named by ``config.freeze`` are frozen first (:func:`freeze_parts`), here rather than in each caller so
    that every path that trains (the Trainer, ``convert t5``'s finetuning) honours it. Adafactor takes T5's settings
    (the module docstring compares them with T5's own).
    """
    freeze_parts(model, config.freeze)
    groups = param_groups(model, config.weight_decay)
    if not groups:
        raise ValueError("the model has no trainable parameters")
    if config.optimizer == "adamw":
        return adamw(groups, lr=config.lr, betas=tuple(config.betas), eps=config.eps)
    if config.optimizer == "adafactor":
        if not hasattr(torch.optim, "Adafactor"):
            raise RuntimeError("optimizer='adafactor' needs torch>=2.5 (torch.optim.Adafactor)")
        # T5's: no momentum (torch's has none), second-moment decay 1 - t^-0.8, updates clipped to RMS 1, steps
        # scaled by max(1e-3, RMS(weight)); lr is the schedule's rate (torch caps it at 1/sqrt(t))
        return torch.optim.Adafactor(groups, lr=config.lr, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0)
    raise ValueError(f"unknown optimizer {config.optimizer!r}; valid: 'adamw', 'adafactor'")


def lr_multiplier(
    step: int, *, warmup_steps: int, total_steps: int, schedule: str, min_ratio: float = 0.0
) -> float:
    """Factor applied to the peak lr for the optimizer step with index ``step`` (0-based).

    Warm-up is linear, ``step / warmup_steps``, so the factor is exactly 1 at ``step == warmup_steps``.
    After it: ``inverse_sqrt`` gives ``sqrt(warmup_steps / step)`` (continuous at the peak; ``1/sqrt(step)``
    without warm-up), ``cosine`` goes from 1 to ``min_ratio`` at ``total_steps``, ``constant`` stays at 1.
    Decays never go below ``min_ratio`` (``min_lr / lr``).

    ``rsqrt`` is T5's schedule (``rsqrt_decay``: ``1 / sqrt(max(t, warmup_steps))``, normalised to 1 at its peak):
    no ramp, the full rate for the first ``warmup_steps`` steps, then ``sqrt(warmup_steps / step)``. T5 pretrained
    with it at lr 1e-2 and 10,000 such steps; Adafactor's parameter-scaled steps need no ramp.
    """
    if schedule == "rsqrt":
        value = math.sqrt(warmup_steps / step) if step > warmup_steps else 1.0
        return max(value, min_ratio)
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
    raise ValueError(f"unknown schedule {schedule!r}; valid: 'inverse_sqrt', 'rsqrt', 'cosine', 'constant'")


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


def extend_schedule(scheduler: LambdaLR, total_steps: int, step: int) -> str | None:
    """Point a resumed schedule at a new ``train.steps``; return the one line that says what the run now does, or
    None when the total is the one the schedule was built for (then nothing is touched: the resume stays bit-exact).

    The rule: the schedule becomes the one ``total_steps`` gives, as if the run had been started with it, from the
    resumed step on (the Hugging Face Trainer gets the same when ``max_steps`` changes on resume: its schedule
    functions are ``functools.partial`` objects, whose total ``LambdaLR`` does not save). Only cosine depends on the
    total: it is stretched (or shrunk) to reach ``min_lr`` at the new end, so a finished run whose rate had decayed
    to ``min_lr`` (0 by default) trains again, from the rate the longer schedule has at the resumed step.
    ``inverse_sqrt``, ``rsqrt`` and ``constant`` go on as they were.

    The loaded checkpoint restored each lambda's old ``total_steps`` (``LambdaLR`` saves a callable object's
    state) and the optimizer's current rate; both are set here, so the first step after the resume already runs
    at the new rate, and the next checkpoint holds the new total (a later resume of this run changes nothing).

    Args:
        scheduler: the resumed ``LambdaLR`` of :func:`build_scheduler` (its state loaded from the checkpoint).
        total_steps: the run's ``train.steps`` now.
        step: the resumed optimizer step (the trainer's; ``scheduler.last_epoch`` lags behind it by the skipped
            steps, which never step the schedule).
    """
    fns = [fn for fn in scheduler.lr_lambdas if isinstance(fn, WarmupDecay)]
    if not fns or all(fn.total_steps == total_steps for fn in fns) or step >= total_steps:
        return None
    old_total, schedule = fns[0].total_steps, fns[0].schedule
    groups = scheduler.optimizer.param_groups
    was = groups[0]["lr"]
    for fn in fns:
        fn.total_steps = int(total_steps)
    epoch = scheduler.last_epoch
    for group, base, fn in zip(groups, scheduler.base_lrs, scheduler.lr_lambdas, strict=True):
        group["lr"] = base * fn(epoch)
    scheduler._last_lr = [group["lr"] for group in groups]  # what get_last_lr() reports until the next step
    now = groups[0]["lr"]
    verb = "extending" if total_steps > old_total else "shortening"
    head = f"{verb} {old_total} -> {total_steps} steps: "
    if schedule == "cosine":
        floor = scheduler.base_lrs[0] * fns[0].min_ratio
        return (f"{head}the cosine schedule is rebuilt for {total_steps} steps (as if train.steps had been "
                f"{total_steps} from the start): step {step + 1} runs at lr {now:.3g} (was {was:.3g}), decaying to "
                f"min_lr {floor:.3g} at step {total_steps}")
    last = scheduler.base_lrs[0] * fns[0](epoch + total_steps - step - 1)  # the rate of the final step
    return (f"{head}the {schedule} schedule does not depend on the total: step {step + 1} runs at lr {now:.3g}, "
            f"step {total_steps} at lr {last:.3g}")


def lrs_for(config: TrainConfig, steps: Iterable[int]) -> list[float]:
    """The absolute learning rates the schedule gives at ``steps`` (handy for plots and tests)."""
    fn = WarmupDecay(config.warmup_steps, config.steps, config.schedule, config.min_lr / config.lr)
    return [config.lr * fn(s) for s in steps]
