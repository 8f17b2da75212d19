"""What the benchmark measures on one model: a training step, its FLOPs, its peak memory, its batch.

* A training step is forward, backward and an AdamW step on a fixed batch of random tokens (the data pipeline
  is left out: the table compares models, not loaders). Gradients are dropped at the end of the step
  (``zero_grad(set_to_none=True)``), so between steps only the parameters and the optimizer state are resident.
* FLOPs come from :class:`torch.utils.flop_counter.FlopCounterMode` over the forward and backward of one step.
  It counts matrix products, convolutions and attention kernels only; elementwise work (softmax, GLU, the
  tap-by-tap "unfold" convolution of LightConv/DynamicConv, the optimizer update) is not counted. Its formula for
  attention ignores causal masking, so a causal ``V`` counts the full L x L product, as a causal ``R`` does;
  the backward of the fused CPU attention kernel is counted as its four gradient products (twice the forward),
  as on the unfused path, without the kernel's recomputation of ``Q K^T``.
* Peak memory is the high-water mark of tensor allocations during one step, from the profiler's allocation
  events (CPU torch has no ``max_memory_allocated``), plus the bytes resident before the step.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch import Tensor, nn
from torch.profiler import ProfilerActivity, profile
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

from synthformer.attention.fast import fast_path_settings
from synthformer.common import iter_tensors
from synthformer.models import ModelConfig
from synthformer.train import adamw

__all__ = [
    "DTYPES",
    "TrainStep",
    "batch_tokens",
    "count_flops",
    "peak_bytes",
    "random_batch",
    "layer_step",
    "round_robin",
    "tensor_bytes",
]

#: Accepted ``dtype`` names -> autocast dtype (None: plain fp32).
DTYPES: dict[str, torch.dtype | None] = {
    "fp32": None,
    "float32": None,
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
}


# --------------------------------------------------------------------------- FLOPs
def _cpu_sdpa_flop(query_shape, key_shape, value_shape, *args: Any, out_shape=None, **kwargs: Any) -> int:
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def _cpu_sdpa_backward_flop(
    grad_out_shape, query_shape, key_shape, value_shape, *args: Any, out_shape=None, **kwargs: Any
) -> int:
    # The four gradient products (dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q), twice the forward. torch's
    # formula for the CUDA kernels adds the flash kernel's recomputation of Q K^T; leaving it out counts the same
    # work whether SDPA took its flash kernel (plain V) or its math path (R+V, whose learned bias forces it), so
    # a mixture is never counted cheaper than its dot-product part.
    return 2 * sdpa_flop_count(query_shape, key_shape, value_shape)


def _cpu_attention_mapping() -> dict[Any, Callable[..., int]]:
    # torch's FlopCounterMode has formulas for the CUDA attention kernels only: without these two entries the
    # CPU flash kernel that F.scaled_dot_product_attention dispatches to counts as 0 FLOPs, and the Transformer
    # row would look cheaper than it is. Looked up defensively in case a build lacks the CPU kernel.
    aten = torch.ops.aten
    mapping: dict[Any, Callable[..., int]] = {}
    for name, formula in (
        ("_scaled_dot_product_flash_attention_for_cpu", _cpu_sdpa_flop),
        ("_scaled_dot_product_flash_attention_for_cpu_backward", _cpu_sdpa_backward_flop),
    ):
        if hasattr(aten, name):
            mapping[getattr(aten, name)] = formula
    return mapping


def count_flops(fn: Callable[[], Any]) -> int:
    """FLOPs of the matrix products, convolutions and attention kernels ``fn`` runs (CPU attention included)."""
    with FlopCounterMode(display=False, custom_mapping=_cpu_attention_mapping()) as counter:
        fn()
    return int(counter.get_total_flops())


# --------------------------------------------------------------------------- memory
def peak_bytes(fn: Callable[[], Any], device: torch.device | str | None = None) -> int:
    """High-water mark of the bytes tensors allocate while ``fn`` runs, above what was allocated before.

    On the CPU (``device`` None or a CPU device) the profiler attributes an op's net allocations to the op
    (``self_cpu_memory_usage``) and reports frees outside any op as ``"[memory]"`` events (``cpu_memory_usage``);
    summed in time order they give the running total, whose maximum is the peak. ``benchmarks/speed/attention.py`` uses
    it too. On a CUDA device the caching allocator keeps the same high-water mark itself
    (``torch.cuda.max_memory_allocated``), which the CPU profiler's events would not see.
    """
    if device is not None and torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        fn()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    deltas: list[tuple[float, int]] = []
    for event in prof.events():
        amount = event.cpu_memory_usage if event.name == "[memory]" else event.self_cpu_memory_usage
        if amount:
            deltas.append((event.time_range.start, amount))
    current = high = 0
    for _, amount in sorted(deltas, key=lambda d: d[0]):
        current += amount
        high = max(high, current)
    return high


def tensor_bytes(objs: Iterable[Any]) -> int:
    """Bytes of the tensors in ``objs`` (nested as :func:`synthformer.common.iter_tensors` walks them), each
    storage counted once (tied weights)."""
    seen: set[int] = set()
    total = 0
    for obj in objs:
        for t in iter_tensors(obj):
            storage = t.untyped_storage()
            if storage.data_ptr() in seen:
                continue
            seen.add(storage.data_ptr())
            total += storage.nbytes()
    return total


# --------------------------------------------------------------------------- batches and steps
def random_batch(config: ModelConfig, batch_size: int, seq_len: int, seed: int = 0) -> dict[str, Tensor]:
    """A batch of random tokens with the keys of the model contract (``docs/CONTRACTS.md``), drawn by the task type
    that trains ``config``'s architecture (:meth:`synthformer.tasks.TaskType.random_batch`).

    Language model: ``input_ids``, ``labels`` (B, L). Classifier: ``input_ids`` (B, L), ``labels`` (B,).
    Encoder-decoder: ``src_ids``, ``tgt_ids``, ``labels`` (B, L) each (source and target of the same length).
    No token is the padding id, so nothing is masked.
    """
    from synthformer.tasks import task_type_for_arch

    g = torch.Generator().manual_seed(seed)
    return task_type_for_arch(config.arch).random_batch(config, batch_size, seq_len, g)


def batch_tokens(batch: dict[str, Tensor]) -> int:
    """Tokens the model reads per step: every id tensor of the batch (source and target for seq2seq)."""
    return sum(t.numel() for key, t in batch.items() if key.endswith("_ids"))


class TrainStep:
    """One training step of ``model`` on ``batch``: forward, backward, AdamW step, gradients dropped.

    Args:
        model: a task model whose ``forward(**batch)`` returns a dict with ``"loss"``; put in training mode.
        batch: the batch (see :func:`random_batch`), reused every step.
        autocast_dtype: None for fp32, or ``torch.bfloat16`` to run forward and backward under autocast on the
            batch's device (parameters and optimizer state stay fp32).
        lr: AdamW learning rate (its value does not change the cost of a step).

    The model and the batch are on one device (the CPU unless the caller moved both, e.g. to ``cuda``). On a CUDA
    device a step returns only once the GPU has finished it, so a wall-clock timing of the call is the step's.
    """

    def __init__(
        self, model: nn.Module, batch: dict[str, Tensor], autocast_dtype: torch.dtype | None = None, lr: float = 1e-4
    ) -> None:
        self.model = model.train()
        self.batch = batch
        self.autocast_dtype = autocast_dtype
        self.device = next(iter(batch.values())).device if batch else torch.device("cpu")
        self.optimizer = adamw(model.parameters(), lr=lr)  # the trainer's AdamW (fused kernel where it applies)

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)

    def forward_backward(self) -> float:
        """Forward and backward only (what the FLOP count covers); returns the loss."""
        with self._autocast():
            loss = self.model(**self.batch)["loss"]
        loss.backward()
        return float(loss.detach())

    def __call__(self) -> float:
        """A full training step; returns the loss."""
        loss = self.forward_backward()
        self.optimizer.step()
        # drop the gradients now rather than at the start of the next step, so that between steps only the
        # parameters and the optimizer state are allocated and the memory profile of a step starts from there
        self.optimizer.zero_grad(set_to_none=True)
        if self.device.type == "cuda":
            # the optimizer's kernels are only queued when step() returns: without this wait a timing would end
            # early and the next timed step (another model's, in a round-robin) would be charged for them
            torch.cuda.synchronize(self.device)
        return loss

    def count_flops(self) -> int:
        """FLOPs of one forward + backward (the optimizer update is elementwise and would count 0 anyway)."""
        flops = count_flops(self.forward_backward)
        self.optimizer.zero_grad(set_to_none=True)
        return flops

    def resident_bytes(self) -> int:
        """Bytes allocated between steps: parameters (shared ones once) and the optimizer state."""
        return tensor_bytes([list(self.model.parameters()), list(self.optimizer.state.values())])


def layer_step(layer: nn.Module, x: Tensor, settings: dict[str, Any]) -> Callable[[], float]:
    """One forward + backward of an attention ``layer`` on ``x`` (B, L, d) under ``fast_path_settings(**settings)``,
    gradients dropped after it, as a callable returning its seconds: what an A/B of two settings times."""
    def step() -> float:
        start = time.perf_counter()
        with fast_path_settings(**settings):
            layer(x).sum().backward()  # inside the block: the backward of an unfused call reads no setting anyway
        layer.zero_grad(set_to_none=True)
        x.grad = None
        return time.perf_counter() - start

    return step


def round_robin(
    steps: Sequence[Callable[[], Any]],
    warmup: int,
    repeats: int,
    steps_per_sample: int = 1,
    tick: Callable[[str, int], None] | None = None,
) -> list[list[float]]:
    """Time each of ``steps`` (training steps of different models): ``warmup`` untimed rounds, then ``repeats``
    rounds that time ``steps_per_sample`` consecutive calls of each step in turn. Round-robin, so load that comes
    and goes hits every model alike instead of one.

    ``tick(phase, n)`` is called after every ``n`` calls (``phase``: ``"warm-up"`` or ``"timing, repeat r/R"``),
    e.g. to advance a progress bar. Returns one list of ``repeats`` seconds-per-step samples per step.
    """
    for _ in range(warmup):
        for step in steps:
            step()
            if tick is not None:
                tick("warm-up", 1)
    times: list[list[float]] = [[] for _ in steps]
    for r in range(repeats):
        for i, step in enumerate(steps):
            start = time.perf_counter()
            for _ in range(steps_per_sample):
                step()
            times[i].append((time.perf_counter() - start) / steps_per_sample)
            if tick is not None:
                tick(f"timing, repeat {r + 1}/{repeats}", steps_per_sample)
    return times
