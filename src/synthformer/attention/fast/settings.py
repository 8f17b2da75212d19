"""Which fast path the attention shell takes, and the thresholds it decides by: one explicit setting.

The choice between exact paths (``rules``, ``fused``, ``triton_kernels``) depends on measured thresholds,
and tests and benchmarks need to force a path or shrink a threshold to reach a branch at a small size. Those
knobs live in one frozen :class:`FastPathSettings`, read through :func:`current` and changed only for the
extent of a ``with`` block::

    with fast_path_settings(fused="never", chunk_elements=1):
        y = attn(x)

The value is held in a :class:`contextvars.ContextVar`, not a module global: a setting made in one thread (or
asyncio task) is not seen by another, and it is undone when its block ends, even on an exception. Threads
started inside a block start from the defaults (a new thread gets a fresh context), so a worker that should
share a setting has to enter its own block. The defaults are the measured choices (each field's reason: see
:class:`FastPathSettings`); no path changes the result (every path computes the same function, tests compare
them), only the speed and the memory.

What the backward pass of the fused path needs (the block backend, the causal query chunk) is fixed when its
forward runs, so a backward outside the block still uses the forward's choice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from ..sdpa import WIDTH_MULTIPLE
from .calibration import load_calibration
from .cpu_caches import default_chunk_elements

__all__ = ["DEFAULTS", "FUSED_BACKENDS", "FastPathSettings", "current", "fast_path_settings"]

#: What can run a fused block's softmax, dropout and dS (see ``fused`` and ``fused_backends``).
FUSED_BACKENDS = ("torch", "cpp", "compile")
_FUSED_MODES = ("auto", "always", "never")
_TRITON_MODES = ("auto", "always", "never")
_FEATURE_BRANCHES = ("auto", "blocks", "sdpa")


@dataclass(frozen=True)
class FastPathSettings:
    """The fast-path choices of :class:`~synthformer.attention.SynthesizerAttention`: which path may serve a call
    and the thresholds and sizes each decides by; the defaults are the measured choices, and why each is what it
    is, field by field, is in docs/benchmarks.md, "The fast-path settings, field by field"."""

    #: "auto" (fused from the lengths where it measured faster, ``fused.should_fuse``), "always" or "never"
    fused: str = "auto"
    #: what runs a fused block's softmax, dropout and dS: "torch", "cpp" (C++/OpenMP) or "compile"
    #: (``fused_backends``)
    backend: str = "torch"
    #: "auto" (the Triton kernels serve CUDA tensors when ``triton`` is installed), "always" (any device; the tests
    #: run them on the CPU under ``TRITON_INTERPRET=1``) or "never"
    triton: str = "auto"
    #: the feature form's branch: "auto" (by width and length), "blocks" (every feature kind, V included) or "sdpa"
    features: str = "auto"
    #: in "auto" mode, training calls over at least this many keys are fused
    fuse_min_keys: int = 1024
    #: the same for causal layers
    fuse_min_keys_causal: int = 256
    #: query rows per chunk of a causal fused layer (and of ``causal_shared``)
    causal_chunk: int = 128
    #: the "torch" backend analyses each causal query chunk's mask once per forward (``fused.ChunkMask``); False
    #: runs the previous code, bitwise the same probabilities (kept for A/B benchmarks)
    causal_diagonal_mask: bool = True
    #: from this length on, a causal input-independent kind without padding trains through ``causal_shared``
    causal_shared_min_len: int = 256
    #: logits processed at once by the materialized paths (``samples * heads * T * S``, at least one head of one
    #: sample); the default from this CPU's last-level cache (``cpu_caches.default_chunk_elements``)
    chunk_elements: int = dataclasses.field(default_factory=default_chunk_elements)
    #: (samples, heads) per materialized block, overriding the size derived from ``chunk_elements``; None derives it
    block_size: tuple[int, int] | None = None
    #: from this length on, FR without padding goes through SDPA instead of a materialized P
    fr_sdpa_min_len: int = 2048
    #: decoding steps with at most this many new positions take the reference path
    decode_plain_max_new: int = 16
    #: feature widths are zero-padded to a multiple of this for SDPA (zeros change no dot product)
    width_multiple: int = WIDTH_MULTIPLE
    #: feature kinds whose q/k width differs from the values' take the materialized blocks up to this length when
    #: gradients are recorded, SDPA beyond
    features_materialize_max_len: int = 1024
    #: the same without gradients (inference)
    features_materialize_max_len_no_grad: int = 512

    def __post_init__(self) -> None:
        if self.fused not in _FUSED_MODES:
            raise ValueError(f"fused mode must be 'auto', 'always' or 'never', got {self.fused!r}")
        if self.backend not in FUSED_BACKENDS:
            raise ValueError(f"fused backend must be one of {FUSED_BACKENDS}, got {self.backend!r}")
        if self.triton not in _TRITON_MODES:
            raise ValueError(f"triton must be one of {_TRITON_MODES}, got {self.triton!r}")
        if self.features not in _FEATURE_BRANCHES:
            raise ValueError(f"features must be one of {_FEATURE_BRANCHES}, got {self.features!r}")
        positive = ("causal_chunk", "chunk_elements", "width_multiple")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)!r}")
        for name in ("fuse_min_keys", "fuse_min_keys_causal", "fr_sdpa_min_len", "decode_plain_max_new",
                     "causal_shared_min_len"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be at least 0, got {getattr(self, name)!r}")
        if self.block_size is not None and (len(self.block_size) != 2 or min(self.block_size) < 1):
            raise ValueError(f"block_size must be (samples, heads), each at least 1, got {self.block_size!r}")


#: The defaults (frozen: shared safely by every context): the measured values, with this machine's calibrated
#: thresholds where ``synthformer bench --calibrate`` stored some (``calibration``).
DEFAULTS = FastPathSettings(**load_calibration())
_CURRENT: ContextVar[FastPathSettings] = ContextVar("synthformer_fast_path_settings", default=DEFAULTS)


def current() -> FastPathSettings:
    """The settings in force in this thread or task (the defaults outside any :func:`fast_path_settings`)."""
    return _CURRENT.get()


@contextmanager
def fast_path_settings(**changes) -> Iterator[FastPathSettings]:
    """Run the enclosed code with the fields ``changes`` replaced in the current settings; yields the new ones.

    Nested blocks start from the enclosing block's settings. An unknown field name raises ``TypeError`` and an
    invalid value ``ValueError``, before anything changes.
    """
    settings = dataclasses.replace(_CURRENT.get(), **changes)
    token = _CURRENT.set(settings)
    try:
        yield settings
    finally:
        _CURRENT.reset(token)
