"""Which fast path the attention shell takes, and the thresholds it decides by: one explicit setting.

The choice between exact paths (``fast_paths``, ``fused``, ``triton_kernels``) depends on measured thresholds,
and tests and benchmarks need to force a path or shrink a threshold to reach a branch at a small size. Those
knobs live in one frozen :class:`FastPathSettings`, read through :func:`current` and changed only for the
extent of a ``with`` block::

    with fast_path_settings(fused="never", chunk_elements=1):
        y = attn(x)

The value is held in a :class:`contextvars.ContextVar`, not a module global: a setting made in one thread (or
asyncio task) is not seen by another, and it is undone when its block ends, even on an exception. Threads
started inside a block start from the defaults (a new thread gets a fresh context), so a worker that should
share a setting has to enter its own block. The defaults are the measured choices, each field's reason below;
no path changes the result (every path computes the same function, tests compare them), only the speed and the
memory.

What the backward pass of the fused path needs (the block backend, the causal query chunk) is fixed when its
forward runs, so a backward outside the block still uses the forward's choice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

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
    """The fast-path choices of :class:`~synthformer.attention.SynthesizerAttention` (defaults: the measured ones).

    Each default is the choice a measurement made; docs/benchmarks.md says what each measurement showed ("Why the
    fast paths look the way they do" in section 1, and section 5, "The fused materialized path"). The length
    thresholds ``fuse_min_keys``, ``features_materialize_max_len`` and ``fr_sdpa_min_len`` can be lowered for this
    machine by ``synthformer bench --calibrate`` (``calibration``), which :data:`DEFAULTS` then carries.

    Attributes:
        fused: "auto" (the materialized blocks go through ``fused.FusedAttention`` from the lengths where it
            measured faster, ``fused.should_fuse``), "always" or "never".
        backend: what runs a fused block's softmax, dropout and dS: "torch" (``fused.block_probs_``,
            ``fused.block_grads_``), "cpp" (a C++/OpenMP kernel built on first use) or "compile"
            (``torch.compile``); see ``fused_backends``. "torch" stays the default because the row work the
            other two speed up is a small part of a step, and neither gained enough at both lengths measured
            (docs/benchmarks.md, "The backends of a fused block": ``benchmarks/results/bench_fused_backends.jsonl``).
        triton: "auto" (the Triton kernels of ``triton_kernels`` serve CUDA tensors when ``triton`` is
            installed), "always" (any device; the tests run them on the CPU under ``TRITON_INTERPRET=1``) or
            "never" (the PyTorch paths even on CUDA; benchmarks compare the two).
        features: the branch of the feature form (``feature_form``): "auto" (by width and length,
            ``features_materialize_max_len``), "blocks" (one GEMM over the features, materialized logits, for
            every feature kind, V included) or "sdpa" (PyTorch's fused kernel, widths zero-padded).
        fuse_min_keys: in "auto" mode, training calls over at least this many keys are fused: from there the
            (B, H, L, L) probabilities no longer stay in the caches between forward and backward, so recomputing
            them was as fast or faster than storing them and keeps no L x L tensor for the backward pass, while
            at shorter lengths the recomputation cost more than it saved (docs/benchmarks.md, section 5, "What
            was tried").
        fuse_min_keys_causal: the same for causal layers, which skip the chunks above the diagonal only on the
            fused path and so gain from shorter lengths (the same place).
        causal_chunk: query rows per chunk in causal fused layers (a chunk reads keys up to its last row;
            smaller chunks skip more of the upper triangle but run smaller GEMMs).
        causal_diagonal_mask: with the "torch" backend, analyse each causal query chunk's mask once per forward
            (``fused.ChunkMask``): fill only the chunk's diagonal square when padding masks none of the keys
            before it, and zero fully masked rows only in chunks that have some, instead of filling every key
            and searching for fully masked rows in every block and chunk. The same probabilities bitwise;
            False runs the previous code (kept for A/B benchmarks, ``benchmarks/causal_ab.py``).
        causal_shared_min_len: from this length on, a causal input-independent kind (R, Fix, FR below
            ``fr_sdpa_min_len``, their mixtures) without padding trains through ``causal_shared``: its shared
            probabilities computed and applied by query chunks of ``causal_chunk`` rows at and below the diagonal
            only, instead of the whole masked (H, L, L) matrix. A length above every input turns it off (the A/B
            of ``benchmarks/causal_ab.py``). The chunked step measured faster than the whole matrix at every
            length tried, more so the longer the sequence (docs/benchmarks.md, "Causal against bidirectional
            training").
        chunk_elements: the materialized paths process about this many logits at once (``samples * heads * T *
            S``, at least one head of one sample). The default comes from this CPU's last-level cache
            (``cpu_caches.default_chunk_elements``: a quarter of it, so that a block's logits, probabilities and
            their gradient fit it together): 2^21 fp32 logits (8 MiB) on a 32 MiB L3, where larger blocks
            measured slower (docs/benchmarks.md, "Why the fast paths look the way they do").
        block_size: (samples, heads) per materialized block, overriding the size derived from
            ``chunk_elements``; None (the default) derives it.
        fr_sdpa_min_len: from this length on, FR without padding goes through SDPA (no L x L matrix) instead of
            a materialized P, which measured faster up to L = 1024 (the same place).
        decode_plain_max_new: decoding steps with at most this many new positions use the plain path
            (broadcast, no copies of the cache), since the feature path measured far slower per token
            (docs/benchmarks.md, section 2, "Incremental decoding").
        width_multiple: feature widths are padded to a multiple of this for SDPA (zeros change no dot product).
        features_materialize_max_len: feature kinds whose q/k width differs from the values' (``D``: d_h + 1,
            ``D+V``: 2 d_h + 1, ``FR+V``, ``GLU``, ``Bottleneck``) run as one GEMM over the features with
            materialized logits, in cache-sized blocks, up to this length when gradients are recorded; the fused
            kernel would need all three zero-padded to one width, and the blocks measured faster up to here.
            Beyond it the fused kernel's O(L) memory is kept, since the blocks save every (L, L) probability for
            the backward pass (docs/benchmarks.md, "Why the fast paths look the way they do").
        features_materialize_max_len_no_grad: the same without gradients (inference), where the fused kernel has
            no backward pass to lose in and measured faster from a shorter length (the same place).
    """

    fused: str = "auto"
    backend: str = "torch"
    triton: str = "auto"
    features: str = "auto"
    fuse_min_keys: int = 1024
    fuse_min_keys_causal: int = 256
    causal_chunk: int = 128
    causal_diagonal_mask: bool = True
    causal_shared_min_len: int = 256
    chunk_elements: int = dataclasses.field(default_factory=default_chunk_elements)
    block_size: tuple[int, int] | None = None
    fr_sdpa_min_len: int = 2048
    decode_plain_max_new: int = 16
    width_multiple: int = 8
    features_materialize_max_len: int = 1024
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
