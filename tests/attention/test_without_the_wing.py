"""attention/ without its speed wing (attention/fast/): every kind runs on the shell's own two paths, the reference
and SDPA, and computes what it computes with the wing.

In a fresh process, with the wing disabled (``SYNTHFORMER_FAST_PATHS=0``) or missing (its import refused), the
library is imported and every registered kind (and a few mixtures) runs a training step (forward + backward), an
evaluation forward and, causal, a decoding step, with and without padding, in float64; the process reports the
registered paths, the paths that served its calls and every output and gradient. This process, with the wing,
runs the same and compares: with the wing's own paths serving some of the calls (the default settings, then the
fused and causal-shared paths forced), the results agree to float64 rounding.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import synthformer
from synthformer.attention import SynthesizerAttention, observe_paths, registered_kinds

ROOT = Path(__file__).resolve().parents[2]
#: The kinds run: every registered one and mixtures that combine the paths (shared + feature, feature + feature).
KINDS = [*registered_kinds(), "R+V", "D+V", "FR+D"]
#: The paths that are attention/'s own, outside the wing.
CORE_PATHS = {"reference", "sdpa"}
D_MODEL, HEADS, LENGTH, BATCH = 16, 2, 12, 2

_SCRIPT = """
import os, sys
mode, out = sys.argv[1], sys.argv[2]
if mode == "missing":
    sys.modules["synthformer.attention.fast"] = None  # its import raises ModuleNotFoundError, as if deleted
else:
    os.environ["SYNTHFORMER_FAST_PATHS"] = "0"
import torch
import synthformer
from synthformer.attention import registered_paths
from tests.attention.test_without_the_wing import run_every_kind
results, used = run_every_kind()
wing = sys.modules.get("synthformer.attention.fast")
torch.save({"file": synthformer.__file__, "paths": registered_paths(), "used": sorted(used), "results": results,
            "wing_enabled": None if wing is None else wing.ENABLED}, out)
"""


def run_every_kind() -> tuple[dict[str, dict[str, torch.Tensor]], set[str]]:
    """For every kind of :data:`KINDS`, causal and not, padded and not: the training step's output, input gradient
    and parameter gradients, the evaluation output and (causal) the decoding outputs, float64; and the names of
    the paths that served the calls."""
    used: set[str] = set()
    stop = observe_paths(lambda call, path: used.add(path.name))
    results = {}
    try:
        for kind in KINDS:
            for causal in (False, True):
                for padded in (False, True):
                    results[f"{kind}|causal={causal}|padded={padded}"] = _one_layer(kind, causal, padded)
    finally:
        stop()
    return results, used


def _one_layer(kind: str, causal: bool, padded: bool) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    layer = SynthesizerAttention(D_MODEL, HEADS, LENGTH, kind=kind, causal=causal).double()
    x = torch.randn(BATCH, LENGTH, D_MODEL, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(BATCH, LENGTH, D_MODEL, dtype=torch.float64)
    mask = None
    if padded:
        mask = torch.zeros(BATCH, LENGTH, dtype=torch.bool)
        mask[1, -4:] = True
    y = layer(x, key_padding_mask=mask)
    (y * weight).sum().backward()
    out = {"train": y.detach(), "grad x": x.grad}
    out.update({f"grad {name}": p.grad for name, p in layer.named_parameters() if p.grad is not None})
    layer.eval()
    with torch.no_grad():
        out["eval"] = layer(x, key_padding_mask=mask)
        if causal and not padded:
            cache = layer.init_cache(BATCH)
            out["prompt"], cache = layer(x[:, : LENGTH - 2], cache=cache)
            out["step"], _ = layer(x[:, LENGTH - 2 :], cache=cache)
    return out


@functools.cache
def _with_the_wing(forced: bool) -> tuple[dict[str, dict[str, torch.Tensor]], frozenset[str]]:
    from synthformer.attention.fast import fast_path_settings  # the wing's face: this process has it

    settings = {"fused": "always", "causal_shared_min_len": 0} if forced else {}
    with fast_path_settings(**settings):
        results, used = run_every_kind()
    return results, frozenset(used)


def _without_the_wing(mode: str, tmp_path: Path) -> dict:
    out = tmp_path / "results.pt"
    src = Path(synthformer.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(ROOT)])}
    env.pop("SYNTHFORMER_FAST_PATHS", None)
    done = subprocess.run([sys.executable, "-c", _SCRIPT, mode, str(out)], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return torch.load(out)


@pytest.mark.parametrize("mode", ["disabled", "missing"])
def test_without_the_wing_every_kind_runs_on_the_reference_and_sdpa_paths_with_the_same_results(mode, tmp_path):
    got = _without_the_wing(mode, tmp_path)
    assert Path(got["file"]).resolve() == Path(synthformer.__file__).resolve()  # the library under test
    assert got["wing_enabled"] is (False if mode == "disabled" else None)
    assert got["paths"] == ["sdpa", "reference"]
    assert set(got["used"]) == CORE_PATHS  # both serve some calls, nothing else does
    for forced in (False, True):
        want, used = _with_the_wing(forced)
        assert used - CORE_PATHS, used  # the wing served some of these calls: two different paths are compared
        if forced:
            assert {"fused", "causal_shared"} <= used, used
        assert got["results"].keys() == want.keys()
        for case, tensors in want.items():
            assert got["results"][case].keys() == tensors.keys(), case
            for name, value in tensors.items():
                torch.testing.assert_close(got["results"][case][name], value, atol=1e-10, rtol=1e-10,
                                           msg=lambda m, case=case, name=name: f"{case}, {name}: {m}")


def test_with_the_wing_its_paths_are_registered():
    """The other side of the test above: in this process (the wing loaded) the wing's paths are there, asked
    before the shell's own."""
    from synthformer.attention import registered_paths

    assert registered_paths()[-2:] == ["sdpa", "reference"] and len(registered_paths()) > 2
