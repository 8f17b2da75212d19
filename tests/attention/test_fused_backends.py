"""The fused path's block backends (``fast_path_settings(backend=...)``: "cpp", "compile") equal the reference and
the torch backend.

Each test forces the fused path and a backend and checks from ``fused.backend_calls()`` that the backend really
ran (a test that silently fell back to the torch functions would prove nothing). The C++ kernel is built once per
machine (cached by torch in its extensions directory; about 10 s the first time). ``torch.compile`` compiles a
graph per variant (mask or not, dropout or not, dtype): its tests are restricted to three kinds and one shape
so that they stay within a few seconds once compiled, the build being the larger part on a cold machine.
"""

from __future__ import annotations

import logging

import pytest
import torch

from synthformer.attention.fast import fused, fused_backends
from synthformer.attention.fast.settings import fast_path_settings

from . import test_fused
from .conftest import D_MODEL, MAX_LEN, build, padding
from .reference import reference_forward
from .test_fused import FUSED_KINDS, _assert_same, _grads

#: kinds run under torch.compile: a token-local kind, a shared-logits mixture, a three-factor mixture
COMPILE_KINDS = ["D", "R+V", "R+D+V"]
#: both backends need a C++ compiler (inductor's CPU code is C++), the extension also ninja; without them the
#: fallback is what there is to test (the two tests at the end)
_MISSING = fused_backends._missing_tool()
_toolchain = pytest.mark.skipif(_MISSING is not None, reason=f"no toolchain for the kernels: {_MISSING}")
#: every torch.compile test in one xdist worker: the compiled functions are cached per process (fused_backends'
#: ``_loaded``), so the first test compiles and the others reuse the graphs; spread over workers each compiled its
#: own (about 90 s of CPU in all, against about 10 s in one process)
_ONE_WORKER = pytest.mark.xdist_group("torch-compile")
CASES = [pytest.param("cpp", k, marks=_toolchain) for k in FUSED_KINDS] + [
    pytest.param("compile", k, marks=[_toolchain, _ONE_WORKER]) for k in COMPILE_KINDS
]


def _run(attn, backend: str, x: torch.Tensor, mask, weight: torch.Tensor | None = None, seed: int = 0):
    """Output and gradients (x, then every parameter) of ``attn`` on the fused path with ``backend``.

    The backward runs outside the ``backend`` context: the forward's choice must carry over to it. Asserts
    that every block of forward and backward ran on ``backend``.
    """
    fused.reset_backend_calls()
    torch.manual_seed(seed)  # the dropout seed of the call
    with fast_path_settings(fused="always", backend=backend):
        y = attn(x, mask)
    w = torch.randn_like(y) if weight is None else weight
    grads = _grads(y, w, [x, *attn.parameters()])
    others = [b for b in fused.BACKENDS if b != backend]
    assert fused.backend_calls()[backend] > 0, fused.backend_calls()
    assert all(fused.backend_calls()[b] == 0 for b in others), fused.backend_calls()
    return y, w, grads


@pytest.mark.parametrize(("backend", "kind"), CASES)
def test_backend_equals_the_reference_and_the_torch_backend_in_float64(backend, kind):
    """Causal in query chunks of 3 over one-sample, one-head blocks, padding and a fully masked row: dropout off
    against the paper's equations; dropout on against the torch backend with the same seed (the same masks)."""
    with fast_path_settings(chunk_elements=1, causal_chunk=3):
        _compare_with_reference_and_torch(backend, kind)


def _compare_with_reference_and_torch(backend: str, kind: str) -> None:
    attn = build(kind, causal=True)
    x = torch.randn(3, MAX_LEN - 1, D_MODEL, dtype=torch.float64, requires_grad=True)
    mask = padding(3, MAX_LEN - 1)
    mask[0, 0] = True  # a fully masked first row: zeros and finite gradients
    y, w, grads = _run(attn, backend, x, mask)
    want = reference_forward(attn, x, mask)
    torch.testing.assert_close(y, want, atol=1e-10, rtol=0)
    assert all(g is None or torch.isfinite(g).all() for g in grads)
    _assert_same(grads, _grads(want, w, [x, *attn.parameters()]), atol=1e-10)

    attn.dropout = 0.4
    attn.train()
    y, w, grads = _run(attn, backend, x, mask, seed=1)
    y_torch, _, grads_torch = _run(attn, "torch", x, mask, weight=w, seed=1)
    torch.testing.assert_close(y, y_torch, atol=1e-12, rtol=0)
    _assert_same(grads, grads_torch, atol=1e-12)


