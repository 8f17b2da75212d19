"""The Triton kernels (``attention.triton_kernels``) against the plain path, forward and gradients, every
materialized kind, masks and shorter lengths, run on the CPU by Triton's interpreter (``TRITON_INTERPRET=1``).

Skipped when ``triton`` is not installed (it is in the ``gpu`` extra, which CI installs for these tests).
Tolerance: the kernels accumulate in fp32, so the comparison is in fp32, 2e-5 absolute on outputs and gradients of
unit scale.
"""

from __future__ import annotations

import os

import pytest
import torch

os.environ["TRITON_INTERPRET"] = "1"  # read when the kernels are defined, on first use
pytest.importorskip("triton", reason="triton is not installed: it is in the gpu extra "
                    "(pip install -e '.[gpu]'); CI installs it to run these tests under its interpreter")

from synthformer.attention import paths  # noqa: E402
from synthformer.attention.fast import triton_kernels  # noqa: E402
from synthformer.attention.fast.settings import fast_path_settings  # noqa: E402

from .conftest import D_MODEL, MAX_LEN, build, padding  # noqa: E402
from .test_fused import FUSED_KINDS  # noqa: E402


def _assert_matches_the_reference(attn, x, mask, y) -> None:
    """``y`` (the Triton path's output) equals the reference path's, and so do the gradients of x and the weights."""
    attn.use_fast_paths = False
    want = attn(x, mask)
    torch.testing.assert_close(y, want, atol=2e-5, rtol=0)
    w = torch.randn_like(y)
    params = [x, *[p for p in attn.parameters() if p.requires_grad]]
    got = torch.autograd.grad((y * w).sum(), params, allow_unused=True)
    ref = torch.autograd.grad((want * w).sum(), params, allow_unused=True)
    for a, b in zip(got, ref, strict=True):
        if a is None or b is None:
            assert (a is None or not a.any()) and (b is None or not b.any())
        else:
            torch.testing.assert_close(a, b, atol=2e-5, rtol=0)


@pytest.mark.parametrize("length", [MAX_LEN, MAX_LEN - 3], ids=["max_len", "shorter"])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("kind", FUSED_KINDS)
def test_triton_kernels_equal_the_plain_path(kind, causal, length):
    attn = build(kind, causal=causal, dtype=torch.float32)
    x = torch.randn(3, length, D_MODEL, requires_grad=True)
    mask = padding(3, length)
    mask[0, 0] = True  # a fully masked first row in causal layers
    paths.reset_path_calls()
    with fast_path_settings(triton="always"):
        y = attn(x, mask)
    assert paths.path_calls()["triton"] == 1 and paths.path_calls()["fused"] == 0 and paths.path_calls()["blocks"] == 0
    _assert_matches_the_reference(attn, x, mask, y)


@pytest.mark.parametrize("head_dim", [3, 8])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("kind", FUSED_KINDS)
def test_triton_kernels_with_a_head_dim(kind, causal, head_dim):
    """Heads of their own width (``head_dim``: 3, not a power of two, and 8, above d / H = 4): the kernels see only
    the factors and the values, whatever d_model is, and give the plain path's output and gradients."""
    attn = build(kind, causal=causal, dtype=torch.float32, head_dim=head_dim)
    x = torch.randn(3, MAX_LEN, D_MODEL, requires_grad=True)
    mask = padding(3, MAX_LEN)
    paths.reset_path_calls()
    with fast_path_settings(triton="always"):
        y = attn(x, mask)
    assert paths.path_calls()["triton"] == 1, paths.path_calls()
    _assert_matches_the_reference(attn, x, mask, y)


def test_dropout_and_the_cpu_stay_on_the_pytorch_paths():
    attn = build("D+V", dtype=torch.float32)
    attn.dropout = 0.1
    attn.train()
    x = torch.randn(2, MAX_LEN, D_MODEL)
    paths.reset_path_calls()
    with fast_path_settings(triton="always"):
        attn(x)  # the kernels have no dropout: the PyTorch path runs
    assert paths.path_calls()["triton"] == 0
    assert not triton_kernels.available(torch.device("cpu"))


