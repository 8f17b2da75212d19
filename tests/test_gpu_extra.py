"""GPU-only packages stay out of a CPU install: Triton (about 1 GB) is in the ``gpu`` extra, never in the extras the
README's quick start installs, and the library imports and runs without it (torch's FLOP counter, which
``synthformer.bench`` imports, imports triton only if it is there)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest itself depends on tomli there
    import tomli as tomllib

from .test_quickstart import README, _installed_extras, quickstart

ROOT = Path(__file__).resolve().parents[1]
#: Distributions only a GPU can use.
GPU_ONLY = {"triton"}


def _extras() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def _names(requirements: list[str]) -> set[str]:
    return {re.match(r"[A-Za-z0-9._-]+", r).group(0).lower() for r in requirements}


def test_the_quick_start_installs_no_gpu_only_package():
    extras = _extras()
    installed = _installed_extras(quickstart.extract(README.read_text()))
    pulled = {extra: _names(extras[extra]) & GPU_ONLY for extra in installed}
    assert not any(pulled.values()), f"the quick start's extras pull GPU-only packages: {pulled}"
    assert _names(extras["gpu"]) >= GPU_ONLY and "gpu" not in installed
    base = _names(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    assert not base & GPU_ONLY


def test_the_readme_names_the_gpu_extra():
    assert re.search(r"pip install -e \"\.\[dev,hf,gpu\]\"", README.read_text())


def test_the_library_imports_and_runs_without_triton():
    # sys.modules["triton"] = None makes "import triton" fail and find_spec("triton") return None, as on a machine
    # where it is not installed
    script = textwrap.dedent("""
        import sys
        sys.modules["triton"] = None
        import torch
        import synthformer, synthformer.bench, synthformer.bench.plan, synthformer.cli.main
        from synthformer import SynthesizerAttention
        from synthformer.attention.fast import triton_kernels
        from synthformer.bench.measure import count_flops
        attn = SynthesizerAttention(16, 2, 8, kind="D+V")
        x = torch.randn(2, 8, 16)
        assert attn(x).shape == (2, 8, 16)
        assert count_flops(lambda: attn(x)) > 0
        assert not triton_kernels.available(torch.device("cuda"))
        loaded = [m for m in sys.modules if m.split(".")[0] == "triton" and sys.modules[m] is not None]
        assert not loaded, loaded
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]
