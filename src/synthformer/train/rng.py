"""Snapshots of the global random number generators, saved in checkpoints (one per process) so that a resumed
run draws the same dropout masks as an uninterrupted one."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch

__all__ = ["capture_rng_state", "restore_rng_state"]


def capture_rng_state() -> dict[str, Any]:
    """Snapshot the global RNGs (torch CPU, CUDA if present, python ``random``, numpy's legacy global RNG).

    The result holds only tensors and primitives so it can be saved and loaded with ``weights_only=True``.
    """
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": {
            "kind": str(kind),
            "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _as_tuple(x: Any) -> Any:
    # random.setstate needs tuples; some serialisers turn them into lists.
    return tuple(_as_tuple(v) for v in x) if isinstance(x, (list, tuple)) else x


def restore_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`capture_rng_state` captured."""
    torch.set_rng_state(state["torch"])
    random.setstate(_as_tuple(state["python"]))
    npst = state["numpy"]
    np.random.set_state(
        (npst["kind"], npst["keys"].numpy().astype(np.uint32), npst["pos"], npst["has_gauss"],
         npst["cached_gaussian"])
    )
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
