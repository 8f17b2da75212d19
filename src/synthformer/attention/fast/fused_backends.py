"""The other implementations of the fused path's per-block row work: a C++/OpenMP kernel and ``torch.compile``.

:class:`~synthformer.attention.fast.fused.FusedAttention` leaves a block's elementwise and row work to two functions
(the GEMMs stay in torch):

- ``probs_(logits, mask, keep, scale)``: ``dropout(softmax(mask(logits)))`` of a (s, h, T, S) block, in place
  in ``logits`` when it may be, returning the probabilities;
- ``grads_(logits, mask, p, dp, delta, keep, scale)``: recomputes P from the block's logits, writes what
  multiplied V in the forward (``P * keep * scale``) into ``p`` and ``dS = P * (dP * keep * scale - delta)``
  into ``dp``; returns ``(dropped P, dS)``.

``fused.block_probs_`` and ``fused.block_grads_`` are the plain PyTorch ones ("torch"); this module builds the
others, each returning None for a block it does not serve (the fused path then runs the torch function):

- "cpp": ``csrc/fused_block.cpp``, one pass per row in L1 instead of several passes over the block. Built by
  ``torch.utils.cpp_extension.load`` the first time the backend is asked for (never at import), into torch's
  extensions directory (``TORCH_EXTENSIONS_DIR``, by default ``~/.cache/torch_extensions``), where later
  processes find it. ``-march=native``, so the CPU's flags are part of the build's name. float32 and float64
  only: other dtypes (bf16 under autocast) and other devices run the torch functions.
- "compile": the torch functions rewritten without data-dependent branches and compiled with ``torch.compile``
  (``dynamic=True``: one graph serves every block and chunk shape) on first call.

When a backend cannot be had (no compiler, no ninja, a failed build or compilation), one warning is logged and
the torch functions run instead. The fused path counts every block under the backend that really served it
(``fused.backend_calls``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor
from torch.fx.experimental import _config as fx_config

logger = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("csrc") / "fused_block.cpp"
#: -fno-trapping-math lets GCC vectorize the floor of the exp's range reduction; -ffp-contract=fast its FMAs
#: (ISO C++ mode turns contraction off). One binary serves forward and backward, so P stays bitwise the same.
CFLAGS = ["-O3", "-fopenmp", "-march=native", "-fno-trapping-math", "-ffp-contract=fast"]

#: graphs per compiled function before the compile backend gives up (one warning, then the torch path)
RECOMPILE_LIMIT = 64

_lock = threading.Lock()
#: backend name -> its (probs_, grads_) pair, or None once it failed (the warning is logged once)
_loaded: dict[str, tuple[Callable, Callable] | None] = {}


def kernels(name: str) -> tuple[Callable, Callable] | None:
    """The (probs_, grads_) functions of backend ``name`` ("cpp" or "compile"): built on first use; None when
    that fails. Each returns None for a block it does not serve."""
    with _lock:
        if name not in _loaded:
            _loaded[name] = _load_cpp() if name == "cpp" else _compiled()
    return _loaded[name]


def _warn(backend: str, why: str) -> None:
    message = "synthformer fused attention: the %s backend is unavailable (%s); using the PyTorch path"
    logger.warning(message, backend, why)


# ----------------------------------------------------------------------------------------------- C++ / OpenMP


def _build_name() -> str:
    """The extension's name: the source, the flags and this CPU's flags (``-march=native``) hashed together."""
    digest = hashlib.sha256(SOURCE.read_bytes())
    digest.update(" ".join(CFLAGS).encode())
    digest.update(torch.__version__.encode())
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            flags = next((line for line in cpuinfo if line.startswith("flags")), "")
    except OSError:  # not Linux: the machine's name is the best we have
        flags = os.uname().machine if hasattr(os, "uname") else ""
    digest.update(flags.encode())
    return f"synthformer_fused_block_{digest.hexdigest()[:12]}"


def _build_cpp() -> None:
    """Compile (or find already compiled) the kernel and register its ops as ``torch.ops.synthformer_fused``."""
    from torch.utils import cpp_extension  # imported here: it is slow to import and only the build needs it

    cpp_extension.load(
        name=_build_name(), sources=[str(SOURCE)], extra_cflags=CFLAGS, is_python_module=False, verbose=False
    )


def _missing_tool() -> str | None:
    """What the build needs and this machine lacks (a C++ compiler, ninja), or None."""
    from torch.utils import cpp_extension

    compiler = os.environ.get("CXX", "c++")
    if shutil.which(compiler) is None:
        return f"no C++ compiler ({compiler!r} not found)"
    if not cpp_extension.is_ninja_available():
        return "ninja is not installed (pip install ninja)"
    return None


def _load_cpp() -> tuple[Callable, Callable] | None:
    try:
        _build_cpp()
    except Exception as err:  # noqa: BLE001 - any failure of the build means: run the PyTorch path
        first = str(err).strip().splitlines()[:1]
        _warn("cpp", _missing_tool() or f"the build failed: {type(err).__name__}: {first[0] if first else ''}")
        return None
    ops = torch.ops.synthformer_fused
    supported = (torch.float32, torch.float64)

    def probs_(logits: Tensor, mask: Tensor | None, keep: Tensor | None, scale: float) -> Tensor | None:
        if logits.device.type != "cpu" or logits.dtype not in supported:
            return None
        if logits.stride(-1) != 1:  # D's logits are a transposed view: rows must be contiguous for the kernel
            logits = logits.contiguous()
        return ops.probs_(logits, mask, keep, scale)

    def grads_(logits, mask, p, dp, delta, keep, scale) -> tuple[Tensor, Tensor] | None:
        if logits.device.type != "cpu" or {logits.dtype, p.dtype, dp.dtype, delta.dtype} - set(supported):
            return None
        if len({logits.dtype, p.dtype, dp.dtype, delta.dtype}) > 1:  # the kernel reads one element type
            return None
        if logits.stride(-1) != 1:  # a transposed view: copied into p (torch's copy is blocked), read from there
            logits = p.copy_(logits)
        ops.grads_(logits, mask, p, dp, delta, keep, scale)
        return p, dp

    return probs_, grads_


# ----------------------------------------------------------------------------------------------- torch.compile


def _probs_math(logits: Tensor, mask: Tensor | None, keep: Tensor | None, scale: float) -> Tensor:
    """``dropout(softmax(mask(logits)))`` without data-dependent branches (fully masked rows zeroed by a where)."""
    if mask is not None:
        logits = logits.masked_fill(mask, torch.finfo(logits.dtype).min)
    probs = torch.softmax(logits, -1)
    if mask is not None:
        probs = probs.masked_fill(mask.all(-1, keepdim=True), 0.0)
    return probs if keep is None else probs * keep * scale


def _probs_into(out: Tensor, logits: Tensor, mask: Tensor | None, keep: Tensor | None, scale: float) -> None:
    """``out <- dropout(softmax(mask(logits)))``; compiled, the store goes straight into ``out``.

    Not in place: inductor (torch 2.13) fails to compile a softmax written back into its own input
    (``KeyError: 'buf1'`` in its scheduler), so the forward pays a new (s, h, T, S) buffer per block.
    """
    out.copy_(_probs_math(logits, mask, keep, scale))


def _grads_into(logits: Tensor, mask: Tensor | None, p: Tensor, dp: Tensor, delta: Tensor, keep, scale) -> None:
    """``p <- P * keep * scale``, ``dp <- P * (dp * keep * scale - delta)``, P recomputed from ``logits``."""
    probs = _probs_math(logits, mask, None, scale)
    if keep is not None:
        factor = keep.to(dp.dtype) * scale  # d(dropped P) / dP (bool * float alone would be float32)
        dp.copy_(probs * (dp * factor - delta))
        p.copy_(probs * factor)
    else:
        dp.copy_(probs * (dp - delta))
        p.copy_(probs)


class _Compiler:
    """Functions under ``torch.compile``, each compiled on its first call. The first failure of any of them logs
    the one warning and turns them all off, so that a forward and its backward stay on one backend."""

    def __init__(self) -> None:
        self.compiled: dict[Callable, Callable] = {}
        self.broken = False

    def __call__(self, fn: Callable, *args) -> bool:
        """Run ``fn`` compiled; False when it could not (the caller then runs the torch path)."""
        if self.broken:
            return False
        try:
            if fn not in self.compiled:
                self.compiled[fn] = torch.compile(fn, dynamic=True, fullgraph=True)
            # Each variant (mask or none, dropout or none, dtype, a block or chunk of one sample, a view) is a
            # graph of its own; torch's default limit of 8 per function is reached by ordinary use. Raised for
            # these calls only, as is duck sizing (equal sizes made one symbol, a recompile when they part).
            with torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT), fx_config.patch(use_duck_shape=False):
                self.compiled[fn](*args)
            return True
        except Exception as err:  # noqa: BLE001 - a compiler missing or failing: run the PyTorch path
            self.broken = True
            first = str(err).strip().splitlines()[:1]
            _warn("compile", f"{type(err).__name__}: {first[0] if first else ''}")
            return False


def _compiled() -> tuple[Callable, Callable]:
    run = _Compiler()

    def probs_(logits: Tensor, mask: Tensor | None, keep: Tensor | None, scale: float) -> Tensor | None:
        out = torch.empty_like(logits, memory_format=torch.contiguous_format)
        return out if run(_probs_into, out, logits, mask, keep, scale) else None

    def grads_(logits, mask, p, dp, delta, keep, scale) -> tuple[Tensor, Tensor] | None:
        return (p, dp) if run(_grads_into, logits, mask, p, dp, delta, keep, scale) else None

    return probs_, grads_
