"""The Triton kernels compiled for a GPU target on the CPU (no GPU needed): what only the compiler checks.

The interpreter that ``test_triton.py`` runs the kernels on skips the compiler's own rules (that globals are
constexprs, the operand dtypes of ``tl.dot``, the block shapes a target's ``tl.dot`` accepts), and CI has no GPU;
both kinds of error were first seen on a lent H100. Triton compiles for a named target without a device
(``triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))``, the H100's sm_90, down to its binary), so
every kernel is compiled here for the argument dtypes the host code passes (``_triton_code.forward`` /
``backward``): q, k, v and dO in the layer's dtype (fp32, or bf16 under autocast), the log-sum-exp, delta and every
gradient buffer fp32, padding int8, with and without features and causality.

Runs in a subprocess: ``test_triton.py`` sets ``TRITON_INTERPRET=1`` for the whole process, which turns the
kernels into interpreted functions that cannot be compiled. About 10 s (3 kernels x 2 dtypes x 2 variants).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

# found, not imported: importing triton here, before test_triton.py sets TRITON_INTERPRET=1, would leave that
# module's kernels compiled instead of interpreted when both files run in one process
if importlib.util.find_spec("triton") is None:
    pytest.skip("triton is not installed: it is in the gpu extra (pip install -e '.[gpu]', Linux x86-64); "
                "CI installs it for these tests", allow_module_level=True)

_SCRIPT = textwrap.dedent('''
    import inspect
    import itertools

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from synthformer.attention.fast import _triton_code as code

    FP32_BUFFERS = {"LSE", "DELTA", "DK", "DV_OUT", "DBIAS", "DQ"}  # allocated fp32 by forward() / backward()
    SIZES = ("H", "T", "S", "E", "DV")

    def source(kernel, dtype, has_qk, has_bias, causal):
        names = list(inspect.signature(kernel.fn).parameters)
        constants = {"EP": 32, "DP": 16, "HAS_QK": has_qk, "HAS_BIAS": has_bias, "HAS_PAD": True,
                     "CAUSAL": causal, "PREC": "ieee" if dtype == "fp32" else "tf32"}
        signature = {}
        for name in names:
            if name in ("Q", "K", "BIAS", "V", "O", "DO"):
                signature[name] = "*" + dtype
            elif name == "PAD":
                signature[name] = "*i8"
            elif name in FP32_BUFFERS:
                signature[name] = "*fp32"
            elif name in constants:
                signature[name] = "constexpr"
            else:
                assert name in SIZES or name.islower(), name  # sizes and strides
                signature[name] = "i32"
        return ASTSource(fn=kernel, signature=signature,
                         constexprs={(names.index(n),): v for n, v in constants.items() if n in names})

    kernels = (code._forward_kernel, code._dkdv_kernel, code._dq_kernel)
    variants = ((False, True, False), (True, True, True))  # bias only; features and bias, causal
    for kernel, dtype, (has_qk, has_bias, causal) in itertools.product(kernels, ("fp32", "bf16"), variants):
        triton.compile(source(kernel, dtype, has_qk, has_bias, causal), target=GPUTarget("cuda", 90, 32))
        print("compiled", kernel.fn.__name__, dtype, has_qk, has_bias, causal)
''')


def test_every_kernel_compiles_for_an_h100_target(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path)  # compile for real, not from an earlier run's cache
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("compiled") == 12, done.stdout
