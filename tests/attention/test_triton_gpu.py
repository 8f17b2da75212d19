"""The Triton kernels compiled for a GPU (not interpreted) against the PyTorch path, forward and gradients.

Runs only where CUDA and ``triton`` are present and this process has not loaded the kernels under the
interpreter: ``tests/attention/test_triton.py`` sets ``TRITON_INTERPRET=1`` at import, so on a GPU machine run this
file alone (``python -m pytest -n 0 tests/attention/test_triton_gpu.py``). CI has no GPU: there it skips, and the
interpreter tests of ``test_triton.py`` cover the kernels' arithmetic; this file covers what only a compiler
checks (globals, constexprs, shapes of ``tl.dot``) and the hardware's fp32 and bf16 arithmetic.

Shapes: L = 80 and 77 (two full 32-blocks and a partial one), d_model 64, 4 heads (d_h 16). Tolerances: fp32 at
PyTorch's default matmul precision ("highest": the kernels then multiply in IEEE fp32) 1e-4 absolute on unit-scale
outputs and gradients (summation order differs); bf16 autocast 3e-2, a few bf16 ulps (both paths round the same
inputs to bf16; the kernels accumulate in fp32).
"""

from __future__ import annotations

import os

import pytest
import torch

pytest.importorskip("triton", reason="triton is not installed: it is in the gpu extra "
                    "(pip install -e '.[gpu]'; CUDA builds of torch bring it)")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: the compiled kernels need a GPU", allow_module_level=True)
if os.environ.get("TRITON_INTERPRET") == "1":
    pytest.skip("TRITON_INTERPRET=1 in this process (test_triton.py sets it): run this file alone",
                allow_module_level=True)

from synthformer.attention import SynthesizerAttention, paths  # noqa: E402
from synthformer.attention.fast.settings import fast_path_settings  # noqa: E402

from .test_fused import FUSED_KINDS  # noqa: E402

D_MODEL, HEADS, MAX_LEN = 64, 4, 80
CUDA = torch.device("cuda")


def _layer(kind: str, causal: bool) -> SynthesizerAttention:
    torch.manual_seed(0)
    attn = SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind=kind, causal=causal).to(CUDA)
    with torch.no_grad():  # move every mixture weight off 1/N so each part's share matters
        for name, p in attn.named_parameters():
            if name.endswith("alpha_logits"):
                p.copy_(torch.randn_like(p))
    return attn.eval()


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("length", [MAX_LEN, MAX_LEN - 3], ids=["max_len", "shorter"])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("kind", FUSED_KINDS)
def test_compiled_kernels_equal_the_plain_path(kind, causal, length, dtype):
    attn = _layer(kind, causal)
    x = torch.randn(3, length, D_MODEL, device=CUDA, requires_grad=True)
    mask = torch.zeros(3, length, dtype=torch.bool, device=CUDA)
    mask[1, length // 2:] = True  # right padding
    mask[2, : length // 2] = True  # left padding: fully masked first rows in causal layers
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=dtype == "bf16")
    paths.reset_path_calls()
    with fast_path_settings(triton="always"), autocast:
        y = attn(x, mask)
    assert paths.path_calls()["triton"] == 1
    attn.use_fast_paths = False
    with autocast:
        want = attn(x, mask)
    tol = 1e-4 if dtype == "fp32" else 3e-2
    torch.testing.assert_close(y.float(), want.float(), atol=tol, rtol=0)
    w = torch.randn_like(y)
    params = [x, *[p for p in attn.parameters() if p.requires_grad]]
    got = torch.autograd.grad((y.float() * w.float()).sum(), params, allow_unused=True)
    ref = torch.autograd.grad((want.float() * w.float()).sum(), params, allow_unused=True)
    for a, b in zip(got, ref, strict=True):
        if a is None or b is None:
            assert (a is None or not a.any()) and (b is None or not b.any())
        else:
            scale = max(1.0, b.abs().max().item())  # parameter gradients summed over the batch grow past 1
            torch.testing.assert_close(a.float(), b.float(), atol=tol * scale, rtol=0)
