"""Fully sharded data parallelism (FSDP2) for the trainer, with checkpoints in the single-process format.

With ``train.distributed: fsdp`` and several processes, :func:`shard_model` applies PyTorch's FSDP2
(``torch.distributed.fsdp.fully_shard``) to every submodule whose class is named in ``train.fsdp_units`` (the
Transformer blocks by default), then to the whole model: each process keeps 1/N of every parameter, gradient and
optimizer state, and a unit's full weights exist only while it runs (all-gathered before, freed after).

Why directly and not through accelerate's FSDP plugin: accelerate (1.15) turns FSDP on only for GPU-like
devices; with ``Accelerator(cpu=True)`` it sets up MULTI_CPU and ignores the plugin, while ``fully_shard`` itself
runs on CPU with gloo. The same code runs on GPUs (the mesh is on the accelerator's device).

Checkpoints stay what a single process writes: the weights and optimizer state are gathered whole (collectives
on every process, the result on the main one, in CPU memory) and saved in the same files and layout, so a run
saved by N processes resumes on M, sharded or not. Resuming loads the whole weights into the unsharded model
before it is sharded, and the whole optimizer state into the sharded optimizer.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

__all__ = [
    "ShardedOptimizerState",
    "as_float",
    "full_model_state",
    "full_optimizer_state",
    "gradient_sync",
    "is_sharded",
    "shard_model",
    "unsharded",
]

logger = logging.getLogger(__name__)


def _fsdp() -> Any:
    # Imported when used: torch.distributed.fsdp is slow to import and most runs are single-process.
    from torch.distributed import fsdp

    return fsdp


def _state_dict_api() -> Any:
    from torch.distributed.checkpoint import state_dict

    return state_dict


def is_sharded(model: nn.Module) -> bool:
    """True if ``fully_shard`` was applied to ``model`` (its parameters are DTensor shards)."""
    return isinstance(model, _fsdp().FSDPModule)


def shard_model(model: nn.Module, units: Sequence[str], device: torch.device,
                forward_methods: Sequence[str] = ()) -> nn.Module:
    """Shard ``model`` over all processes with FSDP2 (collective); returns it (``fully_shard`` works in place).

    The weights of the main process are first broadcast to the others, as DDP does when it wraps a model:
    ``fully_shard`` cuts each process's slice out of that process's own copy, so differently initialised
    copies would otherwise be mixed silently. Units are sharded innermost first (FSDP2 needs children before
    their parents); a name in ``units`` that matches no submodule is only logged (the root is then one unit).

    A unit's weights are gathered when its ``forward`` runs. A model that calls another method of a unit directly
    (the decoder computes each layer's cross-attention keys with ``memory_kv`` before running the layer) needs
    that method named in ``forward_methods``: FSDP then gathers the weights for it as well.
    """
    fsdp = _fsdp()
    from torch.distributed.device_mesh import init_device_mesh

    model.to(device)
    with torch.no_grad():
        for tensor in [*model.parameters(), *model.buffers()]:
            dist.broadcast(tensor.data, src=0)
    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    wanted = set(units)
    found = [m for m in model.modules() if m is not model and type(m).__name__ in wanted]
    # names now: fully_shard renames each unit's class (TransformerBlock -> FSDPTransformerBlock)
    missing, name = wanted - {type(m).__name__ for m in found}, type(model).__name__
    # modules() lists parents before their children: reversed, every child comes before its parent
    for module in reversed(found):
        fsdp.fully_shard(module, mesh=mesh, reshard_after_forward=True)
    # the root's weights are needed again as soon as backward starts: they stay gathered between the passes
    fsdp.fully_shard(model, mesh=mesh, reshard_after_forward=False)
    for module in [*found, model]:
        for method in forward_methods:
            if callable(getattr(module, method, None)):
                fsdp.register_fsdp_forward_method(module, method)
    if missing:
        logger.info("fsdp: no submodule of class %s in %s; sharded as %d unit(s) plus the root",
                    ", ".join(sorted(missing)), name, len(found))
    return model


def _options(**kwargs: Any) -> Any:
    return _state_dict_api().StateDictOptions(full_state_dict=True, **kwargs)


def _param_names(model: nn.Module, optimizer: torch.optim.Optimizer) -> list[str]:
    """The name of each parameter of ``optimizer``, in the order ``Optimizer.state_dict()`` numbers them.

    A tied parameter is named by its first name in ``named_parameters()``, as torch's distributed state dicts
    name it."""
    name_of = {id(p): name for name, p in model.named_parameters()}
    return [name_of[id(p)] for group in optimizer.param_groups for p in group["params"]]


def full_model_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The whole state dict of a sharded model, on the CPU of the main process (collective; ``{}`` elsewhere).

    Tied parameters are gathered once per name; only the alphabetically first name is kept, the one
    ``safetensors.torch.save_model`` keeps for a single process (loading restores the tie)."""
    state = _state_dict_api().get_model_state_dict(model, options=_options(cpu_offload=True))
    names: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(param), []).append(name)
    for tied in names.values():
        for name in sorted(tied)[1:]:
            state.pop(name, None)
    return state