def test_the_kernels_read_only_constexpr_globals():
    """Compiled Triton (3.x) refuses a kernel that reads a module global that is not a ``tl.constexpr`` ("Cannot
    access global variable BLOCK_M", found on an H100 with Triton 3.6); the interpreter these tests run on does not
    check it, so the rule is checked here: every global name a kernel reads is a constexpr, a module or a kernel."""
    import types

    import triton.language as tl
    from triton.runtime.jit import KernelInterface  # compiled (JITFunction) and interpreted kernels alike

    from synthformer.attention.fast import _triton_code

    kernels = {name: obj for name, obj in vars(_triton_code).items() if isinstance(obj, KernelInterface)}
    assert kernels, "no @triton.jit kernel found in _triton_code"
    for name, kernel in kernels.items():
        for used in kernel.fn.__code__.co_names:
            value = vars(_triton_code).get(used)
            if value is None or isinstance(value, types.ModuleType | KernelInterface):
                continue  # an attribute name (tl.zeros' "zeros"), a builtin, a module or another kernel
            assert isinstance(value, tl.constexpr), f"kernel {name} reads global {used!r} = {value!r}, not a constexpr"


@pytest.mark.parametrize("setting, want", [("highest", "ieee"), ("high", "tf32"), ("medium", "tf32")])
def test_the_kernels_multiply_fp32_as_torch_is_set_to(setting, want):
    """Triton's ``tl.dot`` defaults to TF32 for fp32 blocks; the kernels follow PyTorch's fp32 matmul setting instead
    (exact "ieee" at PyTorch's default "highest"), so they are as exact as the path they replace."""
    from synthformer.attention.fast import _triton_code

    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision(setting)
        assert _triton_code.input_precision() == want
        v = torch.zeros(1, 1, 4, 4)
        assert _triton_code._meta(None, torch.zeros(1, 1, 4, 4), None, v, False)["PREC"] == want
    finally:
        torch.set_float32_matmul_precision(before)


@pytest.mark.parametrize("kind", FUSED_KINDS)
def test_the_kernels_get_one_dtype_for_q_and_k_under_autocast(kind, monkeypatch):
    """Under autocast a kind's query and key features can come in different dtypes (a bf16 linear against an fp32
    weight: D, GLU, Bottleneck; a side scaled by a mixture's fp32 weight: R+V, Fix+V) while ``tl.dot`` takes one
    dtype. Found on an H100 as a compile error ("Both operands must be same dtype"); the interpreter enforces the
    same rule, so the CPU's bf16 autocast reproduces it here. Only the dtypes are checked: the interpreter's bf16
    arithmetic is not the GPU's (its results differ wildly for every kind, bias-only ones too), so the values in
    bf16 are checked on a GPU by tests/attention/test_triton_gpu.py."""
    seen = []
    apply = triton_kernels.TritonAttention.apply

    def spy(q, k, bias, v, pad, causal):
        seen.append((None if q is None else q.dtype, None if k is None else k.dtype, v.dtype))
        return apply(q, k, bias, v, pad, causal)

    monkeypatch.setattr(triton_kernels.TritonAttention, "apply", spy)
    attn = build(kind, dtype=torch.float32)
    x = torch.randn(2, MAX_LEN, D_MODEL, requires_grad=True)
    with fast_path_settings(triton="always"), torch.autocast("cpu", dtype=torch.bfloat16):
        y = attn(x, padding(2, MAX_LEN))  # before the fix: InterpreterError "Both operands must be same dtype"
    (grad,) = torch.autograd.grad(y.float().sum(), x)  # the backward kernels' tl.dot calls too
    assert len(seen) == 1 and y.dtype == torch.bfloat16 and grad.shape == x.shape
    q_dtype, k_dtype, v_dtype = seen[0]
    assert q_dtype == k_dtype, f"{kind}: q {q_dtype} and k {k_dtype} reach the kernels"
    assert v_dtype == torch.bfloat16