@_toolchain
@pytest.mark.parametrize(
    ("backend", "kind"), [("cpp", "FD"), ("cpp", "GLU"), pytest.param("compile", "D", marks=_ONE_WORKER)]
)
def test_gradcheck_through_each_backend(backend, kind):
    """test_fused's gradcheck (input and every trained parameter, causal, query chunks of 2) on ``backend``."""
    with fast_path_settings(backend=backend):
        test_fused.test_gradcheck_through_the_fused_backward(kind)  # imported by module: not collected twice
    ran = fused.backend_calls()
    assert ran[backend] > 0 and ran["torch"] == 0, ran


@_toolchain
@pytest.mark.parametrize("backend", ["cpp", pytest.param("compile", marks=_ONE_WORKER)])
def test_backends_in_float32_and_under_bf16_autocast(backend):
    """fp32: within 1e-5 of the torch backend (outputs of unit scale; the C++ exp is a polynomial of about one
    ulp). bf16 autocast: the kernels take float32/float64 only, so bf16 blocks run the torch functions."""
    torch.manual_seed(0)
    attn = build("D", dtype=torch.float32, seed=0)
    x = torch.randn(4, MAX_LEN, D_MODEL, requires_grad=True)
    mask = padding(4, MAX_LEN)
    y, w, grads = _run(attn, backend, x, mask)
    y_torch, _, grads_torch = _run(attn, "torch", x, mask, weight=w)
    assert (y - y_torch).abs().max().item() < 1e-5
    assert all((a - b).abs().max().item() < 1e-4 for a, b in zip(grads, grads_torch, strict=True) if a is not None)
    if backend == "cpp":
        fused.reset_backend_calls()
        with torch.autocast("cpu", dtype=torch.bfloat16), fast_path_settings(fused="always", backend="cpp"):
            y16 = attn(x, mask)
        ran = fused.backend_calls()
        assert y16.dtype == torch.bfloat16 and ran["torch"] > 0 and ran["cpp"] == 0
        assert (y16.float() - y_torch).abs().max().item() < 3e-2


def _fresh(monkeypatch) -> None:
    """Forget the backends already loaded, so that the next use loads (and may fail) again."""
    monkeypatch.setattr(fused_backends, "_loaded", {})


def test_a_failing_cpp_build_warns_once_and_runs_the_torch_path(monkeypatch, caplog):
    def no_build() -> None:
        raise RuntimeError("Error building extension: c++: command not found")

    _fresh(monkeypatch)
    monkeypatch.setattr(fused_backends, "_build_cpp", no_build)
    monkeypatch.setenv("CXX", "no-such-compiler-here")
    attn = build("D", causal=True)
    x = torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64, requires_grad=True)
    with caplog.at_level(logging.WARNING, logger=fused_backends.__name__):
        for _ in range(2):  # a second call neither rebuilds nor warns again
            fused.reset_backend_calls()
            with fast_path_settings(fused="always", backend="cpp"):
                y = attn(x)
            y.sum().backward()
            ran = fused.backend_calls()
            assert ran["torch"] > 0 and ran["cpp"] == 0, ran
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    message = warnings[0].getMessage()
    assert "cpp backend is unavailable" in message and "no C++ compiler" in message and "\n" not in message
    with fast_path_settings(fused="always"):
        torch.testing.assert_close(y, attn(x), atol=0, rtol=0)  # bitwise the torch backend


def test_a_failing_compile_warns_once_and_runs_the_torch_path(monkeypatch, caplog):
    def no_compile(*args, **kwargs):
        raise RuntimeError("InductorError: no working C++ compiler found")

    _fresh(monkeypatch)
    monkeypatch.setattr(fused_backends.torch, "compile", no_compile)
    attn = build("R+V")
    x = torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64, requires_grad=True)
    with caplog.at_level(logging.WARNING, logger=fused_backends.__name__):
        for _ in range(2):
            fused.reset_backend_calls()
            with fast_path_settings(fused="always", backend="compile"):
                attn(x).sum().backward()
            ran = fused.backend_calls()
            assert ran["torch"] > 0 and ran["compile"] == 0, ran
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "compile backend is unavailable" in warnings[0].getMessage()


def test_the_package_builds_nothing_at_import():
    """Importing synthformer (and its fused path) loads no backend: the build waits for the first use."""
    import subprocess
    import sys

    code = (
        "import sys, synthformer.attention, synthformer.models\n"
        "assert 'synthformer.attention.fast.fused_backends' not in sys.modules\n"
        "assert 'torch.utils.cpp_extension' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_backend_rejects_unknown_names():
    with pytest.raises(ValueError, match="fused backend must be one of"), fast_path_settings(backend="cuda"):
        pass