def full_optimizer_state(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """The optimizer's whole state in the form of ``Optimizer.state_dict()`` (parameters numbered in order), on
    the CPU of the main process (collective; ``{}`` elsewhere)."""
    state = _state_dict_api().get_optimizer_state_dict(model, optimizer, options=_options(cpu_offload=True))
    if not state:
        return {}
    index = {name: i for i, name in enumerate(_param_names(model, optimizer))}
    return {
        "state": {index[name]: value for name, value in state["state"].items()},
        "param_groups": [dict(g, params=[index[name] for name in g["params"]]) for g in state["param_groups"]],
    }


class ShardedOptimizerState:
    """Loads a whole ``Optimizer.state_dict()`` (as any process saves it) into the optimizer of a sharded model.

    It has ``load_state_dict`` so that :func:`~synthformer.train.load_checkpoint` can take it for the optimizer;
    every process must call it (it shards the state)."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        self.model = model
        self.optimizer = optimizer

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Shard and load ``state``; raises ``KeyError``/``ValueError`` if it is another model's."""
        names = _param_names(self.model, self.optimizer)
        if len(names) != sum(len(g["params"]) for g in state["param_groups"]):
            raise ValueError(f"the state has {sum(len(g['params']) for g in state['param_groups'])} parameters, "
                             f"the optimizer {len(names)}")
        by_name = {
            "state": {names[i]: value for i, value in state["state"].items()},
            "param_groups": [dict(g, params=[names[i] for i in g["params"]]) for g in state["param_groups"]],
        }
        _state_dict_api().set_optimizer_state_dict(self.model, self.optimizer, by_name, options=_options())


@contextlib.contextmanager
def unsharded(model: nn.Module) -> Iterator[None]:
    """Hold the whole weights on every process while the block runs, so forward passes need no collectives.

    Evaluation runs on each process alone (processes may see different numbers of eval batches, and an eval
    function may decode for as long as its own samples need): a sharded forward pass would wait for the others.
    The cost is a full copy of the weights per process while evaluating, as DDP holds all the time.
    """
    if not is_sharded(model):
        yield
        return
    units = [m for m in model.modules() if is_sharded(m)]
    for unit in units:
        unit.unshard()
        unit.set_reshard_after_forward(False, recurse=False)
    try:
        yield
    finally:
        for unit in units:
            unit.reshard()
            unit.set_reshard_after_forward(unit is not model, recurse=False)  # as shard_model set them


@contextlib.contextmanager
def gradient_sync(model: nn.Module, enabled: bool) -> Iterator[None]:
    """Without ``enabled``, gradients of a sharded model accumulate locally (no reduce-scatter) in the block,
    as DDP's ``no_sync`` does: micro-batches before the last of a step need no communication."""
    if enabled or not is_sharded(model):
        yield
        return
    model.set_requires_gradient_sync(False)
    try:
        yield
    finally:
        model.set_requires_gradient_sync(True)


def as_float(value: torch.Tensor | float) -> float:
    """A scalar as a float; a replicated DTensor (the gradient norm of a sharded model) by its local value."""
    full = getattr(value, "full_tensor", None)
    return float(full() if callable(full) else value)
