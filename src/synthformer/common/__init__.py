"""Constants and helpers every package of synthformer may use; imports only torch, numpy, PyYAML and the standard
library.

This is the lowest layer of the package (see ``tests/test_layering.py``): nothing here may import another
module of synthformer. Its modules: :mod:`.io` (crash-safe file writing: temp file, fsync, rename),
:mod:`.config` (:class:`~synthformer.common.config.ConfigError` and the typed YAML loader with dotted overrides),
:mod:`.order` (seeded orders of ``[0, n)`` in O(1) memory, for the training stream and the data mixtures) and
:mod:`.padding` (the positions of left-padded rows).

* :data:`IGNORE_INDEX`: the label value the losses and metrics skip.
* Walking nested containers of tensors (decoding caches, optimizer state, batches): :func:`map_tensors` builds
  a copy with every tensor transformed, :func:`iter_tensors` yields the tensors, :func:`sum_tensors` adds up a
  number per tensor. All three recurse the same way:

  * dataclass instances (not dataclass types), through their ``init`` fields (``init=False`` fields are
    derived ones, recomputed by ``__post_init__`` when :func:`map_tensors` rebuilds the instance);
  * dicts (their values; keys are kept as they are);
  * lists and tuples (named tuples included);
  * any other value (ints, strings, None, modules, ...) is a leaf: kept by :func:`map_tensors`, skipped by the
    others.


  With ``method="name"``, an object (not a tensor) that has a callable attribute ``name`` is not recursed into:
  it handles itself (``obj.reorder(index)``, ``obj.nbytes()``). This comes before the container checks, so a
  dataclass with that method is asked rather than walked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from torch import Tensor

from .config import ConfigError, apply_overrides, dump_config, from_dict, load_config, to_dict
from .io import TMP_PREFIX, atomic_output, atomic_write_bytes, atomic_write_text, created_mode, fsync_path
from .order import Order, epoch_order, seeded_order
from .padding import positions_from_padding

__all__ = [
    "IGNORE_INDEX", "iter_tensors", "map_tensors", "sum_tensors", "tensor_nbytes", "ConfigError", "Order",
    "TMP_PREFIX", "apply_overrides", "atomic_output", "atomic_write_text", "created_mode", "dump_config",
    "epoch_order", "from_dict", "fsync_path", "load_config", "positions_from_padding", "seeded_order", "to_dict",
    "atomic_write_bytes",
]

#: Label value ignored by the losses and metrics (``torch.nn.functional.cross_entropy``'s default).
IGNORE_INDEX = -100


def tensor_nbytes(tensor: Tensor) -> int:
    """Bytes of ``tensor``'s elements (``numel * element_size``; a view counts its own elements only)."""
    return tensor.numel() * tensor.element_size()


def _own_method(obj: Any, method: str | None) -> Callable[..., Any] | None:
    """``obj``'s callable attribute ``method``, or None (no method asked for, a tensor, a class, or no such method)."""
    if method is None or isinstance(obj, (Tensor, type)):
        return None
    found = getattr(obj, method, None)
    return found if callable(found) else None


def _split(obj: Any) -> tuple[list[Any], Callable[[list[Any]], Any]] | None:
    """The walkers' one notion of a container: ``(children, rebuild)`` for a container, None for a leaf.

    ``rebuild(new_children)`` makes a new container of ``obj``'s kind holding ``new_children`` in place of
    ``children``; ``obj`` is not changed.
    """
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = [f.name for f in dataclasses.fields(obj) if f.init]
        values = [getattr(obj, name) for name in names]
        return values, lambda new: dataclasses.replace(obj, **dict(zip(names, new, strict=True)))
    if isinstance(obj, dict):
        keys = list(obj)
        return [obj[key] for key in keys], lambda new: dict(zip(keys, new, strict=True))
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a named tuple takes its fields as arguments
        return list(obj), lambda new: type(obj)(*new)
    if isinstance(obj, (list, tuple)):
        return list(obj), type(obj)
    return None


def _children(obj: Any) -> list[Any]:
    """What :func:`_split` finds in ``obj``: its children, none for a leaf."""
    parts = _split(obj)
    return parts[0] if parts is not None else []


def map_tensors(
    obj: Any, fn: Callable[[Tensor], Any], *, method: str | None = None, method_args: tuple[Any, ...] = ()
) -> Any:
    """A copy of ``obj`` with every tensor ``t`` in it replaced by ``fn(t)``; ``obj`` itself is left unchanged.

    Containers are rebuilt (a dataclass with :func:`dataclasses.replace`, so its ``__post_init__`` runs again);
    other values are kept. With ``method``, an object that has that method is replaced by
    ``getattr(obj, method)(*method_args)`` instead of being walked.

    Example:
        >>> import torch
        >>> map_tensors({"k": torch.zeros(2), "length": 3}, lambda t: t + 1)
        {'k': tensor([1., 1.]), 'length': 3}
    """
    if isinstance(obj, Tensor):
        return fn(obj)
    own = _own_method(obj, method)
    if own is not None:
        return own(*method_args)
    parts = _split(obj)
    if parts is None:
        return obj
    children, rebuild = parts
    return rebuild([map_tensors(child, fn, method=method, method_args=method_args) for child in children])


def iter_tensors(obj: Any) -> Iterator[Tensor]:
    """The tensors in ``obj``, depth first in container order.

    Recurses like :func:`map_tensors`. A tensor that appears twice is yielded twice.
    """
    if isinstance(obj, Tensor):
        yield obj
        return
    for child in _children(obj):
        yield from iter_tensors(child)


def sum_tensors(obj: Any, fn: Callable[[Tensor], int], *, method: str | None = None) -> int:
    """The sum of ``fn(t)`` over the tensors ``t`` in ``obj`` (recursing like :func:`iter_tensors`).

    With ``method``, an object that has that method contributes ``int(getattr(obj, method)())`` instead of being
    walked, e.g. ``sum_tensors(cache, tensor_nbytes, method="nbytes")``.
    """
    if isinstance(obj, Tensor):
        return int(fn(obj))
    own = _own_method(obj, method)
    if own is not None:
        return int(own())
    return sum(sum_tensors(child, fn, method=method) for child in _children(obj))
