"""``TrainConfig``: the settings of the training engine.

The generic loader (YAML files, dotted ``key=value`` overrides, dataclass <-> dict) and :class:`ConfigError` live in
the lowest layer, :mod:`synthformer.common.config`: import them from there.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Literal

from synthformer.common import ConfigError

from .best import metric_direction

#: The parts ``freeze`` may name (each model's ``parts()`` maps them to its modules).
FREEZABLE: tuple[str, ...] = ("embeddings", "output")

#: The experiment trackers ``log_with`` may name (:mod:`synthformer.train.tracking` starts them).
TRACKER_NAMES: tuple[str, ...] = ("tensorboard", "wandb", "mlflow")

__all__ = ["TRACKER_NAMES", "TrainConfig"]


@dataclass
class TrainConfig:
    """Settings of the training engine (:class:`synthformer.train.Trainer`).

    Batch sizes are per process and per micro-batch: one optimizer step sees
    ``batch_size * grad_accum * world_size`` examples.
    """

    steps: int = 1000
    """Number of optimizer steps (not micro-batches)."""
    batch_size: int = 32
    """Examples per micro-batch and per process."""
    lr: float = 1e-3
    """Peak learning rate (reached at the end of warm-up)."""
    optimizer: Literal["adamw", "adafactor"] = "adamw"
    weight_decay: float = 0.0
    """Decoupled weight decay; never applied to biases, norm weights or other 0-/1-D parameters."""
    betas: tuple[float, float] = (0.9, 0.98)
    """AdamW betas (Adafactor has no first moment and ignores them)."""
    eps: float = 1e-8
    """AdamW epsilon."""
    warmup_steps: int = 0
    """Linear warm-up from 0 to ``lr``; the peak is at step ``warmup_steps``."""
    schedule: Literal["inverse_sqrt", "rsqrt", "cosine", "constant"] = "inverse_sqrt"
    """Decay after warm-up. ``rsqrt`` is T5's: no ramp, the full rate for ``warmup_steps`` steps, then
    ``lr * sqrt(warmup_steps / step)`` (:func:`synthformer.train.optim.lr_multiplier`)."""
    freeze: list[str] = dataclasses.field(default_factory=list)
    """Parts kept fixed during training: ``embeddings`` (token and learned position embeddings), ``output`` (the
    softmax layer over the vocabulary). The paper finetunes its T5 models with both frozen."""
    min_lr: float = 0.0
    """Floor of the decay (cosine ends exactly here; inverse-sqrt is clamped to it)."""
    grad_clip: float = 1.0
    """Max global gradient L2 norm; 0 turns clipping off."""
    grad_accum: int = 1
    """Micro-batches accumulated per optimizer step."""
    bf16: bool = False
    """Run forward passes under ``torch.autocast(dtype=bfloat16)`` (weights and optimizer stay fp32)."""
    eval_every: int = 0
    """Evaluate every this many steps (0: only once, at the end of training)."""
    eval_steps: int = 0
    """Maximum number of eval batches per evaluation (0: the whole eval set)."""
    save_every: int = 1000
    """Save a checkpoint every this many steps (0: only at the end). The last step is always saved."""
    log_every: int = 10
    """Write a metrics line every this many steps."""
    seed: int = 0
    """Seeds the RNGs (dropout etc.) and the data order."""
    tensorboard: bool = False
    """Also write TensorBoard scalars to ``RUN/tensorboard`` (needs the ``tensorboard`` package)."""
    log_with: list[str] = dataclasses.field(default_factory=list)
    """Experiment trackers (accelerate's) that receive the metrics too: any of ``tensorboard``, ``wandb`` (offline
    unless ``WANDB_MODE`` says otherwise), ``mlflow`` (a local file store); each writes under ``RUN/trackers/`` and
    needs its package (:mod:`synthformer.train.tracking`)."""
    tracker_project: str = "synthformer"
    """The project (experiment) name the trackers file the run under."""
    max_checkpoints: int = 3
    """Keep only the newest N checkpoints (0: keep all)."""
    num_workers: int = 0
    """DataLoader worker processes for map-style datasets."""
    distributed: Literal["ddp", "fsdp"] = "ddp"
    """How several processes (``torchrun``, ``accelerate launch``) share the model: ``ddp`` keeps a whole copy of
    the weights and optimizer state on each; ``fsdp`` shards them (PyTorch FSDP2, ``fully_shard``), each process
    holding 1/N. The same checkpoints either way; ignored by a single process (docs/distributed.md)."""
    fsdp_units: list[str] = dataclasses.field(
        default_factory=lambda: ["TransformerBlock", "SynthesizerCrossAttention"])
    """With ``fsdp``: class names of the submodules sharded as units of their own (gathered one at a time in
    forward and backward); the rest of the model is one more unit."""
    fsdp_forward_methods: list[str] = dataclasses.field(default_factory=lambda: ["memory_kv"])
    """With ``fsdp``: methods other than ``forward`` that the model calls on a unit directly (the decoder's
    cross-attention keys of the encoder output); the unit's weights are gathered for them too."""
    nonfinite: Literal["stop", "skip"] = "stop"
    """A step whose loss or gradient norm is not finite (NaN, inf), or whose loss is a spike (``spike_factor``):
    ``stop`` the run with a one-line error naming the step and the checkpoint to go back to, or ``skip`` its update
    (counted as ``skipped_steps`` in the metrics) and go on. A non-finite model is never saved (docs/reliability.md,
    "Long runs")."""
    nonfinite_limit: int = 10
    """With ``nonfinite: skip``: stop as ``stop`` does after this many skipped steps (non-finite or spikes) in a
    row."""
    spike_factor: float = 10.0
    """A finite loss more than this many times the reference (the largest loss of the run's first step and of the
    last ``spike_window`` applied steps) is a loss spike, handled as a non-finite step (``nonfinite``: stop or
    skip); 0 turns the check off. The check starts at the second step: a blown-up rate shows in its loss
    (:mod:`synthformer.train.spikes`)."""
    spike_window: int = 100
    """How many of the latest applied steps' losses the spike reference spans (besides the first step's)."""
    divergence_factor: float = 3.0
    """The run diverges, and stops naming the checkpoint to go back to, when the mean loss of its last
    ``divergence_window`` applied steps, or a validation loss, is more than this many times its range (the first
    step's loss, an untrained model's; or the best validation loss where that is higher); 0 turns the check off.
    Rotation keeps the checkpoints with the lowest validation and training loss either way
    (:mod:`synthformer.train.divergence`)."""
    divergence_window: int = 10
    """How many of the latest applied steps' losses the divergence check averages."""
    keep_best: str | None = None
    """An evaluation metric (``loss``, ``bleu``, ``accuracy``, ``glue_average``, ...; with or without ``eval_``):
    the checkpoint with its best value is kept besides the newest ``max_checkpoints`` and named by
    ``checkpoints/best`` (``synthformer eval --checkpoint best``, ``init_from: RUN@best``). Lower is better for
    losses, perplexities and bits, higher for the rest; a new best is saved at once."""
    collective_timeout_s: float = 600.0
    """Several processes: how long one waits in a collective (gradients, a checkpoint) for the others before it
    gives up with a one-line error; a process that dies is usually noticed at once, a hung one only after this."""

    def __post_init__(self) -> None:
        # Validate eagerly so a bad value fails at load time, not 10 000 steps in.
        positive = ("steps", "batch_size", "grad_accum", "log_every")
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: expected an integer >= 1, got {getattr(self, name)!r}")
        non_negative = (
            "warmup_steps", "eval_every", "eval_steps", "save_every", "max_checkpoints", "num_workers",
            "weight_decay", "grad_clip", "min_lr",
        )
        for name in non_negative:
            if getattr(self, name) < 0:
                raise ConfigError(f"{name}: expected a value >= 0, got {getattr(self, name)!r}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ConfigError(f"lr: expected a finite value > 0, got {self.lr!r}")
        if self.min_lr > self.lr:
            raise ConfigError(f"min_lr: must not exceed lr ({self.lr}), got {self.min_lr!r}")
        choices = {"optimizer": ("adamw", "adafactor"), "schedule": ("inverse_sqrt", "rsqrt", "cosine", "constant"),
                   "distributed": ("ddp", "fsdp")}
        for name, valid in choices.items():
            if getattr(self, name) not in valid:
                raise ConfigError(f"{name}: expected one of {list(valid)}, got {getattr(self, name)!r}")
        self.betas = tuple(self.betas)  # a YAML list arrives as a list
        if len(self.betas) != 2 or not all(0.0 <= b < 1.0 for b in self.betas):
            raise ConfigError(f"betas: expected two values in [0, 1), got {self.betas!r}")
        if self.distributed == "fsdp" and self.optimizer != "adamw":
            # measured: torch's Adafactor updates a norm of the sharded parameter in place, which DTensor refuses
            raise ConfigError(f"optimizer: distributed=fsdp trains with 'adamw' only (torch's Adafactor cannot step "
                              f"sharded parameters), got {self.optimizer!r}")
        if isinstance(self.freeze, str):  # freeze=embeddings on the command line
            self.freeze = [f.strip() for f in self.freeze.split(",") if f.strip()]
        if not isinstance(self.freeze, (list, tuple)):
            raise ConfigError(f"freeze: expected a list of parts ({', '.join(FREEZABLE)}), got {self.freeze!r}")
        for part in self.freeze:
            if part not in FREEZABLE:
                raise ConfigError(f"freeze: unknown part {part!r}; valid: {', '.join(FREEZABLE)}")
        self.freeze = list(self.freeze)
        if isinstance(self.log_with, str):  # log_with=tensorboard on the command line
            self.log_with = [self.log_with]
        for name in self.log_with:
            if name not in TRACKER_NAMES:
                raise ConfigError(f"log_with: unknown tracker {name!r}; valid: {', '.join(TRACKER_NAMES)}")
        if not isinstance(self.tracker_project, str) or not self.tracker_project.strip():
            raise ConfigError(f"tracker_project: expected a non-empty name, got {self.tracker_project!r}")
        if self.nonfinite not in ("stop", "skip"):
            raise ConfigError(f"nonfinite: expected one of ['stop', 'skip'], got {self.nonfinite!r}")
        if isinstance(self.nonfinite_limit, bool) or not isinstance(self.nonfinite_limit, int) \
                or self.nonfinite_limit < 1:
            raise ConfigError(f"nonfinite_limit: expected an integer >= 1, got {self.nonfinite_limit!r}")
        if isinstance(self.spike_factor, bool) or not isinstance(self.spike_factor, (int, float)) or not (
                self.spike_factor == 0 or (self.spike_factor > 1 and math.isfinite(self.spike_factor))):
            raise ConfigError(f"spike_factor: expected a finite number > 1, or 0 (no spike check), got "
                              f"{self.spike_factor!r}")
        if isinstance(self.spike_window, bool) or not isinstance(self.spike_window, int) or self.spike_window < 1:
            raise ConfigError(f"spike_window: expected an integer >= 1, got {self.spike_window!r}")
        if isinstance(self.divergence_factor, bool) or not isinstance(self.divergence_factor, (int, float)) or not (
                self.divergence_factor == 0 or (self.divergence_factor > 1 and math.isfinite(self.divergence_factor))):
            raise ConfigError(f"divergence_factor: expected a finite number > 1, or 0 (no divergence check), got "
                              f"{self.divergence_factor!r}")
        if isinstance(self.divergence_window, bool) or not isinstance(self.divergence_window, int) \
                or self.divergence_window < 1:
            raise ConfigError(f"divergence_window: expected an integer >= 1, got {self.divergence_window!r}")
        if not (isinstance(self.collective_timeout_s, (int, float)) and self.collective_timeout_s > 0
                and math.isfinite(self.collective_timeout_s)):
            raise ConfigError(f"collective_timeout_s: expected a number of seconds > 0, got "
                              f"{self.collective_timeout_s!r}")
        if self.keep_best is not None:
            metric_direction(self.keep_best)  # a ConfigError naming the known metrics
        for name in ("fsdp_units", "fsdp_forward_methods"):
            names = getattr(self, name)
            if not isinstance(names, (list, tuple)) or not all(isinstance(u, str) and u for u in names):
                raise ConfigError(f"{name}: expected a list of names, got {names!r}")
            setattr(self, name, list(names))
